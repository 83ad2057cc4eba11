# HF export + KV-cache generation: the C++ export test needs the Trainer (export -> import via
# trainer.init_from_hf -> export), and the Python oracle compares the exported demo-size model
# with transformers (logits, tokenizer, greedy generate(), bad input).
target_link_libraries(test_model_export PRIVATE olmo_interop)  # src/interop: hf_export, inference_model
olmo_py_test(model_export_parity ${CMAKE_CURRENT_LIST_DIR}/export_parity.py)
set_tests_properties(model_export_parity PROPERTIES LABELS model)
