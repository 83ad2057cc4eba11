# Benchmark suites and canary exposure beyond the GoogleTest binaries:
#   eval_benchmark_parity  `olmo evaluate-suites` vs an independent HF Olmo3ForCausalLM + tiktoken
#                          scorer on the checked-in suites (same choice on every item, per-choice
#                          log-likelihood <= 1e-5 rel.) and on canary exposure
#   eval_benchmark_inloop  the in-loop callback in a tiny `olmo train` run vs offline scoring
#   eval_suites_check      evalsets/ equals a fresh scripts/make_eval_suites.py run on
#                          data/corpus (after corpus_tokenizer_parity, which builds the corpus
#                          when missing: fixture demo_corpus; skipped when it is not built)
olmo_py_test(eval_benchmark_parity ${CMAKE_CURRENT_LIST_DIR}/benchmark_parity.py)
olmo_py_test(eval_benchmark_inloop ${CMAKE_CURRENT_LIST_DIR}/benchmark_inloop.py)
set_tests_properties(eval_benchmark_parity eval_benchmark_inloop PROPERTIES LABELS eval)
add_test(NAME eval_suites_check
         COMMAND ${OLMO_PYTHON} ${CMAKE_SOURCE_DIR}/scripts/make_eval_suites.py --check
                 --skip-missing --corpus ${CMAKE_SOURCE_DIR}/data/corpus
                 --out ${CMAKE_SOURCE_DIR}/evalsets)
set_tests_properties(eval_suites_check PROPERTIES LABELS eval SKIP_RETURN_CODE 77
                     FIXTURES_REQUIRED demo_corpus TIMEOUT 900)
