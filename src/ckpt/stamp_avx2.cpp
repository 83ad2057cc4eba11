// The fingerprint body of src/ckpt (fingerprint_body.h) stamped for AVX2 into namespace
// olmo::ckpt::isa_avx2 (kernels/simd.h). CMake's olmo_isa_flags compiles files ending _avx2.cpp
// with that ISA's flags; fingerprint.cpp calls this copy only when olmo::active_isa() selects it
// (OLMO_DISPATCH, kernels/dispatch.h).
#include "ckpt/fingerprint_body.h"
