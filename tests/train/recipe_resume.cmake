# The recipe is part of the checkpoint (issue 37 item 1): every recorded field changed alone on
# resume is refused by the recipe check (exit 1, named, old and new value, the allow flag) and
# leaves the run dir as it was; allowed, it takes effect and reaches metrics.jsonl, the batch
# ledger and `olmo audit`; every field the field table marks free (the list read from `olmo info
# --config-reference`) is accepted with the same bits (one run per section). 16 s quiet before
# issue 45; 32-35 s at load ~15 since (1 process).
olmo_py_test(train_recipe_resume ${CMAKE_CURRENT_LIST_DIR}/recipe_resume_test.py)
set_tests_properties(train_recipe_resume PROPERTIES TIMEOUT 120 LABELS train)
