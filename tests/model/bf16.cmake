# bf16 mixed precision: 50 training steps against PyTorch autocast (HF Olmo3ForCausalLM, fp32
# master weights, OLMo-core's SkipStepAdamW), bf16 tracking fp32, resume across precisions.
# On a CPU without AVX512_BF16 it checks the refusal, then runs the parity with OLMO_BF16=emulate
# (the same rounding points through gemm_bf16's fp32 fallback).
olmo_py_test(model_bf16_parity ${CMAKE_CURRENT_LIST_DIR}/bf16_parity.py)
set_tests_properties(model_bf16_parity PROPERTIES LABELS model)
