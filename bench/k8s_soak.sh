#!/usr/bin/env bash
# Soak test of the Kubernetes backend under faults (not in CI: minutes).
# An ASHA experiment of N synthetic trials (default 100) against the loopback
# fake API server, with 20% of all API calls answered 500 or 429 at random
# and one rank-0 pod in ten killed, so that the Job controller replaces it
# (backoff_limit 1). Checks: tune exits 0, every trial ended exactly once
# (completed or pruned, one attempt), each value equals the trial's true
# value (synthetic_trial run here with the same arguments, at the trial's
# last recorded step), nothing labelled with the experiment is left, no
# kubectl is left. Prints wall time and the API calls tune retried.
#   bench/k8s_soak.sh [BUILD_DIR] [N]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
n=${2:-100}
dir=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; rm -rf "$dir"' EXIT
cat > "$dir/faults.json" <<JSON
{"seed": 22, "rules": [{"status": [500, 429], "rate": 0.2}],
 "replace_pods": {"rate": 0.1, "after": 0.2, "index": 0}}
JSON
python3 "$src/tests/k8s/fake_apiserver.py" --kubeconfig "$dir/kc.json" --faults "$dir/faults.json" \
  --openapi "$src/tests/k8s/openapi/definitions.json" --work-dir "$dir/pods" --lifetime 3600 >/dev/null &
srv=$!
for _ in $(seq 200); do [ -f "$dir/kc.json" ] && break; sleep 0.05; done
export KUBECACHEDIR="$dir/cache"
cat > "$dir/experiment.json" <<JSON
{"name": "soak",
 "objective": {"metric": "eval_loss", "mode": "min"},
 "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-1},
                "lora_r": {"type": "choice", "values": [4, 8, 16, 32]}},
 "search": {"algorithm": "random", "seed": 22},
 "scheduler": {"type": "asha", "time_attr": "step", "max_t": 30, "grace_period": 5, "reduction_factor": 3},
 "limits": {"max_trials": $n, "max_concurrent_trials": 6},
 "trial": {"command": ["$build/bin/synthetic_trial", "--lr", "\${lr}", "--lora-r", "\${lora_r}",
                       "--steps", "30", "--report-every", "5", "--sleep-ms", "40"],
           "workers": 1, "resources_per_worker": {"cpu": 0.1}, "max_retries": 0},
 "backend": {"type": "kubernetes", "namespace": "default", "image": "registry.example/tune:soak",
             "kubeconfig": "$dir/kc.json", "backoff_limit": 1,
             "api_backoff_initial_s": 0.2, "api_backoff_max_s": 2, "api_deadline_s": 60},
 "storage": {"path": "$dir/tune.db"}}
JSON
start=$(date +%s.%N)
set +e
(cd "$dir" && "$build/bin/tune" run experiment.json --quiet > run.out 2> run.err)
rc=$?
set -e
end=$(date +%s.%N)
tail -5 "$dir/run.out"; cat "$dir/run.err"
# The checks look at the cluster as it is: faults off first (a 500 on the
# check's own list would read as "nothing left").
stats=$(kubectl --kubeconfig "$dir/kc.json" get --raw /_fake/stats)
echo '{"rules": []}' > "$dir/no-faults.json"
kubectl --kubeconfig "$dir/kc.json" create --raw /_fake/faults -f "$dir/no-faults.json" > /dev/null
left=$(kubectl --kubeconfig "$dir/kc.json" get jobs,services,pods -l tune.io/experiment=soak -o name | wc -l)
kubectls=$(pgrep -f "kubectl --kubeconfig=$dir/kc.json" | wc -l || true)
python3 - "$dir/tune.db" "$build/bin/synthetic_trial" "$n" <<'PY'
import sqlite3, subprocess, sys
db, synthetic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = sqlite3.connect(db)
rows = con.execute("SELECT id, state, value, attempt, params_json FROM trials").fetchall()
import json
bad = []
states = {}
replaced_trials = excluded_reports = 0
for tid, state, value, attempt, params in rows:
    states[state] = states.get(state, 0) + 1
    p = json.loads(params)
    # The last report that counts (a replaced pod's reports are excluded).
    step = con.execute("SELECT MAX(step) FROM reports WHERE trial_id = ? AND objective IS NOT NULL AND attempt = ?"
                       " AND excluded IS NULL", (tid, attempt)).fetchone()[0]
    ex = con.execute("SELECT COUNT(*) FROM reports WHERE trial_id = ? AND excluded = 'replaced pod'",
                     (tid,)).fetchone()[0]
    if ex:
        replaced_trials += 1
        excluded_reports += ex
    out = subprocess.run([synthetic, "--lr", repr(p["lr"]), "--lora-r", str(p["lora_r"]), "--steps", "30",
                          "--report-every", "5"], capture_output=True, text=True, env={"RANK": "0"}).stdout
    curve = {}
    for line in out.splitlines():
        kv = dict(x.split("=") for x in line.split() if "=" in x)
        if "step" in kv and "eval_loss" in kv:
            curve[int(kv["step"])] = float(kv["eval_loss"])
    if state not in ("completed", "pruned") or value is None or abs(value - curve.get(step, float("nan"))) > 1e-6:
        bad.append((tid, state, value, step, curve.get(step)))
print("trials: %d %s" % (len(rows), states))
print("wrong: %d %s" % (len(bad), bad[:5]))
print("trials with a replaced pod's reports excluded: %d (%d reports)" % (replaced_trials, excluded_reports))
sys.exit(0 if len(rows) == n and not bad else 1)
PY
check=$?
python3 -c "import sys; print('wall time: %.1f s' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$end"
echo "tune exit status: $rc; objects left: $left; kubectl processes left: $kubectls"
echo "faults injected: $stats"
[ "$rc" = 0 ] && [ "$check" = 0 ] && [ "$left" = 0 ] && [ "$kubectls" = 0 ]
