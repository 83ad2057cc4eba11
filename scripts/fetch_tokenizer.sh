#!/usr/bin/env bash
# Fetches OpenAI's original cl100k_base.tiktoken rank file from the PyPI `litellm` wheel
# (pip download --no-deps; nothing is installed), verifies its sha256 (the hash tiktoken
# publishes), and places it at
#   data/tokenizer/cl100k_base.tiktoken             (our tokenizer's default)
#   data/tiktoken_cache/9b5ad71b2ce5302211f9c61530b329a4922fc6a4  (tiktoken's offline cache key)
set -euo pipefail
cd "$(dirname "$0")/.."
SHA=223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7
KEY=9b5ad71b2ce5302211f9c61530b329a4922fc6a4
OUT=data/tokenizer/cl100k_base.tiktoken
if [ -f "$OUT" ] && [ "$(sha256sum "$OUT" | cut -d' ' -f1)" = "$SHA" ] && [ -f "data/tiktoken_cache/$KEY" ]; then
  exit 0
fi
echo "[deps] fetching cl100k_base rank file from the litellm wheel"
mkdir -p .cache/litellm data/tokenizer data/tiktoken_cache
LITELLM_VERSION=${LITELLM_VERSION:-1.76.1}
ls .cache/litellm/litellm-*.whl >/dev/null 2>&1 || \
  .venv/bin/pip download -q --disable-pip-version-check --no-deps -d .cache/litellm "litellm==$LITELLM_VERSION"
WHL=$(ls .cache/litellm/litellm-*.whl | head -1)
.venv/bin/python - "$WHL" "$OUT.tmp" <<'PY'
import sys, zipfile
name = "litellm/litellm_core_utils/tokenizers/9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], "wb") as f:
    f.write(z.read(name))
PY
GOT=$(sha256sum "$OUT.tmp" | cut -d' ' -f1)
if [ "$GOT" != "$SHA" ]; then
  echo "error: $WHL: cl100k_base rank file has sha256 $GOT, expected $SHA" >&2
  rm -f "$OUT.tmp"; exit 1
fi
mv "$OUT.tmp" "$OUT"
cp "$OUT" "data/tiktoken_cache/$KEY"
