# Asynchronous checkpoints, free-space check and retention (issue 37 item 2): `olmo train` with
# trainer.async_checkpoint on and off gives byte-identical checkpoints; a checkpoint that does
# not fit (OLMO_TEST_FREE_BYTES) fails clearly with nothing written; keep_last never deletes the
# newest complete checkpoint; the writer thread held at its named point (OLMO_TEST_HOLD=write)
# while the loop trains on: the commit lands later, the stall is below the write time.
olmo_py_test(ckpt_async ${CMAKE_SOURCE_DIR}/tests/train/async_ckpt_test.py)
set_tests_properties(ckpt_async PROPERTIES LABELS ckpt TIMEOUT 300)
