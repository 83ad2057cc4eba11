# bf16 mixed precision: 50 training steps against PyTorch autocast (HF Olmo3ForCausalLM, fp32
# master weights, OLMo-core's SkipStepAdamW), bf16 tracking fp32, resume across precisions.
# On a CPU without AVX512_BF16 the test checks the refusal instead (exit code 0 either way).
olmo_py_test(model_bf16_parity ${CMAKE_CURRENT_LIST_DIR}/bf16_parity.py)
set_tests_properties(model_bf16_parity PROPERTIES LABELS model)
