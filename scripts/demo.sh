#!/usr/bin/env bash
# Installs everything, builds, and runs the default experiment (local
# backend, results in ./tune.db), then prints the best configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export PATH="$PWD/build/bin:$PATH"
tune run experiments/default.json "$@"
tune best --db tune.db --experiment "$(python3 -c 'import json,sys;print(json.load(open("experiments/default.json"))["name"])')"
