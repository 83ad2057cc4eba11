# README failure-behaviour claims end to end (tests/train/claims_test.py): a NaN / Inf in the
# z-loss alone skips the step (weights, moments, counts unchanged); the default
# trainer.max_nonfinite_steps (10) stops a run, 9 in a row do not. Also
# tests/train/stage3_wiring_test.py: the trainer passes document ids and the YaRN table to the
# model (step-1 loss and gradient norm vs transformers with a document mask and YaRN).
olmo_py_test(train_claims ${CMAKE_CURRENT_LIST_DIR}/claims_test.py)
olmo_py_test(train_stage3_wiring ${CMAKE_CURRENT_LIST_DIR}/stage3_wiring_test.py)
set_tests_properties(train_claims train_stage3_wiring PROPERTIES LABELS train)
# tests/train/cgroup_memory_test.py: the memory plan against a real child cgroup's limit (root
# and a writable memory cgroup needed; exit 77 = skipped otherwise).
olmo_py_test(train_cgroup_memory ${CMAKE_CURRENT_LIST_DIR}/cgroup_memory_test.py)
set_tests_properties(train_cgroup_memory PROPERTIES LABELS train SKIP_RETURN_CODE 77)
