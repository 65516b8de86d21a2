#!/usr/bin/env bash
# Population Based Training against random search on pbt_toy_trial, with
# tune itself: runs experiments/pbt-toy.json (PBT) and
# experiments/pbt-toy-random.json (random search, FIFO; the same population,
# space and 300 steps a trial, so equal total steps) once per seed, with
# search.seed set to the seed, each in its own database in a temporary
# folder (removed at the end). A run's value is `tune best --format json`'s
# (the best trial's last score). Prints JSON: per seed each run's best score
# and wall time, the medians and the PBT/random ratio of the medians, as
# bench/pbt_ray.py does for Ray Tune.
#
#   bench/pbt_bench.sh [--tune build/bin/tune] [--seeds 5] [--first-seed 0] [--only pbt|random]
#                      [--max-concurrent N] [--sleep-ms MS]
#
# --max-concurrent N is passed to `tune run` (the experiments run all 8 at
# once; 2 is Ray's setting in bench/pbt_ray.py, where trials take turns).
# --sleep-ms replaces the toy's per-step sleep (5 ms in the experiments).
# pbt_toy_trial must sit beside tune (both are built into build/bin).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
tune=$root/build/bin/tune
seeds=5
first=0
kinds="pbt random"
run_args=()
sleep_ms=
while [ $# -gt 0 ]; do
  case $1 in
    --tune) tune=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --first-seed) first=$2; shift 2 ;;
    --only) kinds=$2; shift 2 ;;
    --max-concurrent) run_args=(--max-concurrent "$2"); shift 2 ;;
    --sleep-ms) sleep_ms=$2; shift 2 ;;
    *) echo "pbt_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
tune=$(cd "$(dirname "$tune")" && pwd)/$(basename "$tune")
[ -x "$tune" ] || { echo "pbt_bench.sh: no tune at $tune (build the tune target)" >&2; exit 2; }
[ -x "$(dirname "$tune")/pbt_toy_trial" ] || {
  echo "pbt_bench.sh: no pbt_toy_trial beside $tune (build the pbt_toy_trial target)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pbt-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.jsonl
: > "$results"
for ((seed = first; seed < first + seeds; seed++)); do
  for kind in $kinds; do
    case $kind in
      pbt) src=$root/experiments/pbt-toy.json ;;
      random) src=$root/experiments/pbt-toy-random.json ;;
      *) echo "pbt_bench.sh: --only expects pbt or random, got $kind" >&2; exit 2 ;;
    esac
    dir=$work/$kind-$seed
    mkdir -p "$dir"
    name=pbt-bench-$kind-$seed
    python3 - "$src" "$dir/exp.json" "$name" "$seed" "$sleep_ms" <<'EOF'
import json, sys
src, dst, name, seed, sleep_ms = sys.argv[1:]
e = json.load(open(src))
cmd = e["trial"]["command"]
if sleep_ms:
    cmd[cmd.index("--sleep-ms") + 1] = sleep_ms
e["name"] = name
e["search"]["seed"] = int(seed)
e["storage"] = {"path": "tune.db"}
json.dump(e, open(dst, "w"), indent=1)
EOF
    start=$(date +%s.%N)
    if ! "$tune" run "$dir/exp.json" --db "$dir/tune.db" --quiet "${run_args[@]}" > "$dir/run.log" 2>&1; then
      echo "pbt_bench.sh: tune run failed for $kind, seed $seed; its log:" >&2
      tail -20 "$dir/run.log" >&2
      exit 1
    fi
    end=$(date +%s.%N)
    "$tune" best --db "$dir/tune.db" --experiment "$name" --format json > "$dir/best.json"
    "$tune" trials --db "$dir/tune.db" --experiment "$name" --format json > "$dir/trials.json" 2>/dev/null || true
    python3 - "$dir" "$kind" "$seed" "$start" "$end" >> "$results" <<'EOF'
import json, sys
d, kind, seed, start, end = sys.argv[1:]
best = json.load(open(d + "/best.json"))
exploits = None
try:
    trials = json.load(open(d + "/trials.json"))
    trials = trials.get("trials", trials) if isinstance(trials, dict) else trials
    exploits = sum(max(0, len(t.get("schedule", [])) - 1) for t in trials)
except Exception:
    pass
print(json.dumps({"kind": kind, "seed": int(seed), "best": best["value"], "best_trial": best["number"],
                  "exploits": exploits, "wall_s": round(float(end) - float(start), 2)}))
EOF
    tail -1 "$results" >&2
  done
done
python3 - "$results" "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || true)" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = {"tune_commit": sys.argv[2], "runs": {}}
for r in rows:
    out["runs"].setdefault(r["kind"], []).append(r)
for kind, rs in out["runs"].items():
    out["median_" + kind] = statistics.median(r["best"] for r in rs)
    out["median_wall_s_" + kind] = statistics.median(r["wall_s"] for r in rs)
if "median_pbt" in out and "median_random" in out:
    out["ratio_pbt_random"] = out["median_pbt"] / out["median_random"]
print(json.dumps(out, indent=1))
EOF
