// The fixed-point kernel bodies of src/distributed (scaled_fixed_body.h) stamped for AVX2 into
// namespace olmo::dist::isa_avx2 (kernels/simd.h). CMake's olmo_isa_flags compiles files ending
// _avx2.cpp with that ISA's flags; scaled_fixed.cpp calls this copy only when olmo::active_isa()
// selects it (OLMO_DISPATCH, kernels/dispatch.h).
#include "distributed/scaled_fixed_body.h"
