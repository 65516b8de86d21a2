#!/usr/bin/env bash
# LoRA training throughput: the C++ trainer (trainer_bench) against the same
# model and step in Python PyTorch (bench/lora_ref.py, Debian's python3-torch),
# interleaved, for a tiny and a small model, REPEATS times each.
#
#   bench/trainer_bench.sh [BUILD_DIR] [REPEATS]     (defaults: build, 3)
#
# Prints one line per run and a median summary (tokens/s, peak RSS MiB).
# With TRAINER_BENCH_REAL_MODEL=1 it then also runs the SmolLM2-135M
# workloads (lora_train against transformers + PEFT, REPEATS times) through
# scripts/check-real-model.sh --speed-only (a venv and model download of its
# own the first time; see that script).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${1:-$root/build}"
repeats="${2:-3}"
bench="$build/bin/trainer_bench"
[ -x "$bench" ] || { echo "trainer_bench.sh: $bench not built (cmake --build $build --target trainer_bench)" >&2; exit 1; }
export OMP_NUM_THREADS=2
blas=$(readlink -f /etc/alternatives/libblas.so.3-x86_64-linux-gnu 2>/dev/null || echo unknown)
echo "BLAS: $blas; OMP_NUM_THREADS 2; $(nproc) cores; torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
declare -A sizes=(
  [tiny]="--d_model 128 --n_layers 2 --n_heads 4 --seq_len 128 --batch 8 --steps 30 --warmup 3"
  [small]="--d_model 512 --n_layers 8 --n_heads 8 --seq_len 256 --batch 8 --steps 6 --warmup 1"
)
for rep in $(seq 1 "$repeats"); do
  for size in tiny small; do
    args=${sizes[$size]}
    # shellcheck disable=SC2086
    /usr/bin/python3 "$root/bench/lora_ref.py" $args --threads 2 --quiet --tag "$size" \
      | sed -n 's/^RESULT //p' | python3 -c 'import json,sys; r=json.load(sys.stdin); r["impl"]="python"; print(json.dumps(r))' >> "$out"
    # shellcheck disable=SC2086
    "$bench" $args --threads 2 --tag "$size" 2>/dev/null | sed -n 's/^RESULT //p' >> "$out"
    tail -2 "$out" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print("%-6s %-6s %10.0f tokens/s  %7.1f MiB peak RSS  loss %.3f -> %.3f" % (
        r["tag"], r["impl"], r["tokens_per_s"], r["peak_rss_mib_self"], r["loss_first"], r["loss_last"]))'
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\nmedian over runs:")
for size in ("tiny", "small"):
    cells = {}
    for impl in ("python", "cpp"):
        rs = [r for r in rows if r["tag"] == size and r["impl"] == impl]
        cells[impl] = (statistics.median(r["tokens_per_s"] for r in rs), statistics.median(r["peak_rss_mib_self"] for r in rs))
    print("%-6s python %9.0f tok/s %7.1f MiB | C++ %9.0f tok/s %7.1f MiB | C++/python %.2fx" % (
        size, *cells["python"], *cells["cpp"], cells["cpp"][0] / cells["python"][0]))
PY
if [ "${TRAINER_BENCH_REAL_MODEL:-0}" = 1 ]; then
  echo
  echo "SmolLM2-135M-Instruct: lora_train vs transformers + PEFT (scripts/check-real-model.sh --speed-only)"
  "$root/scripts/check-real-model.sh" --build "$build" --speed-only --repeats "$repeats"
fi
