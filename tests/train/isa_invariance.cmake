# Issue 46 item 1: training gives the same bits under every ISA this CPU can execute
# (OLMO_ISA=scalar/avx2/avx512) and 1, 2 and 3 threads (docs/invariance.md). ~80 s on 2 cores.
olmo_py_test(train_isa_invariance ${CMAKE_CURRENT_LIST_DIR}/isa_invariance_test.py)
set_tests_properties(train_isa_invariance PROPERTIES LABELS train TIMEOUT 600)
