# docs/config.md is the generated reference of every config key: the checked-in file must equal
# what `olmo info --config-reference` prints (regenerate: make docs).
add_test(NAME train_config_reference
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/config_reference_check.sh
                 ${CMAKE_BINARY_DIR}/olmo ${CMAKE_SOURCE_DIR})
set_tests_properties(train_config_reference PROPERTIES LABELS train TIMEOUT 60)
