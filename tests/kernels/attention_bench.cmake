# Benchmark binary for the attention and fused LM-head loss kernels (not a test):
#   build-X/tests/bench_attention [attn|loss|all] [reps] [chunk_rows]
add_executable(bench_attention ${CMAKE_SOURCE_DIR}/bench/attention_bench.cpp)
target_link_libraries(bench_attention PRIVATE olmo_kernels)
