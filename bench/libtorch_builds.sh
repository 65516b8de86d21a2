#!/usr/bin/env bash
# CPU training throughput of lora_train's step with the two supported
# libtorch builds: Debian's libtorch 1.13 (./build, scripts/build.sh) and
# the libtorch of PyPI's CUDA torch wheel (./build-cuda,
# scripts/build-cuda.sh). Runs trainer_bench tiny and small from both builds
# alternately, REPEATS times, so both see the same machine load, and prints
# the medians and their ratio. Each build's startup line says which BLAS its
# libtorch uses.
#
#   bench/libtorch_builds.sh [REPEATS] [THREADS]     (defaults: 5, 2)
#
# With REAL_MODEL (a Hugging Face model folder, e.g. the SmolLM2-135M that
# scripts/check-real-model.sh converts) and REAL_DATA (instruction JSONL,
# e.g. its short.jsonl), it also times lora_train itself on that model from
# both builds: batch 4, sequence length 256, LoRA r 8 on q_proj,v_proj,
# REAL_STEPS steps (default 6), tokens/s of the steps after the first two.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repeats="${1:-5}"
threads="${2:-2}"
for b in build build-cuda; do
  [ -x "$root/$b/bin/trainer_bench" ] || {
    echo "libtorch_builds.sh: $root/$b/bin/trainer_bench is not built" >&2
    exit 1
  }
done
export OMP_NUM_THREADS=$threads
declare -A sizes=(
  [tiny]="--d_model 128 --n_layers 2 --n_heads 4 --seq_len 128 --batch 8 --steps 30 --warmup 3"
  [small]="--d_model 512 --n_layers 8 --n_heads 8 --seq_len 256 --batch 8 --steps 6 --warmup 1"
)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for rep in $(seq 1 "$repeats"); do
  for size in tiny small; do
    for b in build build-cuda; do
      # shellcheck disable=SC2086
      "$root/$b/bin/trainer_bench" ${sizes[$size]} --threads "$threads" --tag "$size" 2> "$out.err" |
        sed -n 's/^RESULT //p' |
        python3 -c 'import json,sys; r=json.load(sys.stdin); r["build"]=sys.argv[1]; print(json.dumps(r))' "$b" \
        >> "$out"
      [ "$rep" = 1 ] && [ "$size" = tiny ] && echo "$b: $(grep -m1 'BLAS' "$out.err" || true)"
      tail -1 "$out" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("%-6s %-10s %9.0f tokens/s  %7.1f MiB peak RSS" % (r["tag"], r["build"], r["tokens_per_s"], r["peak_rss_mib_self"]))'
    done
  done
done
rm -f "$out.err"
sizes_run=(tiny small)
if [ -n "${REAL_MODEL:-}" ]; then
  steps="${REAL_STEPS:-6}"
  work=$(mktemp -d)
  trap 'rm -f "$out"; rm -rf "$work"' EXIT
  for rep in $(seq 1 "$repeats"); do
    for b in build build-cuda; do
      "$root/$b/bin/lora_train" --base "$REAL_MODEL" --data "$REAL_DATA" --eval-data "$REAL_DATA" \
        --eval-max-examples 1 --max-steps "$steps" --log-every 2 --eval-every 0 --batch-size 4 --seq-len 256 \
        --lora-r 8 --lora-alpha 16 --lora-dropout 0.05 --target-modules q_proj,v_proj --lr 1e-4 \
        --schedule constant --threads "$threads" --output "$work/out" --no-auto-resume \
        > "$work/stdout" 2> "$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
      [ "$rep" = 1 ] && echo "$b (real model): $(grep -m1 'BLAS' "$work/stderr" || true)"
      python3 - "$work/stdout" "$b" >> "$out" <<'PY'
import json, re, sys
tps = [float(v) for v in re.findall(r"tokens_per_s=([0-9.eE+-]+)", open(sys.argv[1]).read())][1:]
print(json.dumps({"tag": "real", "build": sys.argv[2], "tokens_per_s": sum(tps) / len(tps)}))
PY
      tail -1 "$out" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("%-6s %-10s %9.1f tokens/s" % (r["tag"], r["build"], r["tokens_per_s"]))'
      rm -rf "$work/out"
    done
  done
  sizes_run+=(real)
fi
python3 - "$out" "${sizes_run[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\nmedian over runs:")
for size in sys.argv[2:]:
    med = {b: statistics.median(r["tokens_per_s"] for r in rows if r["tag"] == size and r["build"] == b)
           for b in ("build", "build-cuda")}
    print("%-6s Debian libtorch %9.1f tok/s | wheel libtorch %9.1f tok/s | wheel/Debian %.2fx" % (
        size, med["build"], med["build-cuda"], med["build-cuda"] / med["build"]))
PY
