#!/usr/bin/env bash
# Configure and build into ./build (Release with debug info), two jobs.
# Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "${TUNE_BUILD_JOBS:-2}"
