# Any partition, same bits (issue 47): seeded random world sizes 1-4, micro-batch sizes and
# accumulators, and a run resized 1 -> 3 -> 4 -> 2 with the micro-batch halved on resume, each
# bitwise equal to the 1-process run (tests/distributed/partition_test.py); mpirun on loopback.
if(MPIEXEC_EXECUTABLE)
  olmo_py_test(dist_partition ${CMAKE_CURRENT_LIST_DIR}/partition_test.py)
  set_property(TEST dist_partition APPEND PROPERTY ENVIRONMENT "OLMO_MPIRUN=${MPIEXEC_EXECUTABLE}")
  set_tests_properties(dist_partition PROPERTIES RESOURCE_LOCK mpi LABELS dist TIMEOUT 600)
endif()
