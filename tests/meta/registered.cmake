# meta_registered: every test name registered under tests/ is listed by `ctest -N`, and none is
# registered only where CMake finds MPI (tests/meta/check_registered.py, standard library only;
# measured < 1 s).
find_program(OLMO_SYSTEM_PYTHON3 python3)
add_test(NAME meta_registered COMMAND ${OLMO_SYSTEM_PYTHON3}
         ${CMAKE_CURRENT_LIST_DIR}/check_registered.py ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
         ${CMAKE_CTEST_COMMAND})
set_tests_properties(meta_registered PROPERTIES LABELS meta TIMEOUT 60)
