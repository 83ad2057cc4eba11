# olmo.cpp entry points. Each installs only what it uses (scripts/install_deps.sh LEVEL; sizes in
# docs/dependencies.md): build -> Debian packages; corpus / demo -> + a small .venv without
# torch, the task data and the tokenizer; test / test-slow / bench -> + the reference venv.
#   make build  install the Debian packages, build (Release)
#   make test   install what is missing, build (Release), run the whole ctest suite (a test
#               that skipped although its prerequisite is on this machine fails the run:
#               tests/check_skips.py), then the sanitizer subset (test-asan-ci: ASan + UBSan
#               build of the parsers' tests); the tests labelled `slow` are left out
#   make test-slow  build, run only the `slow` tests (the 20,000-step soak, tests/README.md)
#   make demo   install, build, build the corpus, tokenize it, train configs/demo.yaml
#   make bench  the step benchmark against PyTorch (bench/compare.sh)
#   make docs   regenerate docs/config.md (every config key) from the field table
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: all deps deps-build deps-demo configure build test test-slow demo bench clean corpus docs
.PHONY: fuzz fuzz-run asan-configure test-asan test-asan-ci

all: build

deps:
	@bash scripts/install_deps.sh full

deps-build:
	@bash scripts/install_deps.sh build

deps-demo:
	@bash scripts/install_deps.sh demo

configure: deps-build
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -Wno-dev > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)

build: configure
	@set -o pipefail; MAKEFLAGS=--no-print-directory cmake --build $(BUILD) -j $(JOBS) 2>&1 | { grep -vE '^\[ *[0-9]+%\]|^(Consolidate|Scanning)' || true; }

test: deps build
	cd $(BUILD) && rc=0 && { ctest --output-on-failure -j 2 -LE slow --output-junit ctest-junit.xml $(CTEST_ARGS) || rc=$$?; } && \
	  { PYTHONPATH=$(CURDIR)/tests/lib python3 $(CURDIR)/tests/check_skips.py --source $(CURDIR) ctest-junit.xml || rc=1; } && exit $$rc
	@$(MAKE) --no-print-directory test-asan-ci

test-slow: deps build
	cd $(BUILD) && rc=0 && { ctest --output-on-failure -L slow --output-junit ctest-slow-junit.xml $(CTEST_ARGS) || rc=$$?; } && \
	  { PYTHONPATH=$(CURDIR)/tests/lib python3 $(CURDIR)/tests/check_skips.py --source $(CURDIR) ctest-slow-junit.xml || rc=1; } && exit $$rc

docs: build
	@$(BUILD)/olmo info --config-reference > docs/config.md && echo "wrote docs/config.md"

corpus: deps-demo build
	bash scripts/make_demo_data.sh

demo: corpus
	bash scripts/run_demo.sh

bench: deps build
	bash bench/compare.sh

clean:
	rm -rf $(BUILD) $(BUILD).configure.log

# ---- hardening (tests/fuzz/README.md) ----
#   make fuzz          clang + libFuzzer + ASan/UBSan fuzz targets in build-fuzz/fuzz/
#   make fuzz-run      every fuzzer for FUZZ_TIME seconds (default 600), one after the other
#   make test-asan     the whole project + the C++ suite (ctest -L cpp) under GCC ASan + UBSan
#   make test-asan-ci  the subset that `make test` (so .ci/run) runs (ASAN_CI_TESTS)
#   (both legs go through tests/check_skips.py, as `make test` does)
FUZZ_BUILD ?= build-fuzz
ASAN_BUILD ?= build-asan
FUZZ_TIME ?= 600
FUZZERS ?= yaml_config hf_config safetensors tokenizer_json tiktoken jsonl token_file checkpoint token_lines
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The `make test` subset: every fuzz replay (the parsers, compiled into the replay binaries) and the
# C++ tests of the libraries that need neither the kernels nor the trainer (core, ckpt,
# tokenizer, corpus JSONL, hostile token files), so the leg does not compile the whole project.
# corpus_hostile_jsonl (a 100 MB line: ~3 min under ASan) runs in the full leg only.
ASAN_CI_TESTS ?= ^(fuzz_replay_.*|ckpt_.*|core_.*|corpus_jsonl|data_hostile_tokens|tokenizer_tokenizer)$$

fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DOLMO_FUZZ=ON -Wno-dev > $(FUZZ_BUILD).configure.log 2>&1 || (cat $(FUZZ_BUILD).configure.log; exit 1)
	@set -o pipefail; MAKEFLAGS=--no-print-directory cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all 2>&1 | { grep -vE '^\[ *[0-9]+%\]|^(Consolidate|Scanning)' || true; }
	@echo "fuzzers: $(FUZZ_BUILD)/fuzz/fuzz_<parser>; run them with: make fuzz-run [FUZZ_TIME=s FUZZERS=...]"

fuzz-run: fuzz
	bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_TIME) $(FUZZERS)

asan-configure: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Release -DOLMO_SANITIZE=ON -Wno-dev > $(ASAN_BUILD).configure.log 2>&1 || (cat $(ASAN_BUILD).configure.log; exit 1)

test-asan: asan-configure
	@set -o pipefail; MAKEFLAGS=--no-print-directory cmake --build $(ASAN_BUILD) -j $(JOBS) 2>&1 | { grep -vE '^\[ *[0-9]+%\]|^(Consolidate|Scanning)' || true; }
	cd $(ASAN_BUILD) && rc=0 && { $(SAN_ENV) ctest -L cpp --output-on-failure -j 2 --output-junit ctest-junit.xml $(CTEST_ARGS) || rc=$$?; } && \
	  { PYTHONPATH=$(CURDIR)/tests/lib python3 $(CURDIR)/tests/check_skips.py --source $(CURDIR) ctest-junit.xml || rc=1; } && exit $$rc

test-asan-ci: asan-configure
	@set -o pipefail; targets=$$(cd $(ASAN_BUILD) && ctest -N -L cpp -R '$(ASAN_CI_TESTS)' | sed -nE 's/^ *Test +#[0-9]+: (fuzz_replay_.*)$$/\1/p; s/^ *Test +#[0-9]+: ([a-z0-9]+)_(.*)$$/test_\1_\2/p' | sort -u); \
	  MAKEFLAGS=--no-print-directory cmake --build $(ASAN_BUILD) -j $(JOBS) --target $$targets 2>&1 | { grep -vE '^\[ *[0-9]+%\]|^(Consolidate|Scanning)' || true; }
	cd $(ASAN_BUILD) && rc=0 && { $(SAN_ENV) ctest -L cpp -R '$(ASAN_CI_TESTS)' --output-on-failure -j 2 --output-junit ctest-junit.xml $(CTEST_ARGS) || rc=$$?; } && \
	  { PYTHONPATH=$(CURDIR)/tests/lib python3 $(CURDIR)/tests/check_skips.py --source $(CURDIR) ctest-junit.xml || rc=1; } && exit $$rc
