# OLMo-core's own Trainer as the reference run, side by side (issue 19): reference + noise floor,
# olmo.cpp within the floor, hyperparameter typos flagged, bad references refused, stage 1 -> 2
# on both sides and a checkpoint migration each way (one test: the stage-1 runs are shared).
olmo_py_test(train_olmo_core_ref ${CMAKE_CURRENT_LIST_DIR}/olmo_core_ref_test.py)
# Three OLMo-core processes (reference, 1-ulp twin, clip twin) plus olmo.cpp runs and the chain:
# ~8-13 min on 2 busy cores (619 s on the Zen 2 with two builds beside it; timed out at 900 s
# under load 17), so 3x the longest: 2400 s.
set_tests_properties(train_olmo_core_ref PROPERTIES TIMEOUT 2400 LABELS train)
# Per-group weight / update RMS against OLMo-core (issue 37 item 6): its own 10-step reference
# with twins, a clean run, four recipe deviations flagged by group, one starting at step 6 flagged
# in [6, 8]. ~60 s alone on 2 cores; 145 s at load ~15.
olmo_py_test(train_olmo_core_ref_rms ${CMAKE_CURRENT_LIST_DIR}/olmo_core_ref_rms_test.py)
set_tests_properties(train_olmo_core_ref_rms PROPERTIES TIMEOUT 400 LABELS train)
