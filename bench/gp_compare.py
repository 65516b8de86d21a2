#!/usr/bin/env python3
"""Tables from the per-run dumps of gp_bench (--dump) and gp_optuna.py (--dump).

  bench/gp_compare.py FILE.jsonl... [--marks 20,30,50] [--inflight K]
      [--crossover GP_SAMPLER,TPE_SAMPLER]

Each dump line is one run: function, sampler, seed, inflight, the best value
after each trial, and CPU seconds per suggestion. Runs are grouped by
(function, sampler, inflight); a later file's run of the same group and seed
replaces an earlier one, so partial re-runs can be merged.

Default output: per group, the seeds, the median [q25, q75] simple regret at
each mark and the mean CPU ms per suggestion (all / past startup).

--crossover A,B: per function, the median regret of A and of B at every
trial count both reached, and the crossover: the first trial count from
which B's median regret stays at or below A's (none if it never does).
With --paired, also the share of seeds on which B's regret is at or below
A's at each mark (the same seed draws the same random startup trials on
both sides only when both are tune's samplers). With --mwu, also the
two-sided p-value of a Mann-Whitney U test of A's regrets against B's at
each mark (normal approximation with tie correction).
"""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tpe_suite  # noqa: E402

OPTIMA = {p[0]: p[3] for p in tpe_suite.SUITE}
OPTIMA["lr_valley"] = 0.0


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def load(paths, inflight):
    groups = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                r = json.loads(line)
                if inflight is not None and r.get("inflight", 1) != inflight:
                    continue
                key = (r["function"], r["sampler"], r.get("inflight", 1))
                groups.setdefault(key, {})[r["seed"]] = r
    return groups


def mann_whitney_p(a, b):
    """Two-sided p of the Mann-Whitney U test, normal approximation with ties."""
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks, i = [0.0] * len(pooled), 0
    ties = 0.0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    n1, n2 = len(a), len(b)
    r1 = sum(r for r, (_, side) in zip(ranks, pooled) if side == 0)
    u = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return math.erfc(max(z, 0) / math.sqrt(2))


def regrets(runs, function, n):
    opt = OPTIMA[function]
    return [r["best"][n - 1] - opt for r in runs.values() if len(r["best"]) >= n]


def table(groups, marks):
    print("| function | sampler | in flight | seeds |" + "".join(" @%d median [q25, q75] |" % m for m in marks)
          + " CPU ms/suggestion (all / past startup) |")
    print("|---|---|---|---|" + "---|" * (len(marks) + 1))
    for (function, sampler, inflight), runs in sorted(groups.items()):
        cells = ""
        for m in marks:
            v = regrets(runs, function, m)
            cells += " %.3g [%.3g, %.3g] |" % (quantile(v, .5), quantile(v, .25), quantile(v, .75)) if v else " - |"
        cpu_all = statistics.mean(r["cpu_per_suggestion"] for r in runs.values())
        cpu_model = statistics.mean(r["cpu_past_startup"] for r in runs.values())
        print("| %s | %s | %d | %d |%s %.2f / %.2f |" % (function, sampler, inflight, len(runs), cells,
                                                        1e3 * cpu_all, 1e3 * cpu_model))


def crossover(groups, a, b, marks, paired, mwu):
    functions = sorted({k[0] for k in groups})
    print("| function | seeds | %s |" % " | ".join("@%d %s / %s" % (m, a, b) for m in marks) + " crossover |")
    print("|---|---|" + "---|" * (len(marks) + 1))
    for function in functions:
        ga = next((r for k, r in groups.items() if k[0] == function and k[1] == a), None)
        gb = next((r for k, r in groups.items() if k[0] == function and k[1] == b), None)
        if not ga or not gb:
            continue
        n_max = min(min(len(r["best"]) for r in ga.values()), min(len(r["best"]) for r in gb.values()))
        med_a = [statistics.median(regrets(ga, function, n)) for n in range(1, n_max + 1)]
        med_b = [statistics.median(regrets(gb, function, n)) for n in range(1, n_max + 1)]
        cross = None
        for n in range(n_max, 0, -1):
            if med_b[n - 1] > med_a[n - 1]:
                break
            cross = n
        cells = []
        for m in marks:
            if m > n_max:
                cells.append("-")
                continue
            cell = "%.3g / %.3g" % (med_a[m - 1], med_b[m - 1])
            if paired:
                seeds = sorted(set(ga) & set(gb))
                wins = sum(gb[s]["best"][m - 1] <= ga[s]["best"][m - 1] for s in seeds)
                cell += " (%d/%d)" % (wins, len(seeds))
            if mwu:
                cell += " p %.2g" % mann_whitney_p(regrets(ga, function, m), regrets(gb, function, m))
            cells.append(cell)
        print("| %s | %d | %s | %s |" % (function, min(len(ga), len(gb)), " | ".join(cells),
                                        "none up to %d" % n_max if cross is None else str(cross)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--marks", default="20,30,50")
    ap.add_argument("--inflight", type=int)
    ap.add_argument("--crossover")
    ap.add_argument("--paired", action="store_true")
    ap.add_argument("--mwu", action="store_true")
    args = ap.parse_args()
    marks = [int(m) for m in args.marks.split(",")]
    groups = load(args.files, args.inflight)
    if args.crossover:
        a, b = args.crossover.split(",")
        crossover(groups, a, b, marks, args.paired, args.mwu)
    else:
        table(groups, marks)


if __name__ == "__main__":
    main()
