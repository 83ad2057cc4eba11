// The fixed-point kernel bodies of src/distributed (fixed_point_body.h, scaled_fixed_body.h) stamped for AVX512 into
// namespace olmo::dist::isa_avx512 (kernels/simd.h). CMake's olmo_isa_flags compiles files ending
// _avx512.cpp with that ISA's flags; fixed_point.cpp calls this copy only when olmo::active_isa()
// selects it (scaled_fixed.cpp likewise; OLMO_DISPATCH, kernels/dispatch.h).
#include "distributed/fixed_point_body.h"
#include "distributed/scaled_fixed_body.h"
