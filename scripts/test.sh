#!/usr/bin/env bash
# Installs everything, builds, and runs the whole test suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh
cd build
ctest --output-on-failure -j "${TUNE_TEST_JOBS:-2}" --timeout 900
cd ..
# Every parser's libFuzzer target for a short fixed time, from the committed
# seeds (longer runs: scripts/fuzz.sh SECONDS).
scripts/fuzz.sh "${TUNE_FUZZ_SECONDS:-20}"
# The core modules' unit tests again under ASan+UBSan: a second build of just
# those (./build-asan), about 12 CPU minutes; TUNE_TEST_SANITIZERS=0 skips it.
# The whole suite under the sanitizers: scripts/test-sanitizers.sh.
if [ "${TUNE_TEST_SANITIZERS:-1}" != 0 ]; then
  scripts/test-sanitizers.sh --core
fi
