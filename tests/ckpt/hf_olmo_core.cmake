# HF checkpoint <-> OLMo-core run in one command each (issue 38 item 6): `olmo ckpt
# hf-to-olmo-core` / `olmo-core-to-hf` on a transformers-saved tiny model, checked with OLMo-core's
# own load_keys and Trainer (the resumed run trains bitwise like OLMo-core from the HF dir) and
# the safetensors package (the round trip is bitwise); bad input exits 1 with nothing written.
# Measured 58 s (two 2-step OLMo-core runs, 2-core VM): TIMEOUT 5x.
olmo_py_test(ckpt_hf_olmo_core ${CMAKE_SOURCE_DIR}/tests/ckpt/hf_olmo_core_test.py)
set_tests_properties(ckpt_hf_olmo_core PROPERTIES LABELS ckpt TIMEOUT 300)
