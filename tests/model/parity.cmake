# Model tests beyond the GoogleTest binaries: HF transformers parity (logits, loss, gradients,
# every ISA path) through `olmo logits`, and `olmo info` counts / error messages.
olmo_py_test(model_hf_parity ${CMAKE_CURRENT_LIST_DIR}/parity.py)
set_tests_properties(model_hf_parity PROPERTIES LABELS model)

add_test(NAME model_info_7b COMMAND ${CMAKE_BINARY_DIR}/olmo info --preset olmo3-7b --json)
set_tests_properties(model_info_7b PROPERTIES LABELS model
  PASS_REGULAR_EXPRESSION "\"params_total\": 7298617344")
add_test(NAME model_info_7b_hf COMMAND ${CMAKE_BINARY_DIR}/olmo info --preset olmo3-7b --vocab hf)
set_tests_properties(model_info_7b_hf PROPERTIES LABELS model
  PASS_REGULAR_EXPRESSION "params_total +7,298,011,136")
add_test(NAME model_info_unknown_preset COMMAND ${CMAKE_BINARY_DIR}/olmo info --preset olmo3-8b)
set_tests_properties(model_info_unknown_preset PROPERTIES LABELS model
  PASS_REGULAR_EXPRESSION "unknown preset 'olmo3-8b' \\(valid presets: olmo3-7b, olmo3-32b")
add_test(NAME model_logits_missing_dir
  COMMAND ${CMAKE_BINARY_DIR}/olmo logits --model /nonexistent/model --tokens x --loss)
set_tests_properties(model_logits_missing_dir PROPERTIES LABELS model
  PASS_REGULAR_EXPRESSION "/nonexistent/model: model directory not found")
