# Benchmark binary for the exact reduction's conversion (not a test):
#   build-X/tests/bench_exact_convert [--reps N] [--variants avx512:plain,avx512:keep,...]
# (bench/exact_convert_bench.cpp; figures in bench/results/dist.md).
add_executable(bench_exact_convert ${CMAKE_SOURCE_DIR}/bench/exact_convert_bench.cpp)
target_link_libraries(bench_exact_convert PRIVATE olmo_distributed)
set_target_properties(bench_exact_convert PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")
