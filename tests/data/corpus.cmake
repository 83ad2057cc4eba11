# Corpus / prepare checks that need the olmo binary or Python oracles (tiktoken, OLMo-core).
olmo_py_test(data_prepare_parity ${CMAKE_CURRENT_LIST_DIR}/prepare_parity.py)
