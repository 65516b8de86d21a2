#!/usr/bin/env python3
"""Optuna 5.0's GPSampler on the functions of gp_bench.cc, side by side.

Same objectives (bench/tpe_suite.py, plus the lr_valley of gp_bench.cc),
same budgets, same statistics as `gp_bench`: median and quartiles over the
seeds of the simple regret after 20, 30 and 50 trials, and the mean CPU time
of the process per suggestion (ask() with every parameter; torch's threads
included) over the whole run, past the 10 startup trials, and over the
last 10. With
--inflight K, K trials run at once (ask/tell with K open trials).

  $(bench/gp_optuna_venv.sh) bench/gp_optuna.py [--seeds 30] [--first-seed 0]
      [--trials 50] [--inflight 1] [--functions lr_valley,branin,...] [--sampler gp|tpe]
      [--dump FILE]

Prints a Markdown table in gp_bench's format. --dump writes one JSON line
per run, as gp_bench's --dump does (the best value after each trial).
"""
import argparse
import json
import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optuna  # noqa: E402
import tpe_suite  # noqa: E402
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")


def lr_valley(p):
    # gp_bench.cc's LrValley: minimum 0 at lr 3e-4, weight_decay 1e-3, dropout 0.1.
    u = math.log10(p["lr"] / 3e-4)
    v = math.log10(p["weight_decay"] / 1e-3)
    w = p["dropout"] - 0.1
    return 0.3 * (u + 0.2 * v) ** 2 + 0.05 * v * v + 2.0 * w * w


SUITE = tpe_suite.SUITE + [
    ("lr_valley", {"lr": ("float", 1e-6, 1e-1, True), "weight_decay": ("float", 1e-6, 1e-1, True),
                   "dropout": ("float", 0.0, 0.5, False)}, lr_valley, 0.0),
]


def distributions(space):
    out = {}
    for name in sorted(space):
        d = space[name]
        if d[0] == "float":
            out[name] = FloatDistribution(d[1], d[2], log=d[3])
        elif d[0] == "int":
            out[name] = IntDistribution(d[1], d[2], log=d[3])
        else:
            out[name] = CategoricalDistribution(d[1])
    return out


def run(f, space, sampler_kind, seed, trials, inflight, startup=()):
    """One run: the best value after each trial and CPU per suggestion (all,
    past the 10 startup trials, last 10). `startup`: parameter dicts
    enqueued as the first trials (bench/gp_optuna_paired.py)."""
    if sampler_kind == "gp":
        sampler = optuna.samplers.GPSampler(seed=seed)
    else:
        sampler = optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(sampler=sampler)
    for params in startup:
        study.enqueue_trial(params)
    dists = distributions(space)
    best, curve, open_trials = math.inf, [], []
    cpu_all = cpu_model = cpu_last = 0.0

    def finish():
        nonlocal best
        t = open_trials.pop(0)
        v = f(t.params)
        study.tell(t, v)
        best = min(best, v)
        curve.append(best)

    for i in range(trials):
        while len(open_trials) >= inflight:
            finish()
        t0 = time.process_time()
        t = study.ask(dists)
        dt = time.process_time() - t0
        cpu_all += dt
        if i >= 10:
            cpu_model += dt
        if i >= trials - 10:
            cpu_last += dt / 10
        open_trials.append(t)
    while open_trials:
        finish()
    return curve, cpu_all / trials, cpu_model / max(1, trials - 10), cpu_last


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--inflight", type=int, default=1)
    ap.add_argument("--functions", default="lr_valley,branin,hartmann6,mixed6,hpo_lora")
    ap.add_argument("--sampler", default="gp", choices=["gp", "tpe"])
    ap.add_argument("--dump")
    args = ap.parse_args()
    dump = open(args.dump, "w") if args.dump else None
    marks = [m for m in (20, 30, 50, 100, 200) if m <= args.trials]
    problems = {p[0]: p for p in SUITE}
    print("| function | sampler |" + "".join(" regret@%d median [q25, q75] |" % m for m in marks)
          + " CPU ms/suggestion (all / past startup / last 10) |")
    print("|---|---|" + "---|" * (len(marks) + 1))
    for name in args.functions.split(","):
        _, space, f, optimum = problems[name]
        at = [[] for _ in marks]
        cpu_all = cpu_model = cpu_last = 0.0
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            curve, ca, cm, cl = run(f, space, args.sampler, seed, args.trials, args.inflight)
            for k, m in enumerate(marks):
                at[k].append(curve[m - 1] - optimum)
            cpu_all += ca
            cpu_model += cm
            cpu_last += cl
            if dump:
                dump.write(json.dumps({"function": name, "sampler": "optuna-" + args.sampler, "seed": seed,
                                       "inflight": args.inflight, "best": curve, "cpu_per_suggestion": ca,
                                       "cpu_past_startup": cm}) + "\n")
                dump.flush()
        cells = "".join(" %.3g [%.3g, %.3g] |" % (quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75))
                        for v in at)
        print("| %s | optuna-%s |%s %.2f / %.2f / %.2f |" % (
            name, args.sampler, cells, 1e3 * cpu_all / args.seeds, 1e3 * cpu_model / args.seeds,
            1e3 * cpu_last / args.seeds), flush=True)


if __name__ == "__main__":
    main()
