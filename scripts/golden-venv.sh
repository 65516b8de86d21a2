#!/usr/bin/env bash
# Creates (once) the Python environment that remakes the trainer's golden
# fixtures (tests/trainer/golden/make_golden.py) and prints its python.
# Not needed by the build, the demo or CI: the fixtures are committed.
#
# Usage: PY=$(scripts/golden-venv.sh) && "$PY" tests/trainer/golden/make_golden.py
# The venv lives in ${TUNE_GOLDEN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tune/golden-venv};
# a venv made with other pins is made again.
set -euo pipefail

PINS=(torch==2.9.1 transformers==5.23.0 peft==0.21.2 safetensors tokenizers)
venv="${TUNE_GOLDEN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tune/golden-venv}"
stamp="$venv/.pins"
want="${PINS[*]}"

if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --upgrade pip >&2
  "$venv/bin/pip" install --quiet "${PINS[@]}" >&2
  echo "$want" >"$stamp"
fi
echo "$venv/bin/python"
