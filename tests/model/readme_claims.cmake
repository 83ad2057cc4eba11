# README claims driven end to end (issue 35 item 6; inventory: docs/readme_claims.md):
#   model_claims_hf_vocab  `olmo export --hf-vocab` slices the vocabulary to the tokenizer's 100278
#                          rows: safetensors, transformers and `olmo logits` on the result (~23 s)
olmo_py_test(model_claims_hf_vocab ${CMAKE_CURRENT_LIST_DIR}/claims_hf_vocab_test.py)
set_tests_properties(model_claims_hf_vocab PROPERTIES LABELS model TIMEOUT 120)
