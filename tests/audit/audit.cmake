# Issue 8: prepare's audit index against numpy; contamination end to end (real tokenizer).
olmo_py_test(audit_prepare_index ${CMAKE_CURRENT_LIST_DIR}/prepare_index.py)
set_tests_properties(audit_prepare_index PROPERTIES LABELS audit)
