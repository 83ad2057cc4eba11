# Golden state hashes (issue 46 item 4): the per-step state fingerprints and final SHA-256 of a
# fixed 24-step tiny run (tests/train/golden/) reproduced by every kernel path this CPU has that
# the golden lists, and by 1-3 threads and 1-3 processes (mpirun) on every path.
olmo_mpi_py_test(train_golden ${CMAKE_CURRENT_LIST_DIR}/golden_test.py)
set_tests_properties(train_golden PROPERTIES TIMEOUT 600 LABELS train)
