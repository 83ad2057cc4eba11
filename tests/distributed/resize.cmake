# Resize sequences (world sizes 1-4, length 3, and seeded random longer ones) against the
# never-resized run, bitwise (issue 17): mpirun on loopback like the other dist tests.
olmo_mpi_py_test(dist_resize ${CMAKE_CURRENT_LIST_DIR}/resize_test.py)
set_tests_properties(dist_resize PROPERTIES LABELS dist)
