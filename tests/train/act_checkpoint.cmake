# Activation checkpointing config key end to end: the key reaches the model (the dry-run plan
# marks the run's own mode), a bad block_interval is refused naming the key, and the 7B plan of
# `olmo info` lists the modes with their fit on 256 / 512 GiB nodes.
olmo_cli_test(train_act_ckpt_dry_run 0 "selected_blocks 2 \\(this run\\) +2/4"
  ${CMAKE_BINARY_DIR}/olmo train ${CMAKE_SOURCE_DIR}/tests/configs/tiny.yaml
  model.activation_checkpointing.mode=selected_blocks
  model.activation_checkpointing.block_interval=2 --dry-run)
olmo_cli_test(train_act_ckpt_bad_interval error
  "model.activation_checkpointing.block_interval' = 0 must be >= 1"
  ${CMAKE_BINARY_DIR}/olmo train ${CMAKE_SOURCE_DIR}/tests/configs/tiny.yaml
  model.activation_checkpointing.mode=selected_blocks --dry-run)
olmo_cli_test(train_act_ckpt_info_7b 0 "full +32/32 +[0-9.]+ GiB"
  ${CMAKE_BINARY_DIR}/olmo info --preset olmo3-7b --seq 8192 --batch 2 --processes 8)
set_tests_properties(train_act_ckpt_dry_run train_act_ckpt_bad_interval train_act_ckpt_info_7b
  PROPERTIES LABELS train)
