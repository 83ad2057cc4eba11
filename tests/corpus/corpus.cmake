# Corpus / prepare checks that need the olmo binary or Python oracles (tiktoken, OLMo-core).
olmo_py_test(corpus_prepare_parity ${CMAKE_CURRENT_LIST_DIR}/prepare_parity.py)
set_tests_properties(corpus_prepare_parity PROPERTIES LABELS corpus)
# Every document of the real demo corpus against tiktoken (builds the corpus when missing).
add_test(NAME corpus_tokenizer_parity
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/corpus_tokenizer_parity.sh)
# eval_suites_check reads the corpus it builds (fixture demo_corpus).
set_tests_properties(corpus_tokenizer_parity PROPERTIES
  ENVIRONMENT "PYTHONPATH=${OLMO_TEST_PYTHONPATH};OLMO_SOURCE_DIR=${CMAKE_SOURCE_DIR};OLMO_BINARY_DIR=${CMAKE_BINARY_DIR};OLMO_BIN=${CMAKE_BINARY_DIR}/olmo;OLMO_PYTHON=${OLMO_PYTHON};TIKTOKEN_CACHE_DIR=${CMAKE_SOURCE_DIR}/data/tiktoken_cache"
  LABELS corpus TIMEOUT 1200 FIXTURES_SETUP demo_corpus)
# Dedup at scale (not a test): build/tests/bench_dedup [--docs 1000000] (bench/results/dedup.md).
add_executable(bench_dedup ${CMAKE_SOURCE_DIR}/bench/dedup_bench.cpp)
target_link_libraries(bench_dedup PRIVATE olmo_corpus)
set_target_properties(bench_dedup PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")
# Dedup end to end against the data-loader audit's start checks (links olmo_audit, so it is not a
# *_test.cpp of this area, whose binaries link olmo_corpus only).
add_executable(test_corpus_dedup_audit ${CMAKE_CURRENT_LIST_DIR}/dedup_audit_check.cpp)
target_link_libraries(test_corpus_dedup_audit PRIVATE olmo_audit GTest::gtest_main)
target_include_directories(test_corpus_dedup_audit PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
set_target_properties(test_corpus_dedup_audit PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")
add_test(NAME corpus_dedup_audit COMMAND test_corpus_dedup_audit)
set_tests_properties(corpus_dedup_audit PROPERTIES LABELS "corpus;cpp" ENVIRONMENT "OMP_NUM_THREADS=2"
                     TIMEOUT 300)
