#!/usr/bin/env python3
"""Optuna's SuccessiveHalvingPruner on the curves of asha_bench.cc.

    python3 bench/asha_optuna.py [--seeds N] [--trials N]

Uses Debian's python3-optuna (3.1). The curves, the noise and the
configurations are the same counter-based hash as in asha_bench.cc, so the
FIFO rows here must equal asha_bench's (a check that both evaluate the same
curves), and the pruner rows sit side by side with ASHA's. Trials run one at
a time (ask/tell), min_resource 1, reduction_factor 3, min_early_stopping_rate 0.
"""
import argparse
import math
import statistics

import optuna

MAX_T = 81
M64 = (1 << 64) - 1


def mix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def uniform(seed, trial, stream):
    h = mix(mix(mix(seed) ^ trial) ^ stream)
    return ((h >> 11) + 0.5) * 2.0 ** -53


def noise(seed, trial, t):
    u1 = uniform(seed, trial, 1000 + 2 * t)
    u2 = uniform(seed, trial, 1001 + 2 * t)
    return 0.02 * math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


def final_loss(x, y):
    return 0.2 + 0.5 * x + 0.4 * (y - 0.4) * (y - 0.4)


def loss(family, seed, trial, x, y, t):
    a = 2.0 if family == "crossing" else 1.0
    tau = 2 + 40 * (1 - x) if family == "crossing" else 10.0
    return final_loss(x, y) + a * math.exp(-t / tau) + noise(seed, trial, t)


def run(family, seed, pruned, max_trials, budget=None):
    """Returns (steps, completions) with completions = [(steps_at_end,
    observed, true)] in order; the trial running when the budget is spent is
    cut and counts for nothing."""
    pruner = (optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3,
                                                     min_early_stopping_rate=0)
              if pruned else optuna.pruners.NopPruner())
    study = optuna.create_study(direction="minimize", pruner=pruner,
                                sampler=optuna.samplers.RandomSampler(seed=seed))
    steps = 0
    completions = []
    number = 0
    while number < max_trials and (budget is None or steps < budget):
        study.enqueue_trial({"x": uniform(seed, number, 1), "y": uniform(seed, number, 2)})
        trial = study.ask()
        x = trial.suggest_float("x", 0, 1)
        y = trial.suggest_float("y", 0, 1)
        state = optuna.trial.TrialState.COMPLETE
        value = None
        for t in range(1, MAX_T + 1):
            if budget is not None and steps >= budget:
                state = optuna.trial.TrialState.FAIL  # cut by the budget
                break
            value = loss(family, seed, number, x, y, t)
            steps += 1
            trial.report(value, t)
            if trial.should_prune():
                state = optuna.trial.TrialState.PRUNED
                break
        if state == optuna.trial.TrialState.COMPLETE:
            study.tell(trial, value)
            completions.append((steps, value, final_loss(x, y)))
        else:
            study.tell(trial, state=state)
        number += 1
    return steps, completions, number


def pick(completions, budget):
    best = None
    for c in completions:
        if c[0] > budget:
            break
        if best is None or c[1] < best[1]:
            best = c
    return best


def fmt(v):
    return "-" if v is None else "%.4f" % v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=60)
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print("Optuna %s" % optuna.__version__)
    for family in ["crossing", "parallel"]:
        print("\n### %s curves: %d trials, max_t %d, seeds 0..%d (medians over seeds)\n"
              % (family, args.trials, MAX_T, args.seeds - 1))
        print("| pruner | steps | steps / none | best final (observed) | its true final | "
              "pruned |\n|---|---|---|---|---|---|")
        base = None
        for name, pruned in [("none (FIFO)", False), ("SuccessiveHalving", True)]:
            steps, best, truth, npruned = [], [], [], []
            for s in range(args.seeds):
                n_steps, comps, n = run(family, s, pruned, args.trials)
                p = pick(comps, n_steps)
                steps.append(n_steps)
                best.append(p[1])
                truth.append(p[2])
                npruned.append(n - len(comps))
            med = statistics.median(steps)
            base = base or med
            print("| %s | %.0f | %.3fx | %.4f | %.4f | %.0f |" % (
                name, med, med / base, statistics.median(best), statistics.median(truth),
                statistics.median(npruned)))
    budget = 20 * MAX_T
    for family in ["crossing", "parallel"]:
        print("\n### %s curves: equal budget of %d steps (no pruning: 20 full trials)\n"
              % (family, budget))
        print("| seed | no pruning best (true) | SH trials started | SH best (true) | better |\n"
              "|---|---|---|---|---|")
        wins = same = 0
        for s in range(args.seeds):
            _, fc, _ = run(family, s, False, 1000, budget)
            _, sc, n = run(family, s, True, 1000, budget)
            fp, sp = pick(fc, budget), pick(sc, budget)
            ft = fp[2] if fp else math.inf
            st = sp[2] if sp else math.inf
            wins += st < ft
            same += st == ft
            better = "SH" if st < ft else "none" if st > ft else "same trial"
            print("| %d | %s (%s) | %d | %s (%s) | %s |" % (
                s, fmt(fp and fp[1]), fmt(fp and fp[2]), n, fmt(sp and sp[1]),
                fmt(sp and sp[2]), better))
        print("\nSuccessiveHalvingPruner's pick is better on %d of %d seeds "
              "(%d the same configuration)." % (wins, args.seeds, same))


if __name__ == "__main__":
    main()
