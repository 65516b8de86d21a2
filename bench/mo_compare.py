#!/usr/bin/env python3
"""Hypervolumes of mo_bench (tune) and mo_optuna.py (Optuna) runs, side by side.

Reads JSON-lines files of either side (bench/mo_bench.cc and
bench/mo_optuna.py describe the format), checks every trial's recorded
values and constraints against bench/mo_suite.py's definitions evaluated
at its parameters (so both sides ran the same functions), and computes for
each run the hypervolume of its feasible trials among the first 100 and
the first 200 with Optuna's own compute_hypervolume (independent of tune's
core/pareto.cc), every objective turned into a loss (maximised ones
negated, and their reference coordinate with them), against the fixed
reference point of mo_suite.SUITE. Trials not strictly better than the
reference in every objective add nothing.

Prints a Markdown table: per function and tune sampler (a variant such as
tpe-univariate beside Optuna's sampler of the name before the '-'), the median hypervolume
(quartiles in brackets) over the seeds at 100 and 200 trials on each side,
P(a tune run beats an Optuna run) at the last mark with the Mann-Whitney
p-value, the sampler's mean CPU time per trial on each side, and Optuna's over
tune's; then one line per function and sampler saying whether the goal of
issue 31 is met (tune's median hypervolume at least Optuna's at 100 and 200
trials, at a twentieth of Optuna's sampler time or less).

  $(bench/gp_optuna_venv.sh) bench/mo_compare.py TUNE.jsonl OPTUNA.jsonl [--marks 100,200]
"""
import argparse
import json
import math
import os
import sys
from collections import defaultdict

import numpy as np
from scipy.stats import mannwhitneyu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mo_suite  # noqa: E402
from optuna._hypervolume import compute_hypervolume  # noqa: E402


def hypervolume(values, constraints, maximize, ref):
    sign = np.array([-1.0 if m else 1.0 for m in maximize])
    ref = sign * np.array(ref, dtype=float)
    pts = [sign * np.array(v, dtype=float) for v, c in zip(values, constraints) if all(x <= 0 for x in c)]
    pts = [p for p in pts if np.all(p < ref)]
    if not pts:
        return 0.0
    return float(compute_hypervolume(np.array(pts), ref))


def check(rec):
    _, f, _, _ = mo_suite.SUITE[rec["function"]]
    for i, p in enumerate(rec["params"]):
        values, cons = f(p)
        for got, want in ((rec["values"][i], values), (rec["constraints"][i], cons)):
            if len(got) != len(want) or any(not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
                                            for a, b in zip(got, want)):
                sys.exit("mo_compare: %s %s %s seed %d trial %d: recorded %r, mo_suite.py gives %r" % (
                    rec["side"], rec["function"], rec["sampler"], rec["seed"], i, got, want))


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def superiority(a, b):
    """P(a run of `a` beats one of `b`), ties halved, and the two-sided
    Mann-Whitney U p-value: how far the two sets of seeds differ beyond
    chance (p >= 0.05: within the spread of the seeds)."""
    wins = sum((x > y) + 0.5 * (x == y) for x in a for y in b) / (len(a) * len(b))
    p = mannwhitneyu(a, b, alternative="two-sided").pvalue
    return "%.2f (%.2g)" % (wins, p)


def fmt(x):
    return "%.4g" % x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--marks", default="100,200")
    args = ap.parse_args()
    marks = [int(m) for m in args.marks.split(",")]
    # (function, sampler, side) -> {"hv": [[per seed] per mark], "cpu": [...], "ask": [...], "seeds": set}
    runs = defaultdict(lambda: {"hv": [[] for _ in marks], "cpu": [], "ask": [], "seeds": set()})
    order = []
    for path in args.files:
        with open(path) as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut short by an interrupted run
                check(rec)
                _, _, maximize, ref = mo_suite.SUITE[rec["function"]]
                key = (rec["function"], rec["sampler"], rec["side"])
                r = runs[key]
                if rec["seed"] in r["seeds"]:
                    continue
                if len(rec["values"]) < max(marks):
                    continue
                r["seeds"].add(rec["seed"])
                for k, m in enumerate(marks):
                    r["hv"][k].append(hypervolume(rec["values"][:m], rec["constraints"][:m], maximize, ref))
                r["cpu"].append(sum(rec["sampler_cpu"]) / len(rec["sampler_cpu"]))
                if "ask_cpu" in rec:
                    r["ask"].append(sum(rec["ask_cpu"]) / len(rec["ask_cpu"]))
    functions = [f for f in mo_suite.SUITE if any(k[0] == f for k in runs)]
    # Rows: every tune sampler (its variants such as tpe-univariate set
    # beside Optuna's sampler of the name before the first '-'), then
    # Optuna's samplers that no tune row showed.
    rows = []
    for fn in functions:
        shown = set()
        for (f, s, side) in runs:
            if f == fn and side == "tune":
                base = s.split("-")[0]
                rows.append((fn, s, runs[(f, s, side)], runs.get((fn, base, "optuna"))))
                shown.add(base)
        for (f, s, side) in runs:
            if f == fn and side == "optuna" and s not in shown:
                rows.append((fn, s, None, runs[(f, s, side)]))
    head = "| function | sampler | seeds (tune / Optuna) |"
    for m in marks:
        head += " HV@%d tune | HV@%d Optuna |" % (m, m)
    head += " P(tune > Optuna) @%d (p) |" % marks[-1]
    head += " sampler CPU ms/trial tune | Optuna (ask()) | Optuna / tune |"
    print(head)
    print("|" + "---|" * (3 + 2 * len(marks) + 4))
    verdicts = []
    for fn, s, t, o in rows:
        row = "| %s | %s | %s / %s |" % (fn, s, len(t["seeds"]) if t else "-", len(o["seeds"]) if o else "-")
        for k in range(len(marks)):
            for side in (t, o):
                if side:
                    v = side["hv"][k]
                    row += " %s [%s, %s] |" % (fmt(quantile(v, 0.5)), fmt(quantile(v, 0.25)), fmt(quantile(v, 0.75)))
                else:
                    row += " - |"
        row += " %s |" % superiority(t["hv"][-1], o["hv"][-1]) if t and o else " - |"
        tc = 1e3 * sum(t["cpu"]) / len(t["cpu"]) if t else None
        oc = 1e3 * sum(o["cpu"]) / len(o["cpu"]) if o else None
        oa = 1e3 * sum(o["ask"]) / len(o["ask"]) if o and o["ask"] else None
        row += " %s |" % ("%.4f" % tc if tc is not None else "-")
        row += " %s |" % ("%.3f (%.3f)" % (oc, oa) if oc is not None else "-")
        row += " %s |" % ("%.1fx" % (oc / tc) if tc and oc else "-")
        print(row)
        if t and o:
            short = []
            for k, m in enumerate(marks):
                mt, mo = quantile(t["hv"][k], 0.5), quantile(o["hv"][k], 0.5)
                if mt < mo:
                    short.append("HV@%d %.1f%% below" % (m, 100 * (mo - mt) / mo))
            if tc and oc / tc < 20:
                short.append("CPU only %.1fx less" % (oc / tc))
            verdicts.append("- %s %s: %s" % (fn, s, "met" if not short else "not met (" + "; ".join(short) + ")"))
    if verdicts:
        print()
        print("\n".join(verdicts))


if __name__ == "__main__":
    main()
