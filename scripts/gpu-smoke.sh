#!/usr/bin/env bash
# Checks GPU trials end to end on a machine with one or more NVIDIA GPUs
# (it stops with a sentence elsewhere). Builds ./build-cuda with
# scripts/build-cuda.sh, then:
#   1. the transformers+PEFT goldens on cuda: fp32 within 1e-4, bf16 within
#      the bf16 tolerances argued in tests/trainer/device_test.cc
#      (TUNE_TEST_DEVICE=cuda), and the rest of the trainer tests, whose
#      lora_train runs pick the GPU by themselves (--device auto);
#   2. trainer_bench tokens/s against bench/lora_ref.py (the wheel's PyTorch)
#      on the same GPU, fp32 and bf16, tiny and small models;
#   3. with two or more GPUs: a 2-rank NCCL fine-tune against 1 rank with
#      twice the batch (the same loss within 1e-4);
#   4. `tune run` of experiments/default.json with resources_per_worker.gpu 1
#      (4 trials, 1 worker each), so the local backend hands each trial its
#      own CUDA_VISIBLE_DEVICES and lora_train --device auto takes it.
# Writes a summary to gpu-smoke.out (git-ignored) and prints it; record the
# numbers in bench/RESULTS.md.
#
#   scripts/gpu-smoke.sh [REPEATS]     (default 3 benchmark repeats)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
repeats="${1:-3}"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "gpu-smoke: no NVIDIA GPU here (nvidia-smi is missing or lists none); run it on a machine with one" >&2
  exit 1
fi
gpus=$(nvidia-smi -L | grep -c '^GPU ')
out="$root/gpu-smoke.out"
: > "$out"
say() { echo "$*" | tee -a "$out"; }
say "gpu-smoke: $(date -u +%FT%TZ), $gpus GPU(s):"
nvidia-smi -L | tee -a "$out"

scripts/install-deps.sh
scripts/build-cuda.sh
version="${TUNE_TORCH_VERSION:-2.15.0}"
venv="${TUNE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tune/torch-$version}"
py="$venv/bin/python"
bin="$root/build-cuda/bin"

# --- 1. goldens and trainer tests on the GPU ---------------------------------
say "== 1. goldens on cuda (fp32 1e-4; bf16 per tests/trainer/device_test.cc)"
TUNE_TEST_DEVICE=cuda "$bin/trainer_test" "[device]" 2>&1 | tail -3 | tee -a "$out"
say "== 1b. trainer tests (lora_train --device auto: on the GPU)"
"$bin/trainer_test" 2>&1 | tail -3 | tee -a "$out"

# --- 2. throughput: C++ against PyTorch on the same GPU -----------------------
say "== 2. trainer_bench vs bench/lora_ref.py ($("$py" -c 'import torch; print("torch", torch.__version__)'))"
declare -A sizes=(
  [tiny]="--d_model 128 --n_layers 2 --n_heads 4 --seq_len 128 --batch 8 --steps 50 --warmup 5"
  [small]="--d_model 512 --n_layers 8 --n_heads 8 --seq_len 256 --batch 8 --steps 30 --warmup 5"
)
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for rep in $(seq 1 "$repeats"); do
  for size in tiny small; do
    for dtype in fp32 bf16; do
      # shellcheck disable=SC2086
      "$py" "$root/bench/lora_ref.py" ${sizes[$size]} --device cuda --dtype "$dtype" --threads 2 --quiet \
        --tag "$size-$dtype" | sed -n 's/^RESULT //p' |
        "$py" -c 'import json,sys; r=json.load(sys.stdin); r["impl"]="python"; print(json.dumps(r))' >> "$rows"
      # shellcheck disable=SC2086
      "$bin/trainer_bench" ${sizes[$size]} --device cuda --dtype "$dtype" --threads 2 --tag "$size-$dtype" \
        2>/dev/null | sed -n 's/^RESULT //p' >> "$rows"
    done
  done
done
"$py" - "$rows" <<'PY' | tee -a "$out"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for tag in sorted({r["tag"] for r in rows}):
    med = {}
    for impl in ("python", "cpp"):
        v = [r["tokens_per_s"] for r in rows if r["tag"] == tag and r["impl"] == impl]
        med[impl] = statistics.median(v) if v else float("nan")
    print("%-12s python %10.0f tok/s | C++ %10.0f tok/s | C++/python %.2fx (median of %d)" % (
        tag, med["python"], med["cpp"], med["cpp"] / med["python"], len(v)))
PY

# --- 3. two ranks over NCCL ---------------------------------------------------
work=$(mktemp -d)
trap 'rm -f "$rows"; rm -rf "$work"' EXIT
for i in $(seq 0 47); do
  printf '{"instruction": "Repeat item %d.", "response": "alpha beta gamma %d"}\n' $((i % 4)) $((i % 4))
done > "$work/train.jsonl"
flags=(--base "$root/tests/trainer/golden/llama" --data "$work/train.jsonl" --seq-len 96 --lora-r 4
       --target-modules q_proj,v_proj,o_proj,up_proj --max-steps 4 --eval-every 2 --lr 1e-2 --lora-dropout 0)
if [ "$gpus" -ge 2 ]; then
  say "== 3. 2-rank NCCL run against 1 rank with twice the batch"
  "$bin/lora_train" "${flags[@]}" --batch-size 4 --output "$work/one" > "$work/one.out" 2> "$work/one.err"
  port=$((29600 + RANDOM % 1000))
  env WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=1 LOCAL_RANK=1 \
    "$bin/lora_train" "${flags[@]}" --backend nccl --batch-size 2 --output "$work/two" > /dev/null 2> "$work/r1.err" &
  env WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=0 LOCAL_RANK=0 \
    "$bin/lora_train" "${flags[@]}" --backend nccl --batch-size 2 --output "$work/two" > "$work/two.out" 2> "$work/r0.err"
  wait
  grep -h "fine-tuning on" "$work/r0.err" | tee -a "$out"
  "$py" - "$work/one.out" "$work/two.out" <<'PY' | tee -a "$out"
import re, sys
def last(path):
    vals = re.findall(r"eval_loss=([-0-9.eE+]+)", open(path).read())
    return float(vals[-1])
one, two = last(sys.argv[1]), last(sys.argv[2])
ok = abs(one - two) <= 1e-4 * abs(one)
print("1 rank eval_loss %.6f, 2 NCCL ranks %.6f: %s" % (one, two, "same within 1e-4" if ok else "DIFFERENT"))
sys.exit(0 if ok else 1)
PY
else
  say "== 3. skipped: one GPU (a 2-rank NCCL run needs two)"
fi

# --- 4. tune run with one GPU per trial ----------------------------------------
say "== 4. tune run experiments/default.json with resources_per_worker.gpu 1"
export PATH="$bin:$PATH"
scripts/make-demo-model.sh --lora-train "$bin/lora_train"
"$py" - "$root" "$work/gpu.json" <<'PY'
import json, sys
root, dest = sys.argv[1], sys.argv[2]
spec = json.load(open(root + "/experiments/default.json"))
spec["name"] = "default-gpu"
spec["limits"]["max_trials"] = 4
spec["limits"]["max_concurrent_trials"] = 4
spec["trial"]["workers"] = 1
spec["trial"]["resources_per_worker"] = {"cpu": 1, "gpu": 1}
spec["trial"]["working_dir"] = root
spec["trial"]["command"] += ["--device", "auto"]
spec["storage"] = {"path": dest.replace(".json", ".db")}
json.dump(spec, open(dest, "w"), indent=1)
PY
tune validate "$work/gpu.json" | grep -E "GPUs|capacity" | tee -a "$out"
tune run "$work/gpu.json" | tail -4 | tee -a "$out"
grep -h "fine-tuning on" "$work"/tune_runs/*/trial_*/rank_0.log 2>/dev/null | sort | uniq -c | tee -a "$out" || true
say "gpu-smoke: done; summary in $out"
