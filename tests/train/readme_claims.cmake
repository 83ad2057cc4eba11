# README claims driven end to end (issue 35 item 6; the inventory is docs/readme_claims.md):
#   train_claims_stop_on_alarm  audit.stop_on_alarm / validation.stop_on_alarm stop the run (~3 s)
#   train_claims_loss_norm      loss_normalization=global on packed data vs OLMo-core's packing +
#                               transformers, and world-size independence (2 processes: mpi) (~20 s)
#   train_claims_precision_rule the auto-precision probe's >= 1.1x rule, forced timings (~2 s)
#   train_claims_plot           `olmo plot`: the PNG's form and its pixels vs metrics.jsonl (~6 s)
#   readme_figures              every speed figure of README.md is in the bench/results file its
#                               line names (tests/readme_figures_test.py, < 1 s)
olmo_py_test(train_claims_stop_on_alarm ${CMAKE_CURRENT_LIST_DIR}/claims_stop_on_alarm_test.py)
olmo_py_test(train_claims_loss_norm ${CMAKE_CURRENT_LIST_DIR}/claims_loss_norm_test.py)
olmo_py_test(train_claims_precision_rule ${CMAKE_CURRENT_LIST_DIR}/claims_precision_rule_test.py)
olmo_py_test(train_claims_plot ${CMAKE_CURRENT_LIST_DIR}/claims_plot_test.py)
set_tests_properties(train_claims_stop_on_alarm train_claims_precision_rule train_claims_plot
                     PROPERTIES LABELS train TIMEOUT 60)
# Starts mpirun (when found): the lock.
set_tests_properties(train_claims_loss_norm PROPERTIES LABELS train TIMEOUT 180 RESOURCE_LOCK mpi)
# README.md's speed figures against bench/ (the test lives at tests/ top: it reads README.md).
olmo_py_test(readme_figures ${CMAKE_CURRENT_LIST_DIR}/../readme_figures_test.py)
set_tests_properties(readme_figures PROPERTIES LABELS meta TIMEOUT 60)
# `olmo bench step`: tokens/s, GFLOP/s and MFU consistent with the timing and the measured peak.
olmo_py_test(train_claims_bench_step ${CMAKE_CURRENT_LIST_DIR}/claims_bench_step_test.py)
set_tests_properties(train_claims_bench_step PROPERTIES LABELS train TIMEOUT 60)
