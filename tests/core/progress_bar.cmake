# The one progress bar (issue 38 item 7). core_progress_bar (the GoogleTest binary) is registered
# by the loop in tests/CMakeLists.txt.
# core_progress_bar_cli: export, audit, evaluate, prepare with stderr on a pseudo-terminal vs a
# pipe (bar drawn / nothing, stdout identical) and train with trainer.progress=on / off.
# Measured 13 s on 2 busy cores (three tiny trainings' worth of work).
olmo_py_test(core_progress_bar_cli ${CMAKE_CURRENT_LIST_DIR}/progress_bar_cli_test.py)
set_tests_properties(core_progress_bar_cli PROPERTIES LABELS core TIMEOUT 180)
# meta_one_progress_bar: no file of src/ or cli/ but src/core/progress_bar.cpp draws with "\r".
find_program(OLMO_SYSTEM_PYTHON3 python3)  # (tests/CMakeLists.txt finds it after the areas)
add_test(NAME meta_one_progress_bar
         COMMAND ${OLMO_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/one_progress_bar.py
                 ${CMAKE_SOURCE_DIR})
set_tests_properties(meta_one_progress_bar PROPERTIES LABELS meta TIMEOUT 60)
