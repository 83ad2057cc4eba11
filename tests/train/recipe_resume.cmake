# The recipe is part of the checkpoint (issue 37 item 1): every recorded field changed alone on
# resume is refused (named, old and new value, the allow flag) and leaves the run dir as it was;
# allowed, it takes effect and reaches metrics.jsonl, the batch ledger and `olmo audit`; fields
# that do not change the trajectory are accepted with the same bits. 16 s here (1 process).
olmo_py_test(train_recipe_resume ${CMAKE_CURRENT_LIST_DIR}/recipe_resume_test.py)
set_tests_properties(train_recipe_resume PROPERTIES TIMEOUT 120 LABELS train)
