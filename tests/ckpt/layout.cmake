# The checkpoint layout is known only to src/ckpt (issue 36 item 1; tests/ckpt/layout_rule.py,
# measured 0.1 s): no file of src/ or cli/ outside src/ckpt names a checkpoint file as a path.
olmo_py_test(ckpt_layout_only_in_ckpt ${CMAKE_CURRENT_LIST_DIR}/layout_rule.py)
set_tests_properties(ckpt_layout_only_in_ckpt PROPERTIES LABELS "ckpt;meta" TIMEOUT 30)
