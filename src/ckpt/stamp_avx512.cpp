// The fingerprint body of src/ckpt (fingerprint_body.h) stamped for AVX512 into namespace
// olmo::ckpt::isa_avx512 (kernels/simd.h). CMake's olmo_isa_flags compiles files ending _avx512.cpp
// with that ISA's flags; fingerprint.cpp calls this copy only when olmo::active_isa() selects it
// (OLMO_DISPATCH, kernels/dispatch.h).
#include "ckpt/fingerprint_body.h"
