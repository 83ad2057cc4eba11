// Internal: per-ISA entry points of the memory-bound kernels (norm, RoPE, SwiGLU, elementwise).
// Each entry point works on a contiguous range of rows/elements on the calling thread; the public
// wrappers (norm.cpp, rope.cpp, ...) split the work over OpenMP threads and pick the ISA with
// olmo::active_isa(). The same declarations are stamped into three namespaces:
//   isa_scalar (plain C++, baseline TU), isa_avx2 (*_avx2.cpp), isa_avx512 (*_avx512.cpp).
// Only <cstdint> here: the ISA TUs must not instantiate std:: templates or inline functions that
// could be ODR-merged into baseline code.
#pragma once
#include <cstdint>

#define OLMO_VEC_KERNEL_DECLS                                                                    \
  /* RMSNorm rows [n0, n1): y = w * (x * rstd); rstd[n] = 1/sqrt(mean(x^2) + eps). */            \
  void rmsnorm_fwd_rows(const float* x, const float* w, float* y, float* rstd, int64_t n0,       \
                        int64_t n1, int64_t D, float eps);                                       \
  /* RMSNorm backward rows [n0, n1): dx overwritten, dw_part[D] += dy * x * rstd. */            \
  void rmsnorm_bwd_rows(const float* dy, const float* x, const float* w, const float* rstd,      \
                        float* dx, float* dw_part, int64_t n0, int64_t n1, int64_t D);           \
  /* RoPE on `rows` head-vectors of width hd at x (stride hd), all at the same position:        \
     cs/sn are that position's cos/sin rows [hd/2]. sign=+1 forward, -1 transpose. */           \
  void rope_heads(float* x, int64_t heads, int64_t hd, const float* cs, const float* sn,        \
                  float sign);                                                                   \
  /* SwiGLU over [i0, i1). */                                                                    \
  void swiglu_fwd(const float* gate, const float* up, float* out, int64_t i0, int64_t i1);      \
  void swiglu_bwd(const float* gate, const float* up, const float* dout, float* dgate,          \
                  float* dup, int64_t i0, int64_t i1);                                           \
  /* Elementwise over [i0, i1). */                                                               \
  void add_inplace(float* y, const float* x, int64_t i0, int64_t i1);                            \
  void add(float* out, const float* a, const float* b, int64_t i0, int64_t i1);                 \
  void axpy(float* y, float a, const float* x, int64_t i0, int64_t i1);                          \
  void scale_inplace(float* y, float a, int64_t i0, int64_t i1);                                 \
  /* sum of squares over [i0, i1), accumulated in double per vector lane. */                     \
  double sum_squares(const float* x, int64_t i0, int64_t i1);

namespace olmo::kernels {
namespace isa_scalar { OLMO_VEC_KERNEL_DECLS }
namespace isa_avx2 { OLMO_VEC_KERNEL_DECLS }
namespace isa_avx512 { OLMO_VEC_KERNEL_DECLS }
}  // namespace olmo::kernels
