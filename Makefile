# olmo.cpp entry points.
#   make test   install what is missing, build (Release), run the whole ctest suite
#   make demo   install, build, build the corpus, tokenize it, train configs/demo.yaml
#   make bench  the step benchmark against PyTorch (bench/compare.sh)
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: all deps configure build test demo bench clean corpus

all: build

deps:
	@bash scripts/install_deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -Wno-dev > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)

build: configure
	@set -o pipefail; MAKEFLAGS= cmake --build $(BUILD) -j $(JOBS) 2>&1 | { grep -vE '^\[ *[0-9]+%\]|^(Consolidate|Scanning)' || true; }

test: build
	cd $(BUILD) && ctest --output-on-failure -j 2 $(CTEST_ARGS)

corpus: build
	bash scripts/make_demo_data.sh

demo: corpus
	bash scripts/run_demo.sh

bench: build
	bash bench/compare.sh

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
