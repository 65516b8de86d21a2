#!/usr/bin/env bash
# `tune importance` against its peer, Optuna's get_param_importances
# (PED-ANOVA, Optuna 5's default), on the same trials: a results database of
# N completed trials written by storage_bench (5 parameters), read by both.
#   bench/importance_bench.sh VENV_PYTHON [N ...]   (default N: 1000 10000;
#                                                    needs a built ./build)
# VENV_PYTHON: a python with Optuna 5 (pip install optuna). Prints, per N,
# the median wall time of the whole `tune importance` command (database
# read included) over 5 runs, Optuna's time for get_param_importances alone
# (study built beforehand, not counted; median of 3) and the whole Optuna
# script (interpreter, import, reading the file, building the study: what a
# user waits for), the ratios, and the largest difference between the two
# sets of importances.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:?usage: bench/importance_bench.sh VENV_PYTHON [N ...]}
shift
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(1000 10000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| trials | tune importance (whole command) | Optuna get_param_importances alone | ratio | Optuna script, whole (import, study, importances) | ratio | max difference |"
echo "|---|---|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  db="$tmp/t$n.db"
  ./build/bin/storage_bench --trials "$n" --reports 1 --db "$db" > /dev/null
  for _ in 1 2 3 4 5; do
    s=$(date +%s.%N); ./build/bin/tune importance --db "$db" --format json > "$tmp/tune.json"
    echo "$(date +%s.%N) - $s" | bc -l
  done | median > "$tmp/tune_s"
  : > "$tmp/optuna_whole"
  for _ in 1 2 3; do
    s=$(date +%s.%N); "$py" bench/importance_optuna.py "$db" > "$tmp/optuna.json"
    echo "$(date +%s.%N) - $s" | bc -l >> "$tmp/optuna_whole"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' "$tmp/optuna.json"
  done | median > "$tmp/optuna_s"
  diff=$(python3 - "$tmp/tune.json" "$tmp/optuna.json" <<'PY'
import json, sys
tune = {e["parameter"]: e["importance"] for e in json.load(open(sys.argv[1]))["importances"]}
optuna = json.load(open(sys.argv[2]))["importances"]
assert set(tune) == set(optuna), (tune, optuna)
print("%.1e" % max(abs(tune[k] - optuna[k]) for k in tune))
PY
)
  t=$(cat "$tmp/tune_s"); o=$(cat "$tmp/optuna_s"); w=$(median < "$tmp/optuna_whole")
  printf "| %d | %.1f ms | %.1f ms | %.1fx | %.0f ms | %.1fx | %s |\n" "$n" "$(echo "$t*1000" | bc -l)" \
    "$(echo "$o*1000" | bc -l)" "$(echo "$o/$t" | bc -l)" "$(echo "$w*1000" | bc -l)" "$(echo "$w/$t" | bc -l)" "$diff"
done
