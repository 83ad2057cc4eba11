# Distributed tests: mpirun -np N on loopback (OpenMPI from Debian; scripts/install_deps.sh
# installs it). World-size-independent bits, elastic resume, faults and the lock,
# one precision per job under model.precision=auto, ZeRO-3 (bitwise equal to ZeRO-2, peak RSS).
# Without MPI each is registered as a skip (olmo_mpi_py_test, tests/CMakeLists.txt).
olmo_mpi_py_test(dist_world_size ${CMAKE_CURRENT_LIST_DIR}/world_size_test.py)
olmo_mpi_py_test(dist_faults ${CMAKE_CURRENT_LIST_DIR}/fault_test.py)
olmo_mpi_py_test(dist_precision ${CMAKE_CURRENT_LIST_DIR}/precision_test.py)
olmo_mpi_py_test(dist_zero3 ${CMAKE_CURRENT_LIST_DIR}/zero3_test.py)
# A rank-local overflow of the exact reduction (OLMO_TEST_GRAD_SCALE): the same redo on every
# rank, reduce_redos 1, the 1-process bits at 2, 3 and 4 processes.
olmo_mpi_py_test(dist_grad_overflow ${CMAKE_CURRENT_LIST_DIR}/grad_overflow_test.py)
# The overlap stream and the row-sparse embedding engage where on: their metrics counters.
olmo_mpi_py_test(dist_stream_counters ${CMAKE_CURRENT_LIST_DIR}/stream_counters_test.py)
# They launch several processes on the 2 cores: never at the same time as each other.
set_tests_properties(dist_world_size dist_faults dist_precision dist_zero3 dist_grad_overflow
                     dist_stream_counters PROPERTIES LABELS dist)
if(NOT MPIEXEC_EXECUTABLE)
  message(WARNING "MPI not found: the distributed tests are reported as skipped")
endif()
