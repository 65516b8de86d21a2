#!/usr/bin/env bash
# tune's TPE against Optuna 5.0's TPESampler on the suite of bench/tpe_suite.h:
# the same seed indices on both sides, 100 trials per run, median simple
# regret per function for tune's default, multivariate and univariate modes
# (the last two with Optuna's settings of that mode) and Optuna's default
# (TPESampler()) and univariate, the ratio of the two defaults with a
# bootstrap interval and P(tune < Optuna), and the geometric mean of the
# ratios over the suite. Then the same for the defaults (and tune's
# multivariate mode) with 4 and 8 trials in flight (constant liar on both
# sides, their default).
#
#   bench/tpe_vs_optuna.sh [--seeds 200] [--first-seed 0] [--jobs 2] [--inflight "1 4 8"]
#                          [--functions a,b] [--build build] [--out DIR] [--side both|tune|optuna]
#
# Optuna 5.0.0 comes from pip into a virtual environment kept at
# $TUNE_OPTUNA_VENV (default ${XDG_CACHE_HOME:-$HOME/.cache}/tune/venv-optuna5),
# created on first use. Results go to DIR (default tpe-vs-optuna/ under the
# build directory) as JSON lines, one file per (side, function, in flight);
# a file that already holds all its runs is kept, so an interrupted run
# resumes where it stopped. Optuna runs go one function at a time, --jobs
# processes at once, under nice -n 19. Optuna needs about 0.5 s of CPU per
# 100-trial run multivariate and 1 s univariate; tune about 1/50 of that.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=200 first=0 jobs=2 inflight="1 4 8" build=build out="" functions="" side=both
while (($#)); do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --first-seed) first=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --inflight) inflight=$2; shift 2 ;;
    --functions) functions=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --side) side=$2; shift 2 ;;
    *) echo "tpe_vs_optuna.sh: unknown argument '$1' (see the header of bench/tpe_vs_optuna.sh)" >&2; exit 2 ;;
  esac
done
out=${out:-$build/tpe-vs-optuna}
mkdir -p "$out"
bench_bin=$build/bin/tpe_bench
[[ -x $bench_bin ]] || cmake --build "$build" --target tpe_bench

venv=${TUNE_OPTUNA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tune/venv-optuna5}
if ! "$venv/bin/python" -c 'import optuna, sys; sys.exit(optuna.__version__ != "5.0.0")' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "optuna==5.0.0"
fi

if [[ -z $functions ]]; then
  functions=$("$venv/bin/python" -c 'import sys; sys.path.insert(0, "bench"); import tpe_suite; print(",".join(p[0] for p in tpe_suite.SUITE))')
fi

complete() {  # FILE EXPECTED_LINES: the file holds every run already
  [[ -f $1 ]] && (($(wc -l < "$1") == $2))
}

# tune: every function in one process per in-flight count (seconds).
[[ $side == optuna ]] || for k in $inflight; do
  modes=default,multivariate,univariate
  ((k > 1)) && modes=default,multivariate
  nmodes=$(tr , '\n' <<< "$modes" | wc -l)
  nfun=$(tr , '\n' <<< "$functions" | wc -l)
  f=$out/tune_k$k.jsonl
  if ! complete "$f" $((seeds * nmodes * nfun)); then
    nice -n 19 "$bench_bin" quality --functions "$functions" --modes "$modes" --inflight "$k" \
      --seeds "$seeds" --first-seed "$first" --dump "$f.tmp" > /dev/null
    mv "$f.tmp" "$f"
  fi
done

# Optuna: one job per (in flight, mode, function), --jobs at a time; the
# defaults first (sequential, then the largest number in flight), the
# univariate runs last. A job that was cut off resumes after its last
# complete run.
jobfile=$out/optuna_jobs.txt
: > "$jobfile"
if [[ $side != tune ]]; then
  order=$(for k in $inflight; do echo "$k default"; done | sort -k1,1n | awk 'NR==1{print; next} {rest[NR]=$0} END{for(i=NR;i>1;i--) print rest[i]}')
  order+=$'\n'"1 univariate"
  while read -r k mode; do
    [[ " $inflight " == *" $k "* ]] || continue
    for fn in ${functions//,/ }; do
      f=$out/optuna_k${k}_${mode}_$fn.jsonl
      complete "$f" "$seeds" && continue
      done_runs=0
      if [[ -f $f.tmp ]]; then  # keep the complete lines of a run that was cut off
        python3 -c 'import json,sys; ls=[l for l in open(sys.argv[1]) if l.endswith("\n")]
ok=[]
for l in ls:
    try: json.loads(l); ok.append(l)
    except ValueError: break
open(sys.argv[1],"w").writelines(ok)' "$f.tmp"
        done_runs=$(wc -l < "$f.tmp")
      fi
      echo "nice -n 19 '$venv/bin/python' bench/tpe_optuna.py quality --functions $fn --modes $mode" \
           "--inflight $k --seeds $((seeds - done_runs)) --first-seed $((first + done_runs)) --dump '$f.tmp' --append" \
           "> /dev/null && mv '$f.tmp' '$f'" >> "$jobfile"
    done
  done <<< "$order"
fi
if [[ -s $jobfile ]]; then
  echo "Optuna: $(wc -l < "$jobfile") jobs, $jobs at a time" >&2
  tr '\n' '\0' < "$jobfile" | xargs -0 -P "$jobs" -I{} bash -c '{}'
fi

python3 bench/tpe_table.py --tune "$out"/tune_k*.jsonl --optuna "$out"/optuna_k*_*.jsonl --functions "$functions"
