#!/usr/bin/env python3
"""Optuna 5.0's GPSampler started from the very startup trials tune drew.

Reads a --dump of bench/gp_bench.cc (one line per run, with the parameters
of every trial; the first 10 are its random startup trials) and, for each
GP run in it, runs Optuna's GPSampler(seed=the run's seed) on the same
function with those 10 trials enqueued (study.enqueue_trial), the same
budget and the same number of trials in flight, so that the two libraries differ only in what their GPs
suggest after the startup. The seeds of the two libraries otherwise draw
different startup points, and on a function whose runs split into clusters
(Hartmann-6: its local minimum or near 0) that alone moves a 10-seed median
by an order of magnitude. Writes gp_optuna.py's dump lines with sampler
"optuna-gp-paired"; bench/gp_compare.py --crossover gp,optuna-gp-paired
--paired then counts, per mark, the seeds on which Optuna's regret is at or
below tune's.

  $(bench/gp_optuna_venv.sh) bench/gp_optuna_paired.py TUNE_DUMP --dump OUT [--functions a,b]
"""
import argparse
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gp_optuna  # noqa: E402
import optuna  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tune_dump")
    ap.add_argument("--dump", required=True)
    ap.add_argument("--functions")
    ap.add_argument("--sampler", default="gp", help="the tune sampler whose runs to pair")
    args = ap.parse_args()
    problems = {p[0]: p for p in gp_optuna.SUITE}
    wanted = set(args.functions.split(",")) if args.functions else None
    with open(args.tune_dump) as f, open(args.dump, "w") as out:
        for line in f:
            r = json.loads(line)
            if r["sampler"] != args.sampler or (wanted and r["function"] not in wanted):
                continue
            _, space, fn, optimum = problems[r["function"]]
            curve = gp_optuna.run(fn, space, "gp", r["seed"], len(r["best"]), r.get("inflight", 1),
                                  startup=r["params"][:10])[0]
            out.write(json.dumps({"function": r["function"], "sampler": "optuna-gp-paired", "seed": r["seed"],
                                  "inflight": r.get("inflight", 1), "best": curve}) + "\n")
            out.flush()
            print("%s seed %d: regret@%d tune %.3g, Optuna %.3g" % (
                r["function"], r["seed"], len(curve), r["best"][-1] - optimum, curve[-1] - optimum), flush=True)


if __name__ == "__main__":
    main()
