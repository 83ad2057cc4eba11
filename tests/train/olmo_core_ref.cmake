# OLMo-core's own Trainer as the reference run, side by side (issue 19): reference + noise floor,
# olmo.cpp within the floor, hyperparameter typos flagged, bad references refused, stage 1 -> 2
# on both sides and a checkpoint migration each way (one test: the stage-1 runs are shared).
olmo_py_test(train_olmo_core_ref ${CMAKE_CURRENT_LIST_DIR}/olmo_core_ref_test.py)
# Three OLMo-core processes (reference, 1-ulp twin, clip twin) plus olmo.cpp runs and the chain:
# ~8-13 min on 2 busy cores, so it gets more than the default 900 s.
set_tests_properties(train_olmo_core_ref PROPERTIES TIMEOUT 1500)
