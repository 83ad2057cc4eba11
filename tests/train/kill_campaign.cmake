# Issue 11 item 3: >= 32 seeded SIGKILLs of a tiny run (start-up, steps, evaluation, mid-checkpoint;
# OLMO_TEST_KILL hooks and wall-clock kills), each restarted: the finished run equals a never-killed
# one bit for bit and metrics.jsonl holds every step once. Then the whole run on a disk that fills
# up mid-checkpoint and on a run dir that turns read-only (private mount namespace; skipped
# with a message when mounting is refused).
olmo_py_test(train_kill_campaign ${CMAKE_CURRENT_LIST_DIR}/kill_campaign.py)
olmo_py_test(train_disk_faults ${CMAKE_CURRENT_LIST_DIR}/disk_fault_test.py)
set_tests_properties(train_disk_faults PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(train_kill_campaign train_disk_faults PROPERTIES LABELS train)
