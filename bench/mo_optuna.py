#!/usr/bin/env python3
"""Optuna 5.0's multi-objective samplers on the functions of mo_bench.cc.

Runs Optuna's TPESampler (default arguments, seed) and NSGAIISampler
(defaults, seed) on the problems of bench/mo_suite.py, one trial at a time
(ask, evaluate, tell), and writes one JSON line per run in mo_bench's format:

  {"side": "optuna", "function", "sampler": "tpe"|"nsga2", "seed",
   "params": [...], "values": [[...], ...], "constraints": [[...], ...],
   "sampler_cpu": [...], "ask_cpu": [...]}

with every trial's parameters, raw objective values and constraint values
in trial order. sampler_cpu is the CPU time of this thread spent inside
the sampler's own methods for that trial (infer_relative_search_space,
sample_relative, sample_independent, before_trial, after_trial; nested
calls counted once); ask_cpu is the thread time of study.ask() (the sampler
plus the in-memory storage). Constrained problems (srn) pass
constraints_func to the sampler, as Optuna's users do; the rest of the
sampler's arguments stay at their defaults.

  OMP_NUM_THREADS=1 $(bench/gp_optuna_venv.sh) bench/mo_optuna.py \
      [--seeds 30] [--first-seed 0] [--trials 200] \
      [--functions zdt1,zdt2,dtlz2,mixed,srn] [--samplers tpe,nsga2] --out FILE

--samplers also takes tpe-multivariate: TPESampler(multivariate=True),
which Optuna 5.0 does not default to with several objectives.

Appends to FILE and skips runs FILE already holds, so an interrupted run
continues where it stopped. bench/mo_compare.py reads the result.
"""
import argparse
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mo_suite  # noqa: E402
import optuna  # noqa: E402
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")

TIMED = ("infer_relative_search_space", "sample_relative", "sample_independent", "before_trial", "after_trial")


def distributions(space):
    out = {}
    for name in sorted(space):  # name order, as tune's SearchSpace
        d = space[name]
        if d[0] == "float":
            out[name] = FloatDistribution(d[1], d[2], log=d[3])
        elif d[0] == "int":
            out[name] = IntDistribution(d[1], d[2], log=d[3])
        else:
            out[name] = CategoricalDistribution(d[1])
    return out


class Clock:
    """Thread CPU time spent inside the sampler's methods (outermost calls)."""

    def __init__(self, sampler):
        self.total = 0.0
        self.depth = 0
        for name in TIMED:
            setattr(sampler, name, self.wrap(getattr(sampler, name)))

    def wrap(self, method):
        def timed(*args, **kwargs):
            if self.depth:
                return method(*args, **kwargs)
            self.depth += 1
            t0 = time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                self.total += time.thread_time() - t0
                self.depth -= 1
        return timed


def constraints_of(frozen):
    return frozen.user_attrs["constraints"]


def run(fname, kind, seed, trials):
    space, f, maximize, _ = mo_suite.SUITE[fname]
    constrained = bool(f({n: _any_value(d) for n, d in space.items()})[1])
    kw = {"seed": seed}
    if constrained:
        kw["constraints_func"] = constraints_of
    if kind == "tpe":
        sampler = optuna.samplers.TPESampler(**kw)
    elif kind == "tpe-multivariate":  # not the default with several objectives; for comparison
        sampler = optuna.samplers.TPESampler(multivariate=True, **kw)
    else:
        sampler = optuna.samplers.NSGAIISampler(**kw)
    clock = Clock(sampler)
    study = optuna.create_study(directions=["maximize" if m else "minimize" for m in maximize], sampler=sampler)
    dists = distributions(space)
    rec = {"side": "optuna", "function": fname, "sampler": kind, "seed": seed, "params": [], "values": [],
           "constraints": [], "sampler_cpu": [], "ask_cpu": []}
    for _ in range(trials):
        before = clock.total
        t0 = time.thread_time()
        trial = study.ask(dists)
        ask = time.thread_time() - t0
        values, cons = f(trial.params)
        if constrained:
            trial.set_user_attr("constraints", cons)
        study.tell(trial, values)
        rec["params"].append(trial.params)
        rec["values"].append(values)
        rec["constraints"].append(cons)
        rec["sampler_cpu"].append(clock.total - before)
        rec["ask_cpu"].append(ask)
    return rec


def _any_value(d):
    return d[1][0] if d[0] == "cat" else d[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--functions", default="zdt1,zdt2,dtlz2,mixed,srn")
    ap.add_argument("--samplers", default="tpe,nsga2")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    done = set()
    if os.path.exists(args.out):
        with open(args.out) as fh:
            for line in fh:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a line cut short by an interrupted run
                if len(r["values"]) == args.trials:
                    done.add((r["function"], r["sampler"], r["seed"]))
    with open(args.out, "a") as out:
        if out.tell() > 0:
            with open(args.out, "rb") as fh:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    out.write("\n")  # end a line cut short, which the reader skips
        for kind in args.samplers.split(","):
            for fname in args.functions.split(","):
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    if (fname, kind, seed) in done:
                        continue
                    t0 = time.time()
                    rec = run(fname, kind, seed, args.trials)
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    print("%s %s seed %d: %.1f s, sampler %.2f ms/trial" % (
                        fname, kind, seed, time.time() - t0, 1e3 * sum(rec["sampler_cpu"]) / args.trials),
                        file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
