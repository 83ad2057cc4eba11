# README distributed-training claims end to end (tests/distributed/claims_test.py): the per-rank memory
# plan and bytes sent of `olmo info --processes N` / `olmo train --dry-run` against hand-worked
# figures, what the ranks of a 2-process job actually hold (AdamW moments 8P/N, the sharded
# exact accumulator 8 B/parameter/N), and a second 2-process job refused with the holder's pid.
olmo_mpi_py_test(dist_claims ${CMAKE_CURRENT_LIST_DIR}/claims_test.py)
set_tests_properties(dist_claims PROPERTIES LABELS dist)
