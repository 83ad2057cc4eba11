// Internal: the bulk fixed-point kernels of dist/fixed_point.h on structure-of-arrays 128-bit
// integers (value = hi * 2^64 + lo, two's complement, hi and lo in separate uint64 arrays, so
// the loops vectorise). The bodies are written once (fixed_point_body.h) and stamped per ISA:
// isa_scalar (fixed_point.cpp), isa_avx2 (fixed_point_avx2.cpp), isa_avx512
// (fixed_point_avx512.cpp); fixed_point.cpp picks one with olmo::active_isa(). All are exact
// integer functions: every ISA gives the same bits.
#pragma once
#include <cstdint>

#define OLMO_FIXED_KERNEL_DECLS                                                                  \
  /* (lo, hi)[i] += round(x[i] * 2^88); returns nonzero if any |x| >= 2^28 or non-finite. */     \
  uint32_t fx_accumulate(uint64_t* lo, uint64_t* hi, const float* x, int64_t n);                 \
  /* (lo, hi)[i] = round(x[i] * 2^88); same flag. */                                             \
  uint32_t fx_convert(uint64_t* lo, uint64_t* hi, const float* x, int64_t n);                    \
  /* (lo, hi)[i] += (lo2, hi2)[i]. */                                                            \
  void fx_add(uint64_t* lo, uint64_t* hi, const uint64_t* lo2, const uint64_t* hi2, int64_t n); \
  /* out[i] = nearest float to (hi, lo)[i] * 2^-88 (one rounding). */                            \
  void fx_to_float(float* out, const uint64_t* lo, const uint64_t* hi, int64_t n);

namespace olmo::dist {
namespace isa_scalar { OLMO_FIXED_KERNEL_DECLS }
namespace isa_avx2 { OLMO_FIXED_KERNEL_DECLS }
namespace isa_avx512 { OLMO_FIXED_KERNEL_DECLS }
}  // namespace olmo::dist
