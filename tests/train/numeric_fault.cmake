# Issue 11 item 4: NaN/Inf in the loss or a gradient is a skipped step that never reaches the
# weights, moments or a checkpoint; K in a row stop the run; the writer refuses NaN weights;
# the skip decision is global on 2 processes (mpirun part skipped without MPI).
olmo_py_test(train_numeric_fault ${CMAKE_CURRENT_LIST_DIR}/numeric_fault_test.py)
if(MPIEXEC_EXECUTABLE)
  set_property(TEST train_numeric_fault APPEND PROPERTY ENVIRONMENT "OLMO_MPIRUN=${MPIEXEC_EXECUTABLE}")
endif()
# The lock either way: without OLMO_MPIRUN the test looks for mpirun on PATH.
set_tests_properties(train_numeric_fault PROPERTIES RESOURCE_LOCK mpi LABELS train)
