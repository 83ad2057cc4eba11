# A trained YaRN checkpoint against transformers built from the run's config.yaml: olmo info,
# export, evaluate-suites and generate on the checkpoint (issue 17, bug 2).
olmo_py_test(model_yarn_checkpoint ${CMAKE_CURRENT_LIST_DIR}/yarn_checkpoint_test.py)
set_tests_properties(model_yarn_checkpoint PROPERTIES LABELS model)
