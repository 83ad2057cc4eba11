# `olmo ckpt verify` and the fingerprint check on resume: tampered tensors and state sections,
# missing / short shard files, a piece missing from the index (issue 17).
olmo_mpi_py_test(train_ckpt_verify ${CMAKE_CURRENT_LIST_DIR}/ckpt_verify_test.py)
set_tests_properties(train_ckpt_verify PROPERTIES LABELS train)
