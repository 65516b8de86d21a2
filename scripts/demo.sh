#!/usr/bin/env bash
# Installs everything, builds, and runs the default experiment (local
# backend, results in ./tune.db), then prints the best configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export PATH="$PWD/build/bin:$PATH"
# --resume: a second run continues (or just reports) instead of refusing.
tune run experiments/default.json --resume "$@"
tune best --db tune.db --experiment "$(sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' experiments/default.json | head -1)"
