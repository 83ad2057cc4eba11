# Process-level trainer tests (Python drives build/olmo in new processes).
# The trainer's GoogleTest binary also runs the standard callbacks (src/monitor, above train).
target_link_libraries(test_train_trainer PRIVATE olmo_monitor)
olmo_py_test(train_resume ${CMAKE_CURRENT_LIST_DIR}/resume_test.py)
olmo_py_test(train_hf_parity ${CMAKE_CURRENT_LIST_DIR}/hf_parity_test.py)
# 239 s / 257 s on the Zen 2 with two builds beside it (README): ~5x, above the default 900 s.
set_tests_properties(train_resume train_hf_parity PROPERTIES TIMEOUT 1200 LABELS train)
