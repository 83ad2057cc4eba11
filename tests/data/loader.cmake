# Data-order and loader tests beyond the GoogleTest binaries: numpy bit-exactness of
# `olmo data global-indices`, and parity with OLMo-core's NumpyFSLDataset / NumpyFSLDataLoader /
# NumpyPaddedFSLDataset (tests/data/olmo_core_parity.py). Plus the loader benchmark binary
# (not a test): build-X/tests/bench_loader [--seq-len T --global-batch B ...].
olmo_py_test(data_numpy_order ${CMAKE_CURRENT_LIST_DIR}/numpy_order.py)
set_tests_properties(data_numpy_order PROPERTIES LABELS data TIMEOUT 120)
olmo_py_test(data_olmo_core_parity ${CMAKE_CURRENT_LIST_DIR}/olmo_core_parity.py)
set_tests_properties(data_olmo_core_parity PROPERTIES LABELS data TIMEOUT 300)

olmo_cli_test(data_cli_bad_epoch error "epoch must be >= 1"
  ${CMAKE_BINARY_DIR}/olmo data global-indices --size 4 --seed 1 --epoch 0 --out /dev/null)
olmo_cli_test(data_cli_missing_file error "/nonexistent/part-0.npy: token file not found"
  ${CMAKE_BINARY_DIR}/olmo data info /nonexistent/part-0.npy --seq-len 16)
set_tests_properties(data_cli_bad_epoch data_cli_missing_file PROPERTIES LABELS data)

add_executable(bench_loader ${CMAKE_SOURCE_DIR}/bench/loader_bench.cpp)
target_link_libraries(bench_loader PRIVATE olmo_data)
set_target_properties(bench_loader PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")

# Issue 23: OLMo-core's data mixes by name, against DataMix.build; dry runs of the three OLMo 3
# stages on a fake data root; bad names and missing files (tests/data/named_mix_test.py).
olmo_py_test(data_named_mix ${CMAKE_CURRENT_LIST_DIR}/named_mix_test.py)
set_tests_properties(data_named_mix PROPERTIES LABELS data TIMEOUT 300)
