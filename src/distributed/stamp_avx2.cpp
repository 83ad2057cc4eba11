// The fixed-point kernel bodies of src/distributed (fixed_point_body.h, scaled_fixed_body.h) stamped for AVX2 into
// namespace olmo::dist::isa_avx2 (kernels/simd.h). CMake's olmo_isa_flags compiles files ending
// _avx2.cpp with that ISA's flags; fixed_point.cpp calls this copy only when olmo::active_isa()
// selects it (scaled_fixed.cpp likewise; OLMO_DISPATCH, kernels/dispatch.h).
#include "distributed/fixed_point_body.h"
#include "distributed/scaled_fixed_body.h"
