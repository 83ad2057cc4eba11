# Issue 37 item 7: the soak -- 20,000 steps of a reduced tiny model with checkpoints, eval,
# validation and the audit on; RSS, open descriptors and run-dir growth asserted
# (tests/train/soak_test.py states the rules; figures in bench/results/soak.md). Labelled
# `slow`: `make test` leaves it out (ctest -LE slow), `make test-slow` runs it (ctest -L slow).
olmo_py_test(train_soak ${CMAKE_CURRENT_LIST_DIR}/soak_test.py)
# Measured 234-281 s on the loaded 2-core machine (load 6-8): TIMEOUT ~4-5x.
set_tests_properties(train_soak PROPERTIES TIMEOUT 1200 LABELS "train;slow")
# Its negative controls (issue 45 item 8): the same soak at 10,000 steps under an LD_PRELOAD
# leak (--leak fd: a descriptor per rename, i.e. per checkpoint publish; --leak mem: 256 B per
# fflush); each passes only when the fd / RSS check it must trip failed. Also `slow`.
olmo_py_test(train_soak_leak_fd ${CMAKE_CURRENT_LIST_DIR}/soak_test.py --steps 10000 --leak fd)
olmo_py_test(train_soak_leak_mem ${CMAKE_CURRENT_LIST_DIR}/soak_test.py --steps 10000 --leak mem)
set_tests_properties(train_soak_leak_fd train_soak_leak_mem PROPERTIES TIMEOUT 900
                     LABELS "train;slow")
