#!/usr/bin/env bash
# Creates (once, cached) the Python virtual environment with torch,
# transformers, PEFT and accelerate (hf-requirements.txt, every package
# pinned) that the Hugging Face example (experiments/hf_trainer) and its
# end-to-end tests run on, and prints the path of its python. Idempotent:
# when the cached environment matches its pinned requirements it only
# prints the path. The trial helper itself (python/tune_trial) is not
# installed: the experiments put python/ on PYTHONPATH.
#
# Size: about 6 GB installed and 3 GB downloaded (PyPI's Linux torch wheel
# brings its CUDA libraries even though the tests use the CPU); pip's own
# cache is not used, so the download is not kept twice. A few minutes on
# two cores with a fast network.
#
# Cache: ${TUNE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tune}/venv-hf
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${TUNE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tune}"
req="$here/hf-requirements.txt"
venv="$cache/venv-hf"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ "$(cat "$venv/.requirements-sha256" 2>/dev/null || true)" != "$want" ]; then
  mkdir -p "$cache"
  exec 9>"$venv.lock"
  flock 9  # tests may ask for it at the same time
  if [ "$(cat "$venv/.requirements-sha256" 2>/dev/null || true)" != "$want" ]; then
    echo "hf-venv: creating $venv (pip install -r $(basename "$req"))" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir -r "$req" >&2
    echo "$want" > "$venv/.requirements-sha256"
  fi
fi
echo "$venv/bin/python"
