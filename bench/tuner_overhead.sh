#!/usr/bin/env bash
# The tuner's own overhead: N trials of a trivial trial program (prints one
# metric, exits) with random search and max_concurrent_trials 4.
#   bench/tuner_overhead.sh [N]      (default 1000; needs a built ./build)
# Prints wall time, per-trial overhead and the tuner's peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/overhead.json" <<JSON
{
  "name": "overhead",
  "objective": {"metric": "loss", "mode": "min"},
  "parameters": {
    "x": {"type": "uniform", "low": 0, "high": 1},
    "lr": {"type": "loguniform", "low": 1e-5, "high": 1e-1},
    "r": {"type": "choice", "values": [4, 8, 16]}
  },
  "search": {"algorithm": "random", "seed": 1},
  "limits": {"max_trials": $n, "max_concurrent_trials": 4},
  "trial": {"command": ["/bin/echo", "loss=\${x}"]}
}
JSON
# The trial program alone, n times, 4 at a time: the floor the tuner adds to.
start=$(date +%s.%N)
seq "$n" | xargs -P 4 -I{} /bin/echo loss=0.5 > /dev/null
floor=$(echo "$(date +%s.%N) - $start" | bc -l)

/usr/bin/time -f "%e %M" -o "$tmp/time" ./build/bin/tune run "$tmp/overhead.json" --db "$tmp/o.db" --quiet > "$tmp/log"
read -r wall rss_kb < "$tmp/time"
done_n=$(sqlite3 "$tmp/o.db" "SELECT count(*) FROM trials WHERE state='completed'")
per_trial_ms=$(echo "($wall - $floor) * 1000 / $n * 4" | bc -l)
printf 'trials completed      %s of %s\n' "$done_n" "$n"
printf 'wall time             %.2f s (trial programs alone, same concurrency: %.2f s)\n' "$wall" "$floor"
printf 'overhead per trial    %.2f ms of tuner time per trial slot (wall - floor) * 4 / N\n' "$per_trial_ms"
printf 'overhead per trial    %.2f ms wall (wall - floor) / N\n' "$(echo "($wall - $floor) * 1000 / $n" | bc -l)"
printf 'tuner peak RSS        %.1f MB\n' "$(echo "$rss_kb / 1024" | bc -l)"
