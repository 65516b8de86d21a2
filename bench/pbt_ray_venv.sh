#!/usr/bin/env bash
# Creates (once) the virtual environment with Ray Tune 2.60.0 that
# bench/pbt_ray.py needs, and prints its python. Kept at $TUNE_RAY_VENV
# (default ${XDG_CACHE_HOME:-$HOME/.cache}/tune/venv-ray).
set -euo pipefail
venv=${TUNE_RAY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tune/venv-ray}
if ! "$venv/bin/python" -c 'import ray, ray.tune, sys; sys.exit(ray.__version__ != "2.60.0")' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "ray[tune]==2.60.0" >&2
fi
echo "$venv/bin/python"
