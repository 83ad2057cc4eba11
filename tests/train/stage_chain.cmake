# The stage 1 -> 2 -> 3 chain at tiny scale (stage 3 packed, doc-masked, YaRN, on 2 processes).
# Stage 3 needs mpirun: without MPI the test is a visible skip (olmo_mpi_py_test).
olmo_mpi_py_test(train_stage_chain ${CMAKE_CURRENT_LIST_DIR}/stage_chain_test.py)
set_tests_properties(train_stage_chain PROPERTIES LABELS train)
