#!/usr/bin/env bash
# The whole test suite against the libtorch of PyPI's CUDA torch wheel:
# builds ./build-cuda with scripts/build-cuda.sh (the first run downloads
# about 4 GB into a cached virtual environment), then runs every CTest test
# there. Without a GPU everything runs on the CPU (a CUDA libtorch runs
# without one), so the CPU goldens and every refusal are checked against
# libtorch 2.x too. Not part of CI (.ci/run): the download is too big.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build-cuda.sh
objdump -p build-cuda/bin/lora_train | grep 'NEEDED.*libtorch_cuda' > /dev/null || {
  echo "test-cuda: build-cuda/bin/lora_train does not link libtorch_cuda" >&2
  exit 1
}
ldd build-cuda/bin/lora_train | grep 'libnccl' > /dev/null || {
  echo "test-cuda: build-cuda/bin/lora_train does not load libnccl" >&2
  exit 1
}
cd build-cuda
ctest --output-on-failure -j "${TUNE_TEST_JOBS:-2}" --timeout 900
