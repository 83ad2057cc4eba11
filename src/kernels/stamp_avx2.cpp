// Every kernel body of src/kernels stamped for AVX2 + FMA (8-float ymm Vec) into namespace
// olmo::kernels::isa_avx2 (simd.h). CMake's olmo_isa_flags compiles files ending _avx2.cpp with
// -mavx2 -mfma; the public kernel .cpp files call these copies only when olmo::active_isa()
// selects them (OLMO_DISPATCH, dispatch.h); their scalar copies are compiled in those .cpp files.
// Keep this list equal to stamp_avx512.cpp (a missing body is an undefined symbol at link time).
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
