# Model tests beyond the GoogleTest binaries: HF transformers parity (logits, loss, gradients,
# every ISA path) through `olmo logits`, and `olmo info` counts / error messages.
olmo_py_test(model_hf_parity ${CMAKE_CURRENT_LIST_DIR}/parity.py)
set_tests_properties(model_hf_parity PROPERTIES LABELS model)

olmo_cli_test(model_info_7b 0 "\"params_total\": 7298617344"
  ${CMAKE_BINARY_DIR}/olmo info --preset olmo3-7b --json)
olmo_cli_test(model_info_7b_hf 0 "params_total +7,298,011,136"
  ${CMAKE_BINARY_DIR}/olmo info --preset olmo3-7b --vocab hf)
olmo_cli_test(model_info_unknown_preset error
  "unknown preset 'olmo3-8b' \\(valid presets: olmo3-7b, olmo3-32b"
  ${CMAKE_BINARY_DIR}/olmo info --preset olmo3-8b)
olmo_cli_test(model_logits_missing_dir error "/nonexistent/model: model directory not found"
  ${CMAKE_BINARY_DIR}/olmo logits --model /nonexistent/model --tokens x --loss)
set_tests_properties(model_info_7b model_info_7b_hf model_info_unknown_preset
  model_logits_missing_dir PROPERTIES LABELS model)
