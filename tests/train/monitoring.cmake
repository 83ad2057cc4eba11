# Monitoring (README "Monitoring"): TensorBoard event files written by `olmo train`, read back
# with TensorBoard's own reader, also across a crash and resume; the W&B offline export
# (tools/wandb_sync.py) read back from its transaction log. No network. The CRC-32C vectors and
# the TFRecord framing are the GoogleTest binary train_tfevents (tests/train/tfevents_test.cpp).
olmo_py_test(train_tensorboard ${CMAKE_CURRENT_LIST_DIR}/tensorboard_test.py)
olmo_py_test(train_wandb_sync ${CMAKE_CURRENT_LIST_DIR}/wandb_sync_test.py)
# Measured 3.1-5.1 s / 5.0-7.7 s under ctest on the 2-core machine with builds beside it.
set_tests_properties(train_tensorboard train_wandb_sync PROPERTIES TIMEOUT 60 LABELS train)
# MFU never above 100% and tokens/s from wall time (issue 50): OLMO_TEST_PEAK, real steps.
# Measured 1.4-2.3 s under ctest on the 2-core machine with builds beside it.
olmo_py_test(train_mfu_wall ${CMAKE_CURRENT_LIST_DIR}/mfu_wall_test.py)
set_tests_properties(train_mfu_wall PROPERTIES TIMEOUT 60 LABELS train)
