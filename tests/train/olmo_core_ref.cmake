# OLMo-core's own Trainer as the reference run, side by side (issue 19): reference + noise floor,
# olmo.cpp within the floor, hyperparameter typos flagged, bad references refused, stage 1 -> 2
# on both sides and a checkpoint migration each way (one test: the stage-1 runs are shared).
olmo_py_test(train_olmo_core_ref ${CMAKE_CURRENT_LIST_DIR}/olmo_core_ref_test.py)
