#!/usr/bin/env python3
"""Optuna's TPESampler on the functions of tpe_bench.cc, side by side.

Same objectives (bench/tpe_suite.py), same budgets, same statistics as
`tpe_bench`: simple regret after 25/50/100 trials (median and quartiles over
the seeds) for Optuna's TPE (univariate, multivariate, or TPESampler() as
released: --modes default), optionally with --inflight K trials running at
once (ask/tell with K open trials), and CPU time per suggestion
(thread time of ask() plus the six suggest calls) with a history of n
completed random trials on the mixed 6-D space.

  python3 bench/tpe_optuna.py [quality] [timing] [--seeds 20] [--sizes 100,1000]
                              [--functions branin,hartmann6,mixed6] [--normalized-kernels]
                              [--modes univariate,multivariate,default] [--inflight K] [--dump F]
  python3 bench/tpe_optuna.py probe --history H.jsonl [--make-history 30] --seeds 4000
                              --modes multivariate --dump P.jsonl

`probe` proposes one mixed6 trial per seed after a fixed history (written
first with --make-history N), for bench/compare_probe.py to set beside
`tpe_bench probe`: a sampler-level comparison, below the regret tables.
--stable-argsort orders equal values as tune does (for quality and probe).

Runs with Debian's python3-optuna (3.1) or a current release (checked with
5.0) in a virtual environment; prints Markdown tables. --normalized-kernels
applies the later upstream fix to Optuna 3.1's _truncnorm.logpdf (the
missing -log(scale) term), which tune's estimator has; releases that have
the fix already ignore it. Samplers are built with explicit
multivariate=False/True (5.0 defaults to True for one objective).
"""
import argparse
import json
import math
import time
import warnings

import numpy as np
import optuna
import tpe_suite
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")


MIXED_SPACE = {
    "optimizer": CategoricalDistribution(["adam", "sgd", "adamw"]),
    "lora_r": CategoricalDistribution([4, 8, 16, 32, 64]),
    "num_layers": IntDistribution(1, 8),
    "lr": FloatDistribution(1e-6, 1e-1, log=True),
    "weight_decay": FloatDistribution(1e-6, 1e-1, log=True),
    "dropout": FloatDistribution(0, 0.5),
}


def mixed_value(p):
    return tpe_suite.mixed6(p)


def suggest_mixed(t):
    # Name order as in tune's SearchSpace (sorted by name).
    p = {}
    for name in sorted(MIXED_SPACE):
        d = MIXED_SPACE[name]
        if isinstance(d, CategoricalDistribution):
            p[name] = t.suggest_categorical(name, d.choices)
        elif isinstance(d, IntDistribution):
            p[name] = t.suggest_int(name, d.low, d.high)
        else:
            p[name] = t.suggest_float(name, d.low, d.high, log=d.log)
    return p


def objective(space, f):
    """f over `space`, suggesting in name order as tune's SearchSpace holds it."""
    names = sorted(space)

    def suggest(trial, name):
        d = space[name]
        if d[0] == "cat":
            return trial.suggest_categorical(name, d[1])
        if d[0] == "int":
            return trial.suggest_int(name, d[1], d[2], log=d[3])
        return trial.suggest_float(name, d[1], d[2], log=d[3])

    def run(trial):
        return f({name: suggest(trial, name) for name in names})
    return run


def make_sampler(mode, seed):
    """mode: univariate, multivariate, or default (TPESampler() as released)."""
    if mode == "default":
        return optuna.samplers.TPESampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, multivariate=(mode == "multivariate"))


def run_study(f, mode, seed, trials, inflight):
    """One run; up to `inflight` trials asked and not yet told (the oldest is
    told before a new one is asked once `inflight` are open), as that many
    workers on one study whose trials take equal time. Returns the best
    value after each trial is told, in order of telling."""
    study = optuna.create_study(sampler=make_sampler(mode, seed))
    running = []
    best, best_after = math.inf, []

    def finish_oldest():
        nonlocal best
        tr, v = running.pop(0)
        study.tell(tr, v)
        best = min(best, v)
        best_after.append(best)

    for _ in range(trials):
        if len(running) >= inflight:
            finish_oldest()
        tr = study.ask()
        running.append((tr, f(tr)))
    while running:
        finish_oldest()
    return best_after


def quality(seeds, trials, functions=None, modes=("univariate", "multivariate"), first_seed=0,
            dump=None, inflight=1):
    print("| function | sampler | regret@25 median [q1, q3] | regret@50 median [q1, q3] "
          "| regret@100 median [q1, q3] |")
    print("|---|---|---|---|---|")
    for name, space, fn, optimum in tpe_suite.SUITE:
        if functions and name not in functions:
            continue
        f = objective(space, fn)
        for mode in modes:
            regrets = {25: [], 50: [], 100: []}
            for seed in range(first_seed, first_seed + seeds):
                best_after = run_study(f, mode, seed, trials, inflight)
                for k in regrets:
                    if k <= trials:
                        regrets[k].append(best_after[k - 1] - optimum)
                if dump:
                    line = {"function": name, "mode": mode, "inflight": inflight, "seed": seed,
                            "trials": trials, "regret": best_after[-1] - optimum}
                    for k in (25, 50):
                        if k < trials:
                            line["regret_%d" % k] = regrets[k][-1]
                    dump.write(json.dumps(line) + "\n")
                    dump.flush()
            cells = []
            for k in (25, 50, 100):
                r = np.asarray(regrets[k])
                if len(r) == 0:
                    cells.append("-")
                    continue
                cells.append("%.4g [%.4g, %.4g]" % (np.median(r), np.quantile(r, 0.25),
                                                    np.quantile(r, 0.75)))
            label = "optuna-" + mode + (", %d in flight" % inflight if inflight > 1 else "")
            print("| %s | %s | %s |" % (name, label, " | ".join(cells)), flush=True)


def timing(sizes):
    print("| sampler | history | ms per suggestion | suggestions timed |")
    print("|---|---|---|---|")
    for kind in ("optuna-tpe", "optuna-tpe-multivariate"):
        for n in sizes:
            rng = np.random.RandomState(1234)
            study = optuna.create_study(
                sampler=optuna.samplers.TPESampler(seed=1, multivariate=kind.endswith("multivariate")))
            trials = []
            for _ in range(n):
                p = {
                    "optimizer": ["adam", "sgd", "adamw"][rng.randint(3)],
                    "lora_r": [4, 8, 16, 32, 64][rng.randint(5)],
                    "num_layers": int(rng.randint(1, 9)),
                    "lr": float(math.exp(rng.uniform(math.log(1e-6), math.log(1e-1)))),
                    "weight_decay": float(math.exp(rng.uniform(math.log(1e-6), math.log(1e-1)))),
                    "dropout": float(rng.uniform(0, 0.5)),
                }
                trials.append(optuna.trial.create_trial(params=p, distributions=MIXED_SPACE,
                                                        value=mixed_value(p)))
            study.add_trials(trials)
            reps = 5 if n >= 1000 else 20
            suggest_mixed(study.ask())  # warm-up (caches)
            start = time.thread_time()
            for _ in range(reps):
                suggest_mixed(study.ask())
            ms = (time.thread_time() - start) / reps * 1e3
            print("| %s | %d | %.3f | %d |" % (kind, n, ms, reps), flush=True)


def make_history(path, n, seed):
    """Writes n random mixed6 trials (params and value) as JSON lines."""
    rng = np.random.RandomState(seed)
    with open(path, "w") as f:
        for _ in range(n):
            p = {"optimizer": ["adam", "sgd", "adamw"][rng.randint(3)],
                 "lora_r": [4, 8, 16, 32, 64][rng.randint(5)],
                 "num_layers": int(rng.randint(1, 9)),
                 "lr": float(10 ** rng.uniform(-6, -1)),
                 "weight_decay": float(10 ** rng.uniform(-6, -1)),
                 "dropout": float(rng.uniform(0, 0.5))}
            f.write(json.dumps({"params": p, "value": mixed_value(p)}) + "\n")


def probe(history_path, seeds, modes, dump):
    """One suggestion per seed after the same fixed mixed6 history: the
    distribution of what the sampler proposes, to set beside tpe_bench probe."""
    rows = [json.loads(line) for line in open(history_path)]
    trials = [optuna.trial.create_trial(params=r["params"], distributions=MIXED_SPACE, value=r["value"])
              for r in rows]
    for mode in modes:
        for seed in range(seeds):
            sampler = optuna.samplers.TPESampler(seed=seed, multivariate=(mode == "multivariate"))
            study = optuna.create_study(sampler=sampler)
            study.add_trials(trials)
            t = study.ask()
            dump.write(json.dumps({"mode": mode, "seed": seed, "params": suggest_mixed(t)}) + "\n")


def stable_argsort():
    """Makes the Parzen estimator's argsort stable (ties by observation index)."""
    import optuna_stable_argsort
    optuna_stable_argsort.make_stable()


def kernels_normalized():
    """Whether this Optuna's truncnorm logpdf has the -log(scale) term (3.1 does not)."""
    from optuna.samplers._tpe import _truncnorm
    v = float(np.asarray(_truncnorm.logpdf(np.asarray([0.0]), -50.0, 50.0, loc=0.0, scale=2.0))[0])
    return abs(v - (-0.5 * math.log(2 * math.pi) - math.log(2.0))) < 1e-9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="*", default=["quality", "timing"])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--normalized-kernels", action="store_true")
    ap.add_argument("--functions", default="", help="comma-separated subset, e.g. mixed6")
    ap.add_argument("--modes", default="univariate,multivariate",
                    help="comma-separated: univariate, multivariate, default (TPESampler())")
    ap.add_argument("--inflight", type=int, default=1,
                    help="trials asked and not yet told at once (workers on one study)")
    ap.add_argument("--dump", help="write one JSON line per run (bench/compare_regrets.py)")
    ap.add_argument("--append", action="store_true", help="append to --dump instead of replacing it")
    ap.add_argument("--history", help="probe: the mixed6 history (JSON lines)")
    ap.add_argument("--make-history", type=int, default=0,
                    help="probe: first write this many random trials to --history")
    ap.add_argument("--history-seed", type=int, default=0)
    ap.add_argument("--stable-argsort", action="store_true",
                    help="order ties among equal values by observation index, as tune does "
                         "(numpy's default argsort orders them by its SIMD sort)")
    args = ap.parse_args()
    if args.stable_argsort:
        stable_argsort()
    if "probe" in args.what:
        if args.make_history:
            make_history(args.history, args.make_history, args.history_seed)
        with open(args.dump, "w") as dump:
            probe(args.history, args.seeds, [m for m in args.modes.split(",") if m], dump)
        return
    normalized = kernels_normalized()
    if args.normalized_kernels and not normalized:
        from optuna.samplers._tpe import _truncnorm
        from optuna.samplers._tpe import parzen_estimator as pe
        upstream = _truncnorm.logpdf
        pe.truncnorm.logpdf = lambda x, a, b, loc=0, scale=1: (
            upstream(x, a, b, loc=loc, scale=scale) - np.log(scale))
        normalized = True
    print("optuna", optuna.__version__, "(continuous kernels %s)" %
          ("normalised" if normalized else "unnormalised"))
    if "quality" in args.what:
        dump = open(args.dump, "a" if args.append else "w") if args.dump else None
        quality(args.seeds, args.trials, [f for f in args.functions.split(",") if f],
                [m for m in args.modes.split(",") if m], args.first_seed, dump, args.inflight)
        if dump:
            dump.close()
    if "timing" in args.what:
        timing([int(s) for s in args.sizes.split(",")])


if __name__ == "__main__":
    main()
