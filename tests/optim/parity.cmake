# OLMo-core parity for src/optim: the Python script runs OLMo-core's SkipStepAdamW, clipping and
# schedulers, then the replay executable below, and compares (tests/optim/olmo_core_parity.py).
add_executable(optim_parity_replay ${CMAKE_CURRENT_LIST_DIR}/parity_replay.cpp)
target_link_libraries(optim_parity_replay PRIVATE olmo_optim)
set_target_properties(optim_parity_replay PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")
olmo_py_test(optim_olmo_core_parity ${CMAKE_CURRENT_LIST_DIR}/olmo_core_parity.py)
set_tests_properties(optim_olmo_core_parity PROPERTIES LABELS optim TIMEOUT 300)
