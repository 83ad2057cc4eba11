# core_no_hand_rolled_rename: no file outside src/core renames or rewrites a file in place; every
# user-visible output goes through core/file_io.h (issue 36 item 4). A grep, measured 0.1 s.
olmo_py_test(core_no_hand_rolled_rename ${CMAKE_CURRENT_LIST_DIR}/no_hand_rolled_rename.py)
set_tests_properties(core_no_hand_rolled_rename PROPERTIES LABELS core TIMEOUT 30)
