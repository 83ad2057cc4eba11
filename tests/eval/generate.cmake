# Generation against an independent reference:
#   eval_generate_parity  greedy `olmo generate` (KV cache, batch of 3, window crossed; plain
#                         RoPE and YaRN) == transformers generate() token for token, and every
#                         new token's logits row within rel L2 3e-6 (tests/eval/generate_parity.py)
olmo_py_test(eval_generate_parity ${CMAKE_CURRENT_LIST_DIR}/generate_parity.py)
set_tests_properties(eval_generate_parity PROPERTIES LABELS eval)
