# README claims driven end to end (issue 35 item 6; inventory: docs/readme_claims.md):
#   model_claims_hf_vocab  `olmo export --hf-vocab` slices the vocabulary to the tokenizer's 100278
#                          rows: safetensors, transformers and `olmo logits` on the result (~23 s)
olmo_py_test(model_claims_hf_vocab ${CMAKE_CURRENT_LIST_DIR}/claims_hf_vocab_test.py)
set_tests_properties(model_claims_hf_vocab PROPERTIES LABELS model TIMEOUT 120)
#   model_claims_demo_size  configs/demo.yaml is the README's 27.8M-parameter shape: transformers'
#                           count and `olmo train --dry-run`'s (~10 s)
olmo_py_test(model_claims_demo_size ${CMAKE_CURRENT_LIST_DIR}/claims_demo_size_test.py)
set_tests_properties(model_claims_demo_size PROPERTIES LABELS model TIMEOUT 60)
