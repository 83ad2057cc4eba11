// Every kernel body of src/kernels stamped for AVX-512 F/BW/VL/DQ (16-float zmm Vec) into
// namespace olmo::kernels::isa_avx512 (simd.h). CMake's olmo_isa_flags compiles files ending
// _avx512.cpp with the AVX-512 flags; the public kernel .cpp files call these copies only when
// olmo::active_isa() selects them (OLMO_DISPATCH, dispatch.h); their scalar copies are compiled
// in those .cpp files. Keep this list equal to stamp_avx2.cpp (a missing body is an undefined
// symbol at link time).
#include "kernels/attention_body.h"
#include "kernels/bf16_body.h"
#include "kernels/elementwise_body.h"
#include "kernels/embedding_body.h"
#include "kernels/gemm_micro_body.h"
#include "kernels/loss_body.h"
#include "kernels/norm_body.h"
#include "kernels/peak_body.h"
#include "kernels/rope_body.h"
#include "kernels/swiglu_body.h"
