#!/usr/bin/env bash
# Data-parallel LoRA trials on one machine: 1 worker x 2 threads against
# 2 workers x 1 thread, in Python PyTorch (bench/lora_ref.py, Debian's
# python3-torch) and in C++ (trainer_bench, lora_train's model and step),
# for the tiny and the small model, interleaved, REPEATS times:
#
#   python 1x2           one process, 2 intra-op threads
#   python 2x1 ddp       2 processes x 1 thread, DistributedDataParallel
#   python 2x1 manual    2 processes x 1 thread, one flattened all-reduce
#   cpp 1x2              one process, 2 threads
#   cpp 2x1 flat         2 ranks x 1 thread, one flattened all-reduce (lora_train's step)
#   cpp 2x1 per_tensor   2 ranks x 1 thread, one all-reduce per LoRA gradient tensor
#
# Each worker's batch is --batch 8, so 2 workers process twice the tokens per
# step; tokens/s is global (all workers' tokens over the timed wall time).
# OMP_NUM_THREADS is set to the threads of each process. Python's 2-process
# runs use lora_ref.py --nproc 2 (torch.multiprocessing.spawn), C++'s
# trainer_bench --nproc 2 (fork + exec of itself with the torchrun
# environment), so Debian's torchrun (which needs --redirects 2 --tee 2) is
# not involved.
#
#   bench/dist_bench.sh [BUILD_DIR] [REPEATS]    (defaults: build, $REPEATS or 3)
#   env: TINY_STEPS (30), SMALL_STEPS (8), SIZES ("tiny small"), PORT_BASE (29600)
#
# Prints one line per run, then a ready-to-paste markdown section (medians,
# ratios, BLAS, load average). Needs python3-torch for the Python runs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${1:-$root/build}"
repeats="${2:-${REPEATS:-3}}"
bench="$build/bin/trainer_bench"
py=/usr/bin/python3
[ -x "$bench" ] || {
  echo "dist_bench.sh: $bench not built (cmake --build $build --target trainer_bench)" >&2
  exit 1
}
"$py" -c 'import torch' 2>/dev/null || {
  echo "dist_bench.sh: $py has no torch (apt-get install python3-torch)" >&2
  exit 1
}

blas_file=$(readlink -f /etc/alternatives/libblas.so.3-x86_64-linux-gnu 2>/dev/null || echo unknown)
case "$blas_file" in
  *openblas-openmp*) blas_pkg=libopenblas0-openmp blas_desc="OpenMP build" ;;
  *openblas-pthread*) blas_pkg=libopenblas0-pthread blas_desc="pthreads build" ;;
  *openblas*) blas_pkg=libopenblas0-serial blas_desc="serial build" ;;
  *) blas_pkg="" blas_desc="" ;;
esac
if [ -n "$blas_pkg" ]; then
  ver=$(dpkg-query -W -f='${Version}' "$blas_pkg" 2>/dev/null | sed 's/[+~-].*//')
  blas_name="OpenBLAS ${ver:-?}, $blas_desc"
else
  blas_name="$(basename "$(dirname "$blas_file")") libblas (not OpenBLAS)"
fi
torch_ver=$("$py" -c 'import torch; print(torch.__version__)')
load_start=$(uptime | sed 's/.*load average: //')
echo "BLAS: $blas_file ($blas_name); $(nproc) cores; Python torch $torch_ver; load average at start $load_start"

tiny_steps="${TINY_STEPS:-30}"
small_steps="${SMALL_STEPS:-8}"
declare -A sizes=(
  [tiny]="--d_model 128 --n_layers 2 --n_heads 4 --seq_len 128 --batch 8 --steps $tiny_steps --warmup 3"
  [small]="--d_model 512 --n_layers 8 --n_heads 8 --seq_len 256 --batch 8 --steps $small_steps --warmup 2"
)
configs=(py_1x2 py_2x1_ddp py_2x1_manual cpp_1x2 cpp_2x1_flat cpp_2x1_per_tensor)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out="$work/results.jsonl"
: > "$out"
port=${PORT_BASE:-29600}

# run_one SIZE CONFIG: runs one trial, appends its RESULT (plus size, config)
# to $out and prints a one-line summary; a failed run is reported, not fatal.
run_one() {
  local size=$1 cfg=$2 args=${sizes[$1]} log="$work/$1.$2.log" rc=0
  port=$((port + 1))
  local -a cmd
  case "$cfg" in
    py_1x2) cmd=("$py" "$root/bench/lora_ref.py" --threads 2) ;;
    py_2x1_ddp) cmd=("$py" "$root/bench/lora_ref.py" --threads 1 --nproc 2 --ddp_impl ddp --master_port "$port") ;;
    py_2x1_manual) cmd=("$py" "$root/bench/lora_ref.py" --threads 1 --nproc 2 --ddp_impl manual --master_port "$port") ;;
    cpp_1x2) cmd=("$bench" --threads 2) ;;
    cpp_2x1_flat) cmd=("$bench" --threads 1 --nproc 2 --allreduce flat --master_port "$port") ;;
    cpp_2x1_per_tensor) cmd=("$bench" --threads 1 --nproc 2 --allreduce per_tensor --master_port "$port") ;;
  esac
  case "$cfg" in *_1x2) threads=2 ;; *) threads=1 ;; esac
  [[ $cfg == py_* ]] && cmd+=(--quiet)
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads \
    timeout 1800 "${cmd[@]}" $args --tag "$size" > "$log" 2>&1 || rc=$?
  local line
  line=$(sed -n 's/^RESULT //p' "$log" | head -1)
  if [ "$rc" != 0 ] || [ -z "$line" ]; then
    echo "$size $cfg FAILED (exit $rc); last lines of its output:"
    tail -5 "$log" | sed 's/^/    /'
    return 0
  fi
  printf '%s\n' "$line" | "$py" -c '
import json, sys
r = json.load(sys.stdin)
r["size"], r["cfg"] = sys.argv[1], sys.argv[2]
print(json.dumps(r))' "$size" "$cfg" >> "$out"
  tail -1 "$out" | "$py" -c '
import json, sys
r = json.load(sys.stdin)
ar = r.get("allreduce_ms_median")
al = r.get("allreduce_aligned_ms_median")
sync = r.get("ranks_in_sync")
print("%-6s %-19s %9.0f tokens/s  step %8.1f ms%s%s" % (
    r["size"], r["cfg"], r["tokens_per_s"], r["step_ms_median"],
    "  all-reduce %.2f ms/step (%.2f aligned)" % (ar, al) if ar is not None else "",
    "" if sync in (None, True) else "  RANKS OUT OF SYNC"))'
}

for rep in $(seq 1 "$repeats"); do
  for size in ${SIZES:-tiny small}; do
    for cfg in "${configs[@]}"; do
      run_one "$size" "$cfg"
    done
  done
done
load_end=$(uptime | sed 's/.*load average: //')

"$py" - "$out" "$repeats" "$blas_name" "$(nproc)" "$torch_ver" "$load_start" "$load_end" \
  "$tiny_steps" "$small_steps" <<'PY'
import json, statistics, sys

path, repeats, blas, cores, torch_ver, load_start, load_end, tiny_steps, small_steps = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
names = {
    "py_1x2": "Python 1x2", "py_2x1_ddp": "Python 2x1 DDP", "py_2x1_manual": "Python 2x1 flat",
    "cpp_1x2": "C++ 1x2", "cpp_2x1_flat": "C++ 2x1 flat", "cpp_2x1_per_tensor": "C++ 2x1 per-tensor",
}
sizes = [s for s in ("tiny", "small") if any(r["size"] == s for r in rows)]


def med(size, cfg, key):
    vs = [r[key] for r in rows if r["size"] == size and r["cfg"] == cfg and r.get(key) is not None]
    return (statistics.median(vs), len(vs)) if vs else (None, 0)


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def ratio(size, a, b):
    x, _ = med(size, a, "tokens_per_s")
    y, _ = med(size, b, "tokens_per_s")
    return None if x is None or y is None else x / y


def pct(r):
    return "-" if r is None else "%.2fx (%+.0f%%)" % (r, 100 * (r - 1))


print()
print("## Distributed trials: 1 worker x 2 threads vs 2 workers x 1 thread (trainer/, bench/dist_bench.sh)")
print()
print("`bench/dist_bench.sh BUILD_DIR %s`: %s; %s cores; Python torch %s. "
      "tiny: d 128, 2 layers, 4 heads, seq 128, batch 8 per worker, %s steps (3 warm-up); "
      "small: d 512, 8 layers, 8 heads, seq 256, batch 8 per worker, %s steps (2 warm-up). "
      "Load average (1, 5, 15 min) at start %s, at end %s."
      % (repeats, blas, cores, torch_ver, tiny_steps, small_steps, load_start, load_end))
print()
print("Medians over runs; tokens/s is global (all workers' tokens / timed wall time). "
      "C++ only (DDP overlaps its all-reduce with backward; lora_ref.py does not time it): "
      "all-reduce = the step's collectives, including waiting for the slower rank; "
      "sync adds flatten and copy-back; aligned = the same collectives timed after a "
      "barrier, i.e. the transfer alone.")
print()
print("| size | run | tokens/s | step ms | all-reduce ms/step | sync ms/step | aligned all-reduce ms | runs |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    for cfg, name in names.items():
        tps, n = med(s, cfg, "tokens_per_s")
        if n == 0:
            print("| %s | %s | failed | | | | | 0 |" % (s, name))
            continue
        print("| %s | %s | %s | %s | %s | %s | %s | %d |" % (
            s, name, fmt(tps, ".0f"), fmt(med(s, cfg, "step_ms_median")[0], ".1f"),
            fmt(med(s, cfg, "allreduce_ms_median")[0], ".2f"),
            fmt(med(s, cfg, "sync_ms_median")[0], ".2f"),
            fmt(med(s, cfg, "allreduce_aligned_ms_median")[0], ".2f"), n))
print()
print("| size | Python 2x1 DDP / 1x2 | Python 2x1 flat / 1x2 | C++ 2x1 flat / 1x2 "
      "| C++ 2x1 per-tensor / 1x2 | Python flat / DDP | C++ flat / per-tensor | C++ 2x1 flat / Python 2x1 flat |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
        s, pct(ratio(s, "py_2x1_ddp", "py_1x2")), pct(ratio(s, "py_2x1_manual", "py_1x2")),
        pct(ratio(s, "cpp_2x1_flat", "cpp_1x2")), pct(ratio(s, "cpp_2x1_per_tensor", "cpp_1x2")),
        pct(ratio(s, "py_2x1_manual", "py_2x1_ddp")), pct(ratio(s, "cpp_2x1_flat", "cpp_2x1_per_tensor")),
        pct(ratio(s, "cpp_2x1_flat", "py_2x1_manual"))))
bad = [r for r in rows if r.get("ranks_in_sync") is False]
print()
print("Ranks' adapters identical after every 2-worker run: %s." % ("no (%d runs differ)" % len(bad) if bad else "yes"))
PY
