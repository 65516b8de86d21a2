#!/usr/bin/env bash
# Installs everything, builds, and runs the whole test suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "${TUNE_TEST_JOBS:-2}" --timeout 900
