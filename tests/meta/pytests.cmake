# meta_pytests: no Python file under tests/ (tests/lib excepted) edits sys.path or defines its own
# check(); they import the shared helpers of tests/lib (olmo_test) from the PYTHONPATH that
# olmo_py_test sets (tests/meta/check_pytests.py, standard library only; measured < 1 s).
find_program(OLMO_SYSTEM_PYTHON3 python3)
add_test(NAME meta_pytests COMMAND ${OLMO_SYSTEM_PYTHON3}
         ${CMAKE_CURRENT_LIST_DIR}/check_pytests.py ${CMAKE_SOURCE_DIR})
set_tests_properties(meta_pytests PROPERTIES LABELS meta TIMEOUT 60)
