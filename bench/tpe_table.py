#!/usr/bin/env python3
"""The tables of bench/tpe_vs_optuna.sh, from the JSON lines of
`tpe_bench quality --dump` (tune) and `tpe_optuna.py quality --dump` (Optuna).

Per function, the median simple regret after the last trial for each side
and mode; the ratio tune default / Optuna default with a 95% bootstrap
interval (each side's seeds resampled on their own, as they are
independent runs) and P(tune < Optuna): the chance that a tune run ends
below an Optuna run (ties half), with its standard error. Last row: the
geometric mean of the ratios over the functions, with the interval of the
same bootstrap. Only seeds present on both sides count. One table for
sequential runs (1 in flight), then one per larger number in flight (the two
defaults and tune's multivariate mode). Standard library only.

  python3 bench/tpe_table.py --tune T.jsonl... --optuna O.jsonl... [--functions a,b] [--resamples 1000]

Each median is over the seeds that run has; the ratios and P over the
seeds both sides of the ratio ran (at least 20, else no ratio). The last column sets tune's default
beside tune's multivariate mode with Optuna's settings, the same search as
Optuna's default (bench/RESULTS.md): the effect of tune's own rules, on
more seeds where Optuna's runs are few.
"""
import argparse
import json
import math
import random
import statistics


MIN_SEEDS = 20  # fewer common seeds than this: no ratio against Optuna


def load(paths):
    runs = {}  # (function, mode, inflight) -> {seed: regret}
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                key = (r["function"], r["mode"], r.get("inflight", 1))
                runs.setdefault(key, {})[r["seed"]] = r["regret"]
    return runs


def prob_below(xa, xb):
    """P(a < b) + P(a == b) / 2 over independent draws."""
    merged = sorted([(x, 0) for x in xa] + [(x, 1) for x in xb])
    below, seen_b, i = 0.0, 0, 0
    while i < len(merged):
        j = i
        while j < len(merged) and merged[j][0] == merged[i][0]:
            j += 1
        group_a = sum(1 for k in range(i, j) if merged[k][1] == 0)
        group_b = (j - i) - group_a
        below += group_a * (len(xb) - seen_b - group_b) + 0.5 * group_a * group_b
        seen_b += group_b
        i = j
    return below / (len(xa) * len(xb))


def ratio(a, b):
    if b > 0:
        return a / b
    return 1.0 if a == b else math.inf


def fmt(x):
    return "%.4g" % x


class RatioColumn:
    """Ratios of medians A / B per function, their bootstrap intervals, and
    the geometric mean over the functions with the same bootstrap."""

    def __init__(self, resamples, rng):
        self.resamples, self.rng = resamples, rng
        self.logs, self.boot_logs = [], [0.0] * resamples

    def add(self, xa, xb):
        r = ratio(statistics.median(xa), statistics.median(xb))
        boot = []
        for i in range(self.resamples):
            br = ratio(statistics.median(self.rng.choices(xa, k=len(xa))),
                       statistics.median(self.rng.choices(xb, k=len(xb))))
            boot.append(br)
            self.boot_logs[i] += math.log(br) if 0 < br < math.inf else (math.inf if br == math.inf else -math.inf)
        boot.sort()
        lo, hi = boot[int(0.025 * self.resamples)], boot[int(0.975 * self.resamples) - 1]
        self.logs.append(math.log(r) if 0 < r < math.inf else 0.0)
        return "**%.3f** [%.3f, %.3f]" % (r, lo, hi)

    def geomean(self):
        if not self.logs:
            return "-"
        n = len(self.logs)
        gb = sorted(math.exp(x / n) for x in self.boot_logs)
        lo, hi = gb[int(0.025 * self.resamples)], gb[int(0.975 * self.resamples) - 1]
        return "**%.3f** [%.3f, %.3f] (%d)" % (math.exp(sum(self.logs) / n), lo, hi, n)


def table(tune, optuna, functions, inflight, resamples, rng):
    """Prints one table: every function with tune's default runs."""
    seq = inflight == 1
    tune_modes = ["default", "multivariate", "univariate"] if seq else ["default", "multivariate"]
    optuna_modes = ["default", "univariate"] if seq else ["default"]
    head = (["function"] + ["tune %s" % m for m in tune_modes] + ["Optuna %s" % m for m in optuna_modes]
            + ["tune / Optuna default [95%]", "P(tune < Optuna default)", "seeds (Optuna)",
               "tune default / tune multivariate [95%]"])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    vs_optuna, vs_mv = RatioColumn(resamples, rng), RatioColumn(resamples, rng)
    for fn in functions:
        td = tune.get((fn, "default", inflight), {})
        if not td:
            continue
        od = optuna.get((fn, "default", inflight), {})
        seeds = sorted(set(td) & set(od))
        if len(seeds) < MIN_SEEDS:
            seeds = []  # too few to compare
        tune_seeds = sorted(td)
        cells = [fn]
        for m in tune_modes:
            runs = tune.get((fn, m, inflight), {})
            cells.append(fmt(statistics.median(runs.values())) if runs else "-")
        for m in optuna_modes:
            runs = optuna.get((fn, m, inflight), {})
            cells.append(fmt(statistics.median(runs.values())) if len(runs) >= MIN_SEEDS else "-")
        if seeds:
            xa = [td[s] for s in seeds]
            xb = [od[s] for s in seeds]
            p = prob_below(xa, xb)
            se = ((len(xa) + len(xb) + 1) / (12.0 * len(xa) * len(xb))) ** 0.5
            cells += [vs_optuna.add(xa, xb), "%.3f +- %.3f" % (p, se),
                      "%d-%d (%d)" % (seeds[0], seeds[-1], len(seeds))]
        else:
            cells += ["-", "-", "-"]
        mv = tune.get((fn, "multivariate", inflight), {})
        both = [s for s in tune_seeds if s in mv]
        cells.append(vs_mv.add([td[s] for s in both], [mv[s] for s in both]) if both else "-")
        print("| " + " | ".join(cells) + " |")
    cells = ["geometric mean (functions)"] + [""] * (len(tune_modes) + len(optuna_modes))
    cells += [vs_optuna.geomean(), "", "", vs_mv.geomean()]
    print("| " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tune", nargs="+", required=True)
    ap.add_argument("--optuna", nargs="+", required=True)
    ap.add_argument("--functions", default="", help="comma-separated, in table order (default: all found)")
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    tune, optuna = load(args.tune), load(args.optuna)
    functions = [f for f in args.functions.split(",") if f]
    if not functions:
        for key in list(tune) + list(optuna):
            if key[0] not in functions:
                functions.append(key[0])
    rng = random.Random(0)
    for k in sorted({key[2] for key in tune if key[1] == "default"}):
        print("\n%s, median simple regret after the last trial:\n" %
              ("Sequential" if k == 1 else "%d trials in flight" % k))
        table(tune, optuna, functions, k, args.resamples, rng)


if __name__ == "__main__":
    main()
