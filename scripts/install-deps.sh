#!/usr/bin/env bash
# The one installer of system packages (Debian). Idempotent: quiet and fast
# when everything is already there.
# Usage: scripts/install-deps.sh [--no-torch] [--kubectl] [--test] [--bench]
#   (none)   what the build and the demo need (scripts/demo.sh)
#   --test   also what only the test suite needs: headless Chromium for the
#            dashboard's browser tests, the PostgreSQL server, bindfs
#            (a FUSE mount), clang with its sanitizer and libFuzzer runtimes, kubectl and Python's venv/yaml/websocket
#            for the Kubernetes and tracking tests, python3-torch for the
#            plain-PyTorch example's test (tests/python) (scripts/test.sh)
#   --kubectl  kubectl too (the Kubernetes backend's client; --test implies
#            it; k8s/Dockerfile's runtime image)
#   --bench  also the Python peers the benchmarks run side by side
#            (python3-torch for bench/lora_ref.py, python3-optuna for
#            bench/tpe_optuna.py and bench/asha_optuna.py); not needed by
#            the build, the demo or the tests
set -euo pipefail

want_torch=1
want_test=0
want_kubectl=0
want_bench=0
for a in "$@"; do
  case "$a" in
    --no-torch) want_torch=0 ;;
    --test) want_test=1; want_kubectl=1 ;;
    --kubectl) want_kubectl=1 ;;
    --bench) want_bench=1 ;;
    *) echo "install-deps.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done

pkgs=(
  build-essential cmake pkg-config git python3 ccache
  libboost-dev libboost-filesystem-dev nlohmann-json3-dev libeigen3-dev liblbfgspp-dev
  libsqlitecpp-dev libsqlite3-dev sqlite3 libcli11-dev catch2 bc time
  libpcre2-dev libutf8proc-dev libyaml-cpp-dev
  libcpp-httplib-dev libjs-chart.js zlib1g-dev
  libpq-dev
)
if [ "$want_test" = 1 ]; then
  # The dashboard's browser tests (headless Chromium over DevTools): about
  # 120 MB to fetch, 410 MB installed. clang: the fuzzers and sanitizers.
  pkgs+=(chromium python3-websocket clang libclang-rt-dev python3-venv python3-yaml)
  # PostgreSQL's server binaries: the PostgreSQL storage tests start a
  # throwaway server (tests/storage/postgres_server.h).
  pkgs+=(postgresql)
  # bindfs: a real FUSE mount for the network-filesystem refusal
  # (tests/storage/network_fs_test.cc).
  pkgs+=(bindfs)
  # Debian's PyTorch for /usr/bin/python3: experiments/torch_loop/train.py
  # tuned end to end (tests/python/torch_loop_e2e_test.cc).
  pkgs+=(python3-torch)
fi
if [ "$want_torch" = 1 ]; then
  # libtorch (CPU) with Gloo; the OpenMP OpenBLAS (the pthread build fights
  # libtorch's threads); PCRE2 and utf8proc for the tokenizer; Debian text
  # corpora for the demo data set.
  pkgs+=(libtorch-dev libgloo-dev libopenblas0-openmp libopenblas-openmp-dev
         libpcre2-dev libutf8proc-dev fortunes wordnet-base)
fi
if [ "$want_bench" = 1 ]; then
  pkgs+=(python3-torch python3-optuna)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "$want_kubectl" = 1 ] && ! command -v kubectl >/dev/null 2>&1; then
  missing+=(kubernetes-client)
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# libtorch does its matrix products through libblas.so.3: select OpenBLAS
# (OpenMP build) instead of the reference BLAS.
if [ "$want_torch" = 1 ]; then
  blas=$(update-alternatives --list libblas.so.3-x86_64-linux-gnu 2>/dev/null | grep openblas | grep -m1 openmp || true)
  if [ -n "$blas" ] && [ "$(readlink -f /etc/alternatives/libblas.so.3-x86_64-linux-gnu)" != "$(readlink -f "$blas")" ]; then
    $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu "$blas" >/dev/null
    lapack=$(update-alternatives --list liblapack.so.3-x86_64-linux-gnu 2>/dev/null | grep openblas | grep -m1 openmp || true)
    [ -n "$lapack" ] && $SUDO update-alternatives --set liblapack.so.3-x86_64-linux-gnu "$lapack" >/dev/null
    echo "install-deps: selected OpenBLAS (OpenMP) as libblas.so.3"
  fi
fi
