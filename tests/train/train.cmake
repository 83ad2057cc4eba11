# Process-level trainer tests (Python drives build/olmo in new processes).
olmo_py_test(train_resume ${CMAKE_CURRENT_LIST_DIR}/resume_test.py)
olmo_py_test(train_hf_parity ${CMAKE_CURRENT_LIST_DIR}/hf_parity_test.py)
