# OLMo-core's own Trainer as the reference run, side by side (issue 19): reference + noise floor,
# olmo.cpp within the floor, hyperparameter typos flagged, bad references refused, stage 1 -> 2
# on both sides and a checkpoint migration each way (one test: the stage-1 runs are shared).
olmo_py_test(train_olmo_core_ref ${CMAKE_CURRENT_LIST_DIR}/olmo_core_ref_test.py)
# Three OLMo-core processes (reference, 1-ulp twin, clip twin) plus olmo.cpp runs and the chain:
# ~8-13 min on 2 busy cores (619 s on the Zen 2 with two builds beside it; timed out at 900 s
# under load 17), so 3x the longest: 2400 s.
set_tests_properties(train_olmo_core_ref PROPERTIES TIMEOUT 2400 LABELS train)
# Per-group weight / update RMS against OLMo-core (issue 37 item 6): its own 10-step reference
# with twins and a held-out twin (not in the floor: the false-alarm check), a clean run, four
# recipe deviations flagged by group, one starting at step 6 flagged in [6, 8], one layer's
# tensor on both sides (the OLMo-core side: the held-out twin deviated). ~60 s alone on 2 cores
# before the held-out twins; 133 s in a whole-suite run (-j2); the two held-out runs add 39% CPU
# time (95 s against 68 s, measured side by side), so TIMEOUT 600.
olmo_py_test(train_olmo_core_ref_rms ${CMAKE_CURRENT_LIST_DIR}/olmo_core_ref_rms_test.py)
set_tests_properties(train_olmo_core_ref_rms PROPERTIES TIMEOUT 600 LABELS train)
