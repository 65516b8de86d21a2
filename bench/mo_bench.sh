#!/usr/bin/env bash
# Multi-objective tuning against Optuna 5.0 (issue 31): tune's
# multi-objective TPE and NSGA-II (bench/mo_bench.cc) against Optuna's
# TPESampler and NSGAIISampler with their defaults (bench/mo_optuna.py) on
# the functions of bench/mo_suite.py, then bench/mo_compare.py's table:
# median hypervolume at 100 and 200 trials with one fixed reference point
# per function, computed for both sides by Optuna's compute_hypervolume,
# and the sampler's CPU time per trial on each side.
#
#   bench/mo_bench.sh [--seeds 30] [--first-seed 0] [--trials 200] [--build build]
#                     [--functions zdt1,zdt2,dtlz2,mixed,srn] [--out DIR] [--side both|tune|optuna]
#                     [--tune-samplers tpe,nsga2,random,tpe-univariate-24,tpe-univariate,tpe-24]
#                     [--optuna-samplers tpe,nsga2]
#
# tune's TPE variants (bench/mo_bench.cc, MakeSampler) are compared with
# Optuna's TPESampler; tune's random sampler is the floor.
#
# Optuna 5.0.0 comes from the virtual environment of bench/gp_optuna_venv.sh
# (created on first use). Runs go to DIR (default mo-bench/ under the build
# directory) as JSON lines: tune.jsonl (rewritten each time) and
# optuna.jsonl (appended to; runs it already holds are skipped, so an
# interrupted run resumes). Optuna runs on one core under nice -n 10, with
# OMP_NUM_THREADS=1; it needs 1.5 to 3 s of CPU per 200-trial TPE run (8 ms
# per trial in the sampler, 16 ms with 3 objectives) and 0.1 s per NSGA-II
# run: 30 seeds of everything took 20 minutes of wall time on a busy 2-core
# machine. tune's side takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=30 first=0 trials=200 build=build out="" functions=zdt1,zdt2,dtlz2,mixed,srn side=both
tune_samplers=tpe,nsga2,random,tpe-univariate-24,tpe-univariate,tpe-24 optuna_samplers=tpe,nsga2
while (($#)); do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --first-seed) first=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --functions) functions=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --side) side=$2; shift 2 ;;
    --tune-samplers) tune_samplers=$2; shift 2 ;;
    --optuna-samplers) optuna_samplers=$2; shift 2 ;;
    *) echo "mo_bench.sh: unknown argument '$1' (see the header of bench/mo_bench.sh)" >&2; exit 2 ;;
  esac
done
out=${out:-$build/mo-bench}
mkdir -p "$out"
py=$(bench/gp_optuna_venv.sh)

if [[ $side != optuna ]]; then
  cmake --build "$build" --target mo_bench >&2
  "$build/bin/mo_bench" --seeds "$seeds" --first-seed "$first" --trials "$trials" \
    --functions "$functions" --samplers "$tune_samplers" --out "$out/tune.jsonl"
fi
if [[ $side != tune ]]; then
  OMP_NUM_THREADS=1 nice -n 10 "$py" bench/mo_optuna.py --seeds "$seeds" --first-seed "$first" \
    --trials "$trials" --functions "$functions" --samplers "$optuna_samplers" --out "$out/optuna.jsonl"
fi
files=()
for f in "$out/tune.jsonl" "$out/optuna.jsonl"; do [[ -f $f ]] && files+=("$f"); done
"$py" bench/mo_compare.py "${files[@]}"
