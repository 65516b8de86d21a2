#!/usr/bin/env bash
# CPU training throughput of lora_train's step with the two supported
# libtorch builds: Debian's libtorch 1.13 (./build, scripts/build.sh) and
# the libtorch of PyPI's CUDA torch wheel (./build-cuda,
# scripts/build-cuda.sh). Runs trainer_bench tiny and small from both builds
# alternately, REPEATS times, so both see the same machine load, and prints
# the medians and their ratio.
#
#   bench/libtorch_builds.sh [REPEATS] [THREADS]     (defaults: 5, 2)
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
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\nmedian over runs:")
for size in ("tiny", "small"):
    med = {b: statistics.median(r["tokens_per_s"] for r in rows if r["tag"] == size and r["build"] == b)
           for b in ("build", "build-cuda")}
    print("%-6s Debian libtorch %9.0f tok/s | wheel libtorch %9.0f tok/s | wheel/Debian %.2fx" % (
        size, med["build"], med["build-cuda"], med["build-cuda"] / med["build"]))
PY
