# The stage 1 -> 2 -> 3 chain at tiny scale (stage 3 packed, doc-masked, YaRN, on 2 processes).
olmo_py_test(train_stage_chain ${CMAKE_CURRENT_LIST_DIR}/stage_chain_test.py)
if(MPIEXEC_EXECUTABLE)
  set_property(TEST train_stage_chain APPEND PROPERTY ENVIRONMENT "OLMO_MPIRUN=${MPIEXEC_EXECUTABLE}")
endif()
set_tests_properties(train_stage_chain PROPERTIES RESOURCE_LOCK mpi LABELS train)
