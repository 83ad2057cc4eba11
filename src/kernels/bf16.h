// bfloat16 storage and fp32 <-> bf16 conversion for the bf16_mixed precision (bf16 GEMM inputs,
// fp32 everything else; see model/olmo3.h).
//
// bf16 is the upper half of an IEEE fp32 (1 sign, 8 exponent, 7 mantissa bits), stored as
// uint16_t (bf16_t). fp32 -> bf16 rounds to nearest, ties to even, exactly as PyTorch's
// c10::BFloat16 (round_to_nearest_even): bits + 0x7fff + ((bits >> 16) & 1), upper 16 bits;
// NaN -> 0x7fc0 (a quiet NaN); denormals are kept (not flushed); values past the largest bf16
// round to +-inf. Relative rounding error <= u = 2^-8 (half the 2^-7 spacing of 8 significant
// bits). bf16 -> fp32 is exact (a shift).
//
// f32_to_bf16 / bf16_to_f32: n elements, OpenMP over blocks for large n, per-ISA loops
// (bf16_body.h: the same integer formula, stamped per ISA and vectorised by the compiler), so
// every path gives the same bits as the scalar reference. Cost: memory-bound, 6 bytes/element.
#pragma once
#include <cstdint>
#include <cstring>

namespace olmo::kernels {

using bf16_t = uint16_t;

// Reference conversions (one element; also what the fast paths compute).
inline bf16_t f32_to_bf16_ref(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  return bf16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float bf16_to_f32_ref(bf16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void f32_to_bf16(const float* x, bf16_t* y, int64_t n);
void bf16_to_f32(const bf16_t* x, float* y, int64_t n);
// f32_to_bf16 on the calling thread only, not profiled: for use inside a parallel region.
void f32_to_bf16_serial(const float* x, bf16_t* y, int64_t n);

// True when this CPU has native bf16 dot products (olmo::cpu_has_avx512_bf16(): VDPBF16PS) and
// the active ISA (OLMO_ISA / olmo::set_isa_override) is AVX-512. OLMO_BF16=0 or emulate in the
// environment reports false (to run the emulation on a CPU that has it); so does
// set_bf16_native_override(0)
// (for tests in one process: the AVX-512 kernels without VDPBF16PS; -1 back to the above).
bool cpu_has_bf16();
void set_bf16_native_override(int mode);

// True when OLMO_BF16=emulate is set and cpu_has_bf16() is false: bf16_mixed is then allowed
// (explicitly; auto never picks it) and runs the exact emulation of the native bf16 kernels
// (gemm_micro_bf16, attention_bf16_emu.cpp: the same bits), slower than fp32. For bf16_mixed
// on a CPU without native bf16 (and its checks: tests/model/bf16_parity.py, train_golden).
bool bf16_emulated();
// cpu_has_bf16() || bf16_emulated(): whether an explicit bf16_mixed may run.
bool bf16_usable();

}  // namespace olmo::kernels
