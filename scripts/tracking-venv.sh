#!/usr/bin/env bash
# Creates (once, cached) the Python virtual environment with the outside
# trackers' own software that the tracking tests check tune's output
# against (scripts/tracking-requirements.txt, pinned), and prints the path
# of its python. Idempotent: when the cached environment matches the
# requirements it only prints the path.
# Cache: ${TUNE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tune}/venv-tracking
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
req="$here/tracking-requirements.txt"
cache="${TUNE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tune}"
venv="$cache/venv-tracking"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ "$(cat "$venv/.requirements-sha256" 2>/dev/null || true)" != "$want" ]; then
  mkdir -p "$cache"
  exec 9>"$cache/venv-tracking.lock"
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
