// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord framing
// (TensorBoard event files), and its "masked" form (rotate right 15, add 0xa282ead8) that
// TFRecord stores so that a CRC of data holding CRCs stays well distributed.
// Cost: table-driven, one table lookup per byte (event records are ~0.1-1 KB per step).
#pragma once
#include <cstddef>
#include <cstdint>

namespace olmo {

// CRC-32C of n bytes; `crc` continues a previous value (0 to start).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
uint32_t crc32c_mask(uint32_t crc);
uint32_t crc32c_unmask(uint32_t masked);

}  // namespace olmo
