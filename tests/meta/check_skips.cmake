# meta_check_skips: tests/check_skips.py on real ctest reports of a scratch project (DISABLED
# refused, every prerequisite a skip names must be absent; tests/meta/check_skips_test.py).
olmo_py_test(meta_check_skips ${CMAKE_CURRENT_LIST_DIR}/check_skips_test.py)
set_tests_properties(meta_check_skips PROPERTIES LABELS meta TIMEOUT 60)
