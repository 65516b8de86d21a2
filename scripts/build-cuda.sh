#!/usr/bin/env bash
# Builds everything into ./build-cuda against the libtorch inside PyPI's
# CUDA `torch` wheel (instead of Debian's CPU libtorch 1.13), so lora_train
# links libtorch_cuda and NCCL and can train on NVIDIA GPUs. Works on a
# machine without a GPU too: the binaries then run on the CPU.
#
#   scripts/build-cuda.sh [extra cmake configure arguments]
#
# The wheel (about 4 GB with its CUDA runtime, cuDNN and NCCL wheels) goes
# into a virtual environment created once and reused:
#   TUNE_TORCH_VERSION  torch version to install (default 2.15.0)
#   TUNE_TORCH_VENV     where (default ${XDG_CACHE_HOME:-~/.cache}/tune/torch-<version>)
#   TUNE_BUILD_TARGETS  only these targets (space separated)
#   TUNE_BUILD_JOBS     parallel build jobs (default 2)
# Needs the packages of scripts/install-deps.sh, python3 with venv, and the
# CUDA toolkit (nvcc and headers under /usr/local/cuda or on PATH), which
# libtorch's CMake package asks for even when only linking.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

version="${TUNE_TORCH_VERSION:-2.15.0}"
venv="${TUNE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tune/torch-$version}"
py="$venv/bin/python"

# --- the wheel, once ------------------------------------------------------
if ! "$py" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$version')" 2>/dev/null; then
  echo "build-cuda: installing torch $version (CUDA) into $venv; a one-time download of about 4 GB" >&2
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "torch==$version"
fi
torch_dir=$(PYTHONWARNINGS=ignore "$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
cmake_prefix=$(PYTHONWARNINGS=ignore "$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
torch_lib="$torch_dir/lib"
[ -f "$torch_lib/libtorch_cuda.so" ] || {
  echo "build-cuda: $torch_lib has no libtorch_cuda.so: the torch $version wheel in $venv is a CPU-only build" >&2
  exit 1
}

# The CUDA runtime, cuDNN, NCCL, ... wheels put their libraries under
# site-packages/nvidia/*/lib (CUDA 13 wheels: nvidia/cu13/lib). libtorch_cuda
# needs them at link time (-rpath-link: otherwise the linker finds an older
# system NCCL and fails on ncclSignal / ncclWinGetUserPtr) and at run time
# (-rpath).
site=$(dirname "$torch_dir")
mapfile -t nv_libs < <(find "$site/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | sort)
link_flags="-Wl,-rpath,$torch_lib"
for d in "${nv_libs[@]}"; do link_flags+=" -Wl,-rpath-link,$d -Wl,-rpath,$d"; done

# NCCL's header from its wheel, not an older one in the CUDA toolkit's
# include directory: ProcessGroupNCCL.hpp compiles against the version it
# links (NCCL_VERSION_CODE guards its features).
nccl_include=""
[ -f "$site/nvidia/nccl/include/nccl.h" ] && nccl_include="$site/nvidia/nccl/include"

# The CUDA toolkit, when it is not on PATH already.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# lora_train compiles no CUDA kernels; a fixed architecture list only stops
# libtorch's CMake from compiling a GPU probe (which CMake 3.25 cannot build
# with nvcc 13: "CUDA20" dialect). A cache variable, so that the re-configure
# of a later `cmake --build build-cuda` keeps it too.
arch_list="${TORCH_CUDA_ARCH_LIST:-8.0;9.0}"

# --- configure and build ----------------------------------------------------
# find_package(Torch) resolves TORCH_LIBRARY and c10_LIBRARY to Debian's
# libtorch.so / libc10.so when libtorch-dev is installed, silently mixing two
# libtorch versions: pin them into the wheel.
cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$cmake_prefix" \
  -DCMAKE_CXX_FLAGS="" -DTUNE_NCCL_INCLUDE_DIR="$nccl_include" -DTORCH_CUDA_ARCH_LIST="$arch_list" \
  -DTORCH_LIBRARY="$torch_lib/libtorch.so" \
  -Dc10_LIBRARY="$torch_lib/libc10.so" \
  -DCMAKE_EXE_LINKER_FLAGS="$link_flags" \
  -DCMAKE_SHARED_LINKER_FLAGS="$link_flags" \
  "$@" >/dev/null
targets=()
for t in ${TUNE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build-cuda -j "${TUNE_BUILD_JOBS:-2}" "${targets[@]}"
echo "build-cuda: built $root/build-cuda against torch $version from $venv" >&2
