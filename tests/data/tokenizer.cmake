# Tokenizer parity against PyPI tiktoken and HF tokenizers (tests/data/tokenizer_parity.py).
olmo_py_test(data_tokenizer_parity ${CMAKE_CURRENT_LIST_DIR}/tokenizer_parity.py)
set_tests_properties(data_tokenizer_parity PROPERTIES LABELS data TIMEOUT 300)
