# Issue 8: audit + validation catch each injected loader fault; zero alarms on a clean run.
olmo_py_test(train_fault ${CMAKE_CURRENT_LIST_DIR}/fault_test.py)
