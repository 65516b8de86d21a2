#!/usr/bin/env bash
# Creates (once) the virtual environment with Optuna 5.0.0, CPU torch,
# scipy and greenlet that bench/gp_optuna.py and
# tests/search/golden/make_gp_golden.py need, and prints its python.
# greenlet (in optuna[optional]) lets GPSampler run its 10 local searches as
# one batch, as a full install does. torch is a large download (the PyPI
# wheel brings its CUDA libraries; only its CPU side is used). Kept at
# $TUNE_GP_VENV (default ${XDG_CACHE_HOME:-$HOME/.cache}/tune/venv-gp).
set -euo pipefail
venv=${TUNE_GP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tune/venv-gp}
if ! "$venv/bin/python" -c 'import optuna, torch, scipy, greenlet, sys; sys.exit(optuna.__version__ != "5.0.0")' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "optuna==5.0.0" scipy torch greenlet >&2
fi
echo "$venv/bin/python"
