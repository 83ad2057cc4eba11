# The fp32 GEMM is oneDNN's, which chooses its ISA itself: run the Gemm.* cases of
# test_kernels_gemm again with oneDNN capped at AVX2 and at SSE4.1 (Gemm.OneDnnRunsAtTheCappedIsa
# checks the cap took effect), and the GemmBf16.* cases, which there take gemm_bf16's widened
# path (that of a CPU without AVX-512) on every CPU. The default run (kernels_gemm) is at the
# CPU's best ISA.
foreach(cap AVX2 SSE41)
  string(TOLOWER ${cap} lc)
  add_test(NAME kernels_gemm_${lc} COMMAND test_kernels_gemm --gtest_filter=Gemm.*:GemmBf16.*)
  set_tests_properties(kernels_gemm_${lc} PROPERTIES LABELS kernels TIMEOUT 300
                       ENVIRONMENT "ONEDNN_MAX_CPU_ISA=${cap};OMP_NUM_THREADS=2")
endforeach()
