# Issue 8: audit + validation catch each injected loader fault; zero alarms on a clean run.
# With mpirun (OLMO_MPIRUN, else PATH) it also runs a 2-rank job: RESOURCE_LOCK mpi.
olmo_py_test(train_fault ${CMAKE_CURRENT_LIST_DIR}/fault_test.py)
if(MPIEXEC_EXECUTABLE)
  set_property(TEST train_fault APPEND PROPERTY ENVIRONMENT "OLMO_MPIRUN=${MPIEXEC_EXECUTABLE}")
endif()
set_tests_properties(train_fault PROPERTIES RESOURCE_LOCK mpi LABELS train)
