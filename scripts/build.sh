#!/usr/bin/env bash
# Configure and build into ./build (Release with debug info), two jobs.
# Extra arguments go to cmake's configure step. TUNE_BUILD_TARGETS (space
# separated) builds only those targets (the demo needs tune, lora_train and
# bpe_train, not the test suite).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
targets=()
for t in ${TUNE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build -j "${TUNE_BUILD_JOBS:-2}" "${targets[@]}"
