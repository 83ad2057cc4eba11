# The olmo command line as a parser (tests/cli/cli_test.py, issue 38): every command's --help and
# `olmo help CMD`, no arguments, an unknown flag / subcommand with the nearest suggested, a missing
# required argument, a bad value (exit 2, nothing written), --flag=value == --flag value,
# --dry-run=0 / --dryrun, --version, the exit-code table, and every build/olmo command line of
# README.md and docs/ parsed (train --dry-run, the rest --parse-only). ~150 runs of build/olmo,
# measured 3 s; 60 s allows a busy machine.
olmo_py_test(cli_parser ${CMAKE_CURRENT_LIST_DIR}/cli_test.py)
set_tests_properties(cli_parser PROPERTIES LABELS cli TIMEOUT 60)

# `olmo info --runtime` (issue 36): the resolved runtime context, with model.precision=auto's pick
# and where it came from (default / probe / config) and the environment variables it read.
olmo_cli_test(cli_info_runtime 0 "precision = (fp32|bf16_mixed) +\\[(default|probe|config|test)"
              ${CMAKE_BINARY_DIR}/olmo info --runtime)
set_tests_properties(cli_info_runtime PROPERTIES LABELS cli)
olmo_cli_test(cli_info_runtime_env 0 "isa = scalar +\\[env OLMO_ISA\\]"
              env OLMO_ISA=scalar ${CMAKE_BINARY_DIR}/olmo info --runtime)
set_tests_properties(cli_info_runtime_env PROPERTIES LABELS cli)

# README's "Train on your own text" run as written (issue 48): olmo prepare on generated text and
# JSONL, olmo train configs/quickstart.yaml (2 steps), the resume. Measured 190 s wall (28 s of
# CPU) on the 2 cores shared with other builds.
olmo_py_test(cli_quickstart ${CMAKE_CURRENT_LIST_DIR}/quickstart_test.py)
set_tests_properties(cli_quickstart PROPERTIES LABELS cli TIMEOUT 900)

# The demo's duration is quoted in one place (README.md); every other quote of it in the docs,
# configs and scripts is one of README's figures (tests/cli/demo_time_test.py, < 1 s).
olmo_py_test(cli_demo_time ${CMAKE_CURRENT_LIST_DIR}/demo_time_test.py)
set_tests_properties(cli_demo_time PROPERTIES LABELS cli TIMEOUT 60)

# docs/training.md's "What you can train" table is `olmo info --plan`'s output (issue 48, < 1 s).
olmo_py_test(cli_info_plan_docs ${CMAKE_CURRENT_LIST_DIR}/info_plan_docs_test.py)
set_tests_properties(cli_info_plan_docs PROPERTIES LABELS cli TIMEOUT 60)

# Every build/olmo command line of README.md and docs/ executed in a sandbox (issue 48): the
# marked ones ("# needs ...") in their dry-run form. Several minutes: about 30 olmo runs, three
# of them under mpirun.
olmo_mpi_py_test(cli_doc_lines ${CMAKE_CURRENT_LIST_DIR}/doc_lines_test.py)
set_tests_properties(cli_doc_lines PROPERTIES LABELS cli TIMEOUT 1800)
