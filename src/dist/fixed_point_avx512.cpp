// The fixed-point kernels (fixed_point_kernels.h) compiled for AVX512 (file-name suffix:
// CMake's olmo_isa_flags); called only after runtime CPU detection.
#include "dist/fixed_point_kernels.h"

namespace olmo::dist::isa_avx512 {
#define FX_VBYTES 64
#include "dist/fixed_point_body.h"
}  // namespace olmo::dist::isa_avx512
