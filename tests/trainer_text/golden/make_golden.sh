#!/usr/bin/env bash
# Remakes the tokenizer fixtures of tests/trainer_text/golden (committed; CI
# does not run this). Creates once a virtual environment with the pinned
# Hugging Face `tokenizers` under ${XDG_CACHE_HOME:-~/.cache}/tune/, then runs
# make_golden.py with it; arguments go to make_golden.py:
#
#   tests/trainer_text/golden/make_golden.sh [--bpe-train build/bin/bpe_train]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tokenizers_version=0.23.3
venv="${XDG_CACHE_HOME:-$HOME/.cache}/tune/tokenizer-golden-venv-$tokenizers_version"
if ! "$venv/bin/python" -c "import tokenizers" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "tokenizers==$tokenizers_version"
fi
exec "$venv/bin/python" "$here/make_golden.py" "$@"
