// The fixed-point kernel bodies of src/distributed (scaled_fixed_body.h) stamped for AVX512 into
// namespace olmo::dist::isa_avx512 (kernels/simd.h). CMake's olmo_isa_flags compiles files ending
// _avx512.cpp with that ISA's flags; scaled_fixed.cpp calls this copy only when olmo::active_isa()
// selects it (OLMO_DISPATCH, kernels/dispatch.h).
#include "distributed/scaled_fixed_body.h"
