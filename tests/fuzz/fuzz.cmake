# Fuzz targets (tests/fuzz/README.md). Each tests/fuzz/<parser>_fuzz.cpp defines
# LLVMFuzzerTestOneInput over one parser's real entry point and is built twice:
#   * always: fuzz_replay_<parser> (with replay_main.cpp, any compiler), registered with ctest as
#     fuzz_replay_<parser>: replays tests/fuzz/corpus/<parser> (the seeds) and
#     tests/fuzz/regressions/<parser> (every input that ever crashed) through the same code;
#   * with -DOLMO_FUZZ=ON (clang, `make fuzz`, build-fuzz): fuzz_<parser>, a libFuzzer binary.
# Parser sources that sit in heavy libraries (model, train) are compiled into the target directly
# so the fuzz build does not need the kernels or the trainer.
set(_fz "${CMAKE_CURRENT_SOURCE_DIR}/fuzz")
set(_src "${CMAKE_SOURCE_DIR}/src")
# olmo_fuzz_target(PARSER SOURCES src... LIBS lib...)
function(olmo_fuzz_target parser)
  cmake_parse_arguments(F "" "" "SOURCES;LIBS" ${ARGN})
  set(srcs "${_fz}/${parser}_fuzz.cpp" ${F_SOURCES})
  add_executable(fuzz_replay_${parser} ${srcs} "${_fz}/replay_main.cpp")
  target_include_directories(fuzz_replay_${parser} PRIVATE "${_src}" "${_fz}")
  target_link_libraries(fuzz_replay_${parser} PRIVATE ${F_LIBS})
  file(MAKE_DIRECTORY "${_fz}/corpus/${parser}" "${_fz}/regressions/${parser}")
  add_test(NAME fuzz_replay_${parser}
           COMMAND fuzz_replay_${parser} "${_fz}/corpus/${parser}" "${_fz}/regressions/${parser}")
  set_tests_properties(fuzz_replay_${parser} PROPERTIES LABELS "fuzz;cpp" TIMEOUT 300)
  if(OLMO_FUZZ)
    add_executable(fuzz_${parser} ${srcs})
    target_include_directories(fuzz_${parser} PRIVATE "${_src}" "${_fz}")
    target_link_libraries(fuzz_${parser} PRIVATE ${F_LIBS})
    target_link_options(fuzz_${parser} PRIVATE -fsanitize=fuzzer)
    set_target_properties(fuzz_${parser} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/fuzz")
    add_dependencies(fuzz_all fuzz_${parser} fuzz_replay_${parser})
  endif()
endfunction()

if(OLMO_FUZZ)
  add_custom_target(fuzz_all)
endif()
olmo_fuzz_target(yaml_config SOURCES "${_src}/train/config.cpp" "${_src}/train/recipe_check.cpp"
                 LIBS olmo_data yaml-cpp)
olmo_fuzz_target(hf_config SOURCES "${_src}/model/config.cpp" LIBS olmo_core)
olmo_fuzz_target(safetensors SOURCES "${_src}/model/safetensors.cpp" LIBS olmo_core)
olmo_fuzz_target(tokenizer_json LIBS olmo_tokenizer)
olmo_fuzz_target(tiktoken LIBS olmo_tokenizer)
olmo_fuzz_target(jsonl LIBS olmo_corpus)
olmo_fuzz_target(token_file LIBS olmo_corpus olmo_data)
olmo_fuzz_target(checkpoint LIBS olmo_ckpt)
olmo_fuzz_target(token_lines LIBS olmo_data)

# Every GoogleTest binary (tests/<area>/<name>_test.cpp) also gets the label `cpp`, so the
# sanitizer leg can run the C++ suite without the Python oracles: ctest -L cpp.
file(GLOB _cpp_tests CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*/*_test.cpp")
foreach(src ${_cpp_tests})
  get_filename_component(_n ${src} NAME_WE)
  get_filename_component(_d ${src} DIRECTORY)
  get_filename_component(_a ${_d} NAME)
  string(REGEX REPLACE "_test$" "" _b ${_n})
  set_property(TEST ${_a}_${_b} APPEND PROPERTY LABELS cpp)
endforeach()
