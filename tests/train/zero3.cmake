# ZeRO-3 plans (dist.zero_stage, src/train/memory_plan.h): `olmo train --dry-run` reports the
# run's stage, and `olmo info` prints the ZeRO-3 table for the 7B and 32B presets at micro-batch
# 2 x 8192 with the smallest process counts that fit 256 / 512 GiB nodes (with the exact
# reduction's 8 B/parameter accumulator the ZeRO-2 rows for mode full read 1 / 1 (7B) and
# no fit / 3 (32B); the 32B line below is the ZeRO-3 table's: at 4 processes shard 8.05 G
# elements: weights 30 + moments 60 + gradient shard 30 + accumulator 60 GiB + 2 unit buffers
# + 32.6 GiB of activations fit 256 GiB, at 3 they do not).
olmo_cli_test(train_zero3_dry_run 0 "ZeRO-3, dist.reduce exact"
  ${CMAKE_BINARY_DIR}/olmo train ${CMAKE_SOURCE_DIR}/tests/configs/tiny.yaml dist.zero_stage=3 --dry-run)
olmo_cli_test(train_zero3_info_7b 0 "^full +32/32 +[0-9.]+ GiB +[0-9.]+ GiB +[0-9.]+ % +1 proc +1 proc"
  ${CMAKE_BINARY_DIR}/olmo info --preset olmo3-7b --seq 8192 --batch 2 --processes 8)
olmo_cli_test(train_zero3_info_32b 0 "^full +64/64 +[0-9.]+ GiB +[0-9.]+ GiB +[0-9.]+ % +4 proc +2 proc"
  ${CMAKE_BINARY_DIR}/olmo info --preset olmo3-32b --seq 8192 --batch 2 --processes 8)
set_tests_properties(train_zero3_dry_run train_zero3_info_7b train_zero3_info_32b
  PROPERTIES LABELS train)
