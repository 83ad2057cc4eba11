# Source rules of the one Runtime (issue 36 item 2; tests/core/runtime_rules.py, measured 0.1 s
# each): core_no_getenv -- nothing in src/ or cli/ reads the environment but
# src/core/runtime.cpp; core_kernels_no_print -- nothing under src/kernels prints.
olmo_py_test(core_no_getenv ${CMAKE_CURRENT_LIST_DIR}/runtime_rules.py getenv)
olmo_py_test(core_kernels_no_print ${CMAKE_CURRENT_LIST_DIR}/runtime_rules.py kernel_prints)
set_tests_properties(core_no_getenv core_kernels_no_print PROPERTIES LABELS "core;meta" TIMEOUT 30)
