# Probe binary (not a test): Intel AMX's TDPBF16PS against the invariant bf16 arithmetic
# (bench/amx_bf16_probe.cpp; figures in docs/invariance.md). Built where the compiler knows AMX.
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-mamx-bf16 OLMO_HAVE_AMX_FLAGS)
if(OLMO_HAVE_AMX_FLAGS)
  add_executable(bench_amx_bf16_probe ${CMAKE_SOURCE_DIR}/bench/amx_bf16_probe.cpp)
endif()
