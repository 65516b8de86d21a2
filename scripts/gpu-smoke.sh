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
#      own CUDA_VISIBLE_DEVICES and lora_train --device auto takes it;
#   5. checkpoint + resume on cuda with LoRA dropout 0.2 equals the
#      uninterrupted run (the CUDA generator state is in the checkpoint).
# Every check goes on after a failure; each prints PASS or FAIL, and the
# script exits 1 if any failed. Writes the summary to gpu-smoke.out
# (git-ignored) and prints it; record the numbers in bench/RESULTS.md.
# Needs what scripts/build-cuda.sh needs (the first run downloads the torch
# wheel, about 4 GB) and nothing else: run it blind.
#
#   scripts/gpu-smoke.sh [REPEATS]     (default 3 benchmark repeats)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
repeats="${1:-3}"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep '^GPU ' > /dev/null; then
  echo "gpu-smoke: no NVIDIA GPU here (nvidia-smi is missing or lists none); run it on a machine with one" >&2
  exit 1
fi
gpus=$(nvidia-smi -L | grep -c '^GPU ')
out="$root/gpu-smoke.out"
: > "$out"
say() { echo "$*" | tee -a "$out"; }
failures=0
# check NAME COMMAND...: runs it, records PASS or FAIL, never stops the script.
check() {
  local name=$1
  shift
  if "$@"; then say "PASS $name"; else say "FAIL $name"; failures=$((failures + 1)); fi
}
# The last lines of a test binary's output, into the summary; its status.
tail_of() { local rc=0; "$@" > "$work/test.log" 2>&1 || rc=$?; tail -3 "$work/test.log" | tee -a "$out"; return $rc; }
work=$(mktemp -d)
rows="$work/rows"
trap 'rm -rf "$work"' EXIT
say "gpu-smoke: $(date -u +%FT%TZ), $gpus GPU(s):"
nvidia-smi -L | tee -a "$out"

scripts/install-deps.sh --test
scripts/build-cuda.sh
objdump -p build-cuda/bin/lora_train | grep 'NEEDED.*libtorch_cuda' > /dev/null || {
  echo "gpu-smoke: build-cuda/bin/lora_train does not link libtorch_cuda" >&2
  exit 1
}
version="${TUNE_TORCH_VERSION:-2.15.0}"
venv="${TUNE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tune/torch-$version}"
py="$venv/bin/python"
bin="$root/build-cuda/bin"

# --- 1. goldens and trainer tests on the GPU ---------------------------------
say "== 1. goldens on cuda (fp32 1e-4; bf16 per tests/trainer/device_test.cc)"
check "1. goldens on cuda" tail_of env TUNE_TEST_DEVICE=cuda "$bin/trainer_test" "[device]"
say "== 1b. trainer tests (lora_train --device auto: on the GPU)"
check "1b. trainer tests" tail_of "$bin/trainer_test"

# --- 2. throughput: C++ against PyTorch on the same GPU -----------------------
say "== 2. trainer_bench vs bench/lora_ref.py ($("$py" -c 'import torch; print("torch", torch.__version__)'))"
declare -A sizes=(
  [tiny]="--d_model 128 --n_layers 2 --n_heads 4 --seq_len 128 --batch 8 --steps 50 --warmup 5"
  [small]="--d_model 512 --n_layers 8 --n_heads 8 --seq_len 256 --batch 8 --steps 30 --warmup 5"
)
bench_rc=0
for _ in $(seq 1 "$repeats"); do
  for size in tiny small; do
    for dtype in fp32 bf16; do
      # shellcheck disable=SC2086
      "$py" "$root/bench/lora_ref.py" ${sizes[$size]} --device cuda --dtype "$dtype" --threads 2 --quiet \
        --tag "$size-$dtype" > "$work/ref.out" 2> "$work/ref.err" || { bench_rc=1; tail -2 "$work/ref.err" | tee -a "$out"; }
      sed -n 's/^RESULT //p' "$work/ref.out" |
        "$py" -c 'import json,sys
for l in sys.stdin: r=json.loads(l); r["impl"]="python"; print(json.dumps(r))' >> "$rows"
      # shellcheck disable=SC2086
      "$bin/trainer_bench" ${sizes[$size]} --device cuda --dtype "$dtype" --threads 2 --tag "$size-$dtype" \
        > "$work/cpp.out" 2> "$work/cpp.err" || { bench_rc=1; tail -2 "$work/cpp.err" | tee -a "$out"; }
      sed -n 's/^RESULT //p' "$work/cpp.out" >> "$rows"
    done
  done
done
touch "$rows"
"$py" - "$rows" <<'PY' | tee -a "$out" || bench_rc=1
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
if not rows:
    sys.exit("no benchmark results")
for tag in sorted({r["tag"] for r in rows}):
    med = {}
    for impl in ("python", "cpp"):
        v = [r["tokens_per_s"] for r in rows if r["tag"] == tag and r["impl"] == impl]
        med[impl] = statistics.median(v) if v else float("nan")
    print("%-12s python %10.0f tok/s | C++ %10.0f tok/s | C++/python %.2fx (median of %d)" % (
        tag, med["python"], med["cpp"], med["cpp"] / med["python"], len(v)))
PY
check "2. trainer_bench and lora_ref.py ran" test "$bench_rc" = 0

# --- 3. two ranks over NCCL ---------------------------------------------------
for i in $(seq 0 47); do
  printf '{"instruction": "Repeat item %d.", "response": "alpha beta gamma %d"}\n' $((i % 4)) $((i % 4))
done > "$work/train.jsonl"
flags=(--base "$root/tests/trainer/golden/llama" --data "$work/train.jsonl" --seq-len 96 --lora-r 4
       --target-modules q_proj,v_proj,o_proj,up_proj --max-steps 4 --eval-every 2 --lr 1e-2 --lora-dropout 0)
nccl_pair() {
  "$bin/lora_train" "${flags[@]}" --batch-size 4 --output "$work/one" > "$work/one.out" 2> "$work/one.err" || return 1
  local port=$((29600 + RANDOM % 1000)) r1=0 r0=0
  env WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=1 LOCAL_RANK=1 \
    "$bin/lora_train" "${flags[@]}" --backend nccl --batch-size 2 --output "$work/two" > /dev/null 2> "$work/r1.err" &
  local pid1=$!
  env WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=0 LOCAL_RANK=0 \
    "$bin/lora_train" "${flags[@]}" --backend nccl --batch-size 2 --output "$work/two" > "$work/two.out" \
    2> "$work/r0.err" || r0=$?
  wait "$pid1" || r1=$?
  grep -h "fine-tuning on" "$work/r0.err" | tee -a "$out"
  if [ "$r0" != 0 ] || [ "$r1" != 0 ]; then
    tail -2 "$work/r0.err" "$work/r1.err" | tee -a "$out"
    return 1
  fi
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
}
if [ "$gpus" -ge 2 ]; then
  say "== 3. 2-rank NCCL run against 1 rank with twice the batch"
  check "3. 2-rank NCCL" nccl_pair
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
tune_gpu() {
  tune validate "$work/gpu.json" | grep -E "GPUs|capacity" | tee -a "$out"
  tune run "$work/gpu.json" > "$work/tune.out" 2> "$work/tune.err" || { tail -3 "$work/tune.err" | tee -a "$out"; return 1; }
  tail -4 "$work/tune.out" | tee -a "$out"
  # Every trial's rank 0 says where it trained: on a GPU, not the CPU.
  find "$work/tune_runs" -name rank_0.log -exec grep -h "fine-tuning on" {} + | sed 's/.*fine-tuning on \([^:]*\):.*/\1/' | sort | uniq -c |
    tee -a "$out"
  ! find "$work/tune_runs" -name rank_0.log -exec grep -h "fine-tuning on cpu" {} + | grep . > /dev/null
}
check "4. tune run with gpu 1 per trial" tune_gpu

# --- 5. resume on the GPU with dropout ------------------------------------------
say "== 5. checkpoint + resume on cuda with LoRA dropout 0.2 against an uninterrupted run"
resume_gpu() {
  local f=(--base "$root/tests/trainer/golden/llama" --data "$work/train.jsonl" --seq-len 96 --lora-r 4
           --target-modules q_proj,v_proj,o_proj,up_proj --max-steps 6 --save-every 3 --eval-every 0 --lr 1e-2
           --batch-size 2 --grad-accum 2 --lora-dropout 0.2 --device cuda)
  "$bin/lora_train" "${f[@]}" --output "$work/ra" > /dev/null 2> "$work/ra.err" || { tail -2 "$work/ra.err"; return 1; }
  "$bin/lora_train" "${f[@]}" --output "$work/rb" --resume-from "$work/ra/checkpoint-3" > /dev/null \
    2> "$work/rb.err" || { tail -2 "$work/rb.err"; return 1; }
  "$py" - "$work/ra/checkpoint-3/rng_state.safetensors" "$work/ra/adapter_model.safetensors" \
    "$work/rb/adapter_model.safetensors" <<'PY' | tee -a "$out"
import json, struct, sys, torch
def read(path):  # safetensors: u64 header length, JSON header, raw data
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    return {k: torch.frombuffer(bytearray(data[v["data_offsets"][0]:v["data_offsets"][1]]), dtype=torch.uint8)
            for k, v in header.items()}
rng = read(sys.argv[1])
a, b = read(sys.argv[2]), read(sys.argv[3])
same = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
print("checkpoint RNG entries %s; resumed adapter %s" % (sorted(rng), "bit-identical" if same else "DIFFERENT"))
sys.exit(0 if same and "cuda" in rng else 1)
PY
}
check "5. resume on cuda with dropout" resume_gpu

say "gpu-smoke: done, $failures check(s) failed; summary in $out"
[ "$failures" = 0 ]
