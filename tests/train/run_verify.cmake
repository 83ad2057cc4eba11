# `olmo verify` (issue 46 item 5): a 6-step tiny run re-executed from step2 reproduces its
# checkpoints and per-step state fingerprints; a flipped bit in a checkpoint (checksums resealed
# or not), a changed recorded fingerprint and changed training data are findings (exit 3) naming
# the step (and the tensor); bad input is a clear error. One process.
olmo_py_test(train_run_verify ${CMAKE_CURRENT_LIST_DIR}/run_verify_test.py)
set_tests_properties(train_run_verify PROPERTIES TIMEOUT 300 LABELS train)
