# Resize sequences (world sizes 1-4, length 3, and seeded random longer ones) against the
# never-resized run, bitwise (issue 17): mpirun on loopback like the other dist tests.
if(MPIEXEC_EXECUTABLE)
  olmo_py_test(dist_resize ${CMAKE_CURRENT_LIST_DIR}/resize_test.py)
  set_property(TEST dist_resize APPEND PROPERTY ENVIRONMENT "OLMO_MPIRUN=${MPIEXEC_EXECUTABLE}")
  set_tests_properties(dist_resize PROPERTIES RESOURCE_LOCK mpi LABELS dist)
endif()
