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
