#!/usr/bin/env bash
# Takes the two screenshots of docs/experiment.md's `tracking` section in
# headless Chromium (Debian `chromium`): MLflow's run comparison and
# TensorBoard's HParams view of one small tuning run (synthetic trials,
# ASHA), logged by `tune run` with both trackers on. Starts `mlflow server`
# (SQLite store) and `tensorboard` on free loopback ports from the cached
# environments of scripts/tracking-venv.sh, and stops them on exit.
# Needs a build (scripts/build.sh). Writes docs/images/mlflow-compare.png and
# docs/images/tensorboard-hparams.png.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/bin"
mlflow_py="$("$root/scripts/tracking-venv.sh" mlflow | tail -1)"
tb_py="$("$root/scripts/tracking-venv.sh" tensorboard | tail -1)"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 -- "-$p" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$p" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_http() {  # URL, seconds
  for _ in $(seq "$2"); do python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "$1" \
    2>/dev/null && return 0; sleep 1; done
  echo "tracking-screenshots: $1 did not answer in $2 s" >&2; return 1
}
shot() {  # URL, output, width, height; a busy machine can stall Chromium: up to 3 tries
  # Chromium's profile and temporary files (its singleton socket) stay in
  # $work, which the cleanup removes.
  for _ in 1 2 3; do
    rm -f "$2"
    rm -rf "$work/chromium" && mkdir -p "$work/chromium/tmp"
    TMPDIR="$work/chromium/tmp" timeout 120 chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
      --disable-crash-reporter --disable-breakpad --user-data-dir="$work/chromium/profile" --window-size="$3,$4" \
      --virtual-time-budget=20000 --screenshot="$2" "$1" >/dev/null 2>&1 && [ -s "$2" ] && return 0
  done
  echo "tracking-screenshots: Chromium could not take $1" >&2; return 1
}

ml_port="$(free_port)"
setsid "$(dirname "$mlflow_py")/mlflow" server --backend-store-uri "sqlite:///$work/mlflow.db" \
  --default-artifact-root "$work/artifacts" --host 127.0.0.1 --port "$ml_port" --workers 1 >"$work/mlflow.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$ml_port/health" 300

cat >"$work/lora-asha.json" <<JSON
{"name": "lora-asha", "objective": {"metric": "eval_loss", "mode": "min"},
 "parameters": {"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1},
                "lora_r": {"type": "choice", "values": [4, 8, 16]},
                "optimizer": {"type": "choice", "values": ["adamw", "sgd"]}},
 "search": {"algorithm": "tpe", "seed": 7},
 "scheduler": {"type": "asha", "max_t": 60, "grace_period": 10, "reduction_factor": 2},
 "limits": {"max_trials": 10, "max_concurrent_trials": 3},
 "trial": {"command": ["$bin/synthetic_trial", "--lr", "\${lr}", "--lora-r", "\${lora_r}",
                       "--optimizer", "\${optimizer}", "--steps", "60", "--report-every", "5",
                       "--sleep-ms", "5", "--seed", "\${trial_id}"]},
 "tracking": {"mlflow": {"tracking_uri": "http://127.0.0.1:$ml_port", "tags": {"team": "nlp"}},
              "tensorboard": "$work/tb"}}
JSON
(cd "$work" && "$bin/tune" run lora-asha.json --db "$work/tune.db" --quiet >"$work/run.log")
if grep "not delivered" "$work/run.log" >&2; then exit 1; fi

mkdir -p "$root/docs/images"
runs="$(sqlite3 "$work/tune.db" "SELECT '\"' || run_id || '\"' FROM tracking_runs WHERE trial_number >= 0 ORDER BY trial_number" | paste -sd, -)"
experiment="$(sqlite3 "$work/tune.db" "SELECT target FROM tracking_runs LIMIT 1" | awk '{print $NF}')"
shot "http://127.0.0.1:$ml_port/#/compare-runs?runs=[$runs]&experiments=[\"$experiment\"]" \
  "$root/docs/images/mlflow-compare.png" 1600 1200

tb_port="$(free_port)"
setsid "$(dirname "$tb_py")/tensorboard" --logdir "$work/tb/lora-asha" --host 127.0.0.1 --port "$tb_port" \
  >"$work/tb.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$tb_port/" 120
shot "http://127.0.0.1:$tb_port/#hparams" "$root/docs/images/tensorboard-hparams.png" 1600 1000
echo "tracking-screenshots: wrote docs/images/mlflow-compare.png and docs/images/tensorboard-hparams.png"
