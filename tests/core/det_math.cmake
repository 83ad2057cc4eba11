# core/det_math (tests/core/det_math_test.cpp: accuracy against x87 long double, ctest
# core_det_math) and its callers against glibc (det_math_callers_test.cpp, ctest
# core_det_math_callers, which builds RoPE tables and LR schedules: it links kernels and optim).
target_link_libraries(test_core_det_math_callers PRIVATE olmo_kernels olmo_optim)
set_tests_properties(core_det_math core_det_math_callers PROPERTIES TIMEOUT 600)
