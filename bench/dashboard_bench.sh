#!/usr/bin/env bash
# tune dashboard against optuna-dashboard on the same trials: a database of
# N completed trials (20 reports each) written by storage_bench, copied into
# Optuna's SQLite storage (bench/dashboard_optuna.py), both servers started
# on it, then bench/dashboard_bench.py times their API answers and the time
# to a drawn page in headless Chromium.
#   bench/dashboard_bench.sh VENV_PYTHON [N]   (default N 10000; needs ./build)
# VENV_PYTHON: a python with optuna and optuna-dashboard
# (pip install optuna optuna-dashboard); the browser side needs Debian's
# chromium and python3-websocket (scripts/install-deps.sh).
# TUNE_BENCH_DB=FILE and OPTUNA_BENCH_DB=FILE reuse (or keep) the two
# databases there (the copy into Optuna's storage takes minutes).
# DASHBOARD_BENCH_ARGS: more arguments for dashboard_bench.py (--api-only, --runs N).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:?usage: bench/dashboard_bench.sh VENV_PYTHON [N]}
n=${2:-10000}
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
db=${TUNE_BENCH_DB:-$tmp/tune.db}
[ -f "$db" ] || ./build/bin/storage_bench --trials "$n" --reports 20 --db "$db" > /dev/null
optuna_db=${OPTUNA_BENCH_DB:-$tmp/optuna.db}
[ -f "$optuna_db" ] || "$py" bench/dashboard_optuna.py "$db" "$optuna_db"
name=$(sqlite3 "$db" "SELECT name FROM experiments ORDER BY id DESC LIMIT 1")

./build/bin/tune dashboard --db "$db" --port 0 > "$tmp/tune.log" 2>&1 &
pids+=($!)
"$(dirname "$py")/optuna-dashboard" "sqlite:///$optuna_db" --host 127.0.0.1 --port 18089 > "$tmp/optuna.log" 2>&1 &
pids+=($!)
for _ in $(seq 3000); do  # optuna-dashboard starts slowly on a busy machine
  grep -q "serving" "$tmp/tune.log" && python3 -c 'import socket; socket.create_connection(("127.0.0.1", 18089), 1)' 2>/dev/null && break
  sleep 0.1
done
port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$tmp/tune.log")
python3 bench/dashboard_bench.py --tune "http://127.0.0.1:$port/" --experiment "$name" \
  --optuna "http://127.0.0.1:18089/" ${DASHBOARD_BENCH_ARGS:-}
