# `olmo ckpt verify` and the fingerprint check on resume: tampered tensors and state sections,
# missing / short shard files, a piece missing from the index (issue 17).
if(MPIEXEC_EXECUTABLE)
  olmo_py_test(train_ckpt_verify ${CMAKE_CURRENT_LIST_DIR}/ckpt_verify_test.py)
  set_property(TEST train_ckpt_verify APPEND PROPERTY ENVIRONMENT "OLMO_MPIRUN=${MPIEXEC_EXECUTABLE}")
  set_tests_properties(train_ckpt_verify PROPERTIES RESOURCE_LOCK mpi LABELS train)
endif()
