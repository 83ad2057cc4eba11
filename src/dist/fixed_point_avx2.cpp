// The fixed-point kernels (fixed_point_kernels.h) compiled for AVX2 (file-name suffix:
// CMake's olmo_isa_flags); called only after runtime CPU detection.
#include "dist/fixed_point_kernels.h"

namespace olmo::dist::isa_avx2 {
#define FX_VBYTES 32
#include "dist/fixed_point_body.h"
}  // namespace olmo::dist::isa_avx2
