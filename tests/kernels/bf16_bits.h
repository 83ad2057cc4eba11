// Bit helpers for the bf16 arithmetic tests (header-only): fp32 from / to its bits, a bf16 value
// as fp32, and the flush to zero VDPBF16PS applies to denormal inputs (DAZ) and results (FTZ).
#pragma once
#include <cstdint>
#include <cstring>

namespace olmo::testing {

inline float f32(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
inline uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float bf(uint16_t h) { return f32(uint32_t(h) << 16); }
// Zero with the sign kept where the exponent field is 0 (DAZ on an input, FTZ on a result).
inline float flush(float x) {
  return (bits(x) & 0x7f800000u) == 0 ? f32(bits(x) & 0x80000000u) : x;
}

}  // namespace olmo::testing
