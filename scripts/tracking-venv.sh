#!/usr/bin/env bash
# Creates (once, cached) a Python virtual environment with an outside
# tracker's own software that the tracking tests check tune's output
# against, and prints the path of its python. Idempotent: when the cached
# environment matches its pinned requirements it only prints the path.
#   tracking-venv.sh [tensorboard]  TensorBoard's reader (tracking-requirements.txt)
#   tracking-venv.sh mlflow         MLflow's server and client (mlflow-requirements.txt)
# Cache: ${TUNE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tune}/venv-tracking
# (venv-mlflow for mlflow)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${TUNE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tune}"
case "${1:-tensorboard}" in
  tensorboard) req="$here/tracking-requirements.txt"; venv="$cache/venv-tracking" ;;
  mlflow) req="$here/mlflow-requirements.txt"; venv="$cache/venv-mlflow" ;;
  *) echo "tracking-venv: expected tensorboard or mlflow, got '$1'" >&2; exit 2 ;;
esac
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ "$(cat "$venv/.requirements-sha256" 2>/dev/null || true)" != "$want" ]; then
  mkdir -p "$cache"
  exec 9>"$venv.lock"
  flock 9  # tests may ask for it at the same time
  if [ "$(cat "$venv/.requirements-sha256" 2>/dev/null || true)" != "$want" ]; then
    echo "tracking-venv: creating $venv (pip install -r $(basename "$req"))" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2
    echo "$want" > "$venv/.requirements-sha256"
  fi
fi
echo "$venv/bin/python"
