# Tokenizer parity against PyPI tiktoken and HF tokenizers (tests/tokenizer/tokenizer_parity.py).
olmo_py_test(tokenizer_parity ${CMAKE_CURRENT_LIST_DIR}/tokenizer_parity.py)
set_tests_properties(tokenizer_parity PROPERTIES LABELS tokenizer TIMEOUT 300)
