# Any partition, same bits (issue 47): seeded random world sizes 1-4, micro-batch sizes,
# accumulators and ZeRO stages, and a run resized 1 -> 3 -> 4 -> 2 with the micro-batch halved on
# resume, each bitwise equal to the 1-process run (partition_test.py); mpirun on loopback.
olmo_mpi_py_test(dist_partition ${CMAKE_CURRENT_LIST_DIR}/partition_test.py)
set_tests_properties(dist_partition PROPERTIES LABELS dist TIMEOUT 300)  # 19-28 s measured
