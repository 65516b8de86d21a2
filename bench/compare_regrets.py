#!/usr/bin/env python3
"""Compares two samplers' final regrets, run by run, with a bootstrap.

Reads the JSON lines of `tpe_bench quality --dump A` and
`tpe_optuna.py quality --dump B` (or any two such files) and prints, per
function and mode present in both, the median regret of each over the seeds
both ran, the difference A - B and its 95% bootstrap interval (the seeds of
the two samplers are independent draws, so each side is resampled on its
own), and P(A < B): the chance that a run of A ends below a run of B
(ties count half; 0.5 means neither is better), which unlike the median
does not jump when the regrets split into clusters, with its normal-
approximation standard error. Standard library only.

  python3 bench/compare_regrets.py ours.jsonl optuna.jsonl [--resamples 2000] [--at 50]

--at N compares the regrets after N trials ("regret_N" in the dumps, written
for the checkpoints 25 and 50) instead of after the last trial.
"""
import argparse
import json
import random
import statistics


def load(path, at=None):
    runs = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            key = "regret" if at in (None, r["trials"]) else "regret_%d" % at
            if key in r:
                runs.setdefault((r["function"], r["mode"]), {})[r["seed"]] = r[key]
    return runs


def prob_below(xa, xb):
    """P(a < b) + P(a == b) / 2 over independent draws, in O(n log n)."""
    merged = sorted([(x, 0) for x in xa] + [(x, 1) for x in xb])
    below = 0.0
    seen_b = 0  # b values strictly below the current group
    i = 0
    while i < len(merged):
        j = i
        while j < len(merged) and merged[j][0] == merged[i][0]:
            j += 1
        group_a = sum(1 for k in range(i, j) if merged[k][1] == 0)
        group_b = (j - i) - group_a
        # Each a in this group is above the b values seen so far.
        below += group_a * (len(xb) - seen_b - group_b) + 0.5 * group_a * group_b
        seen_b += group_b
        i = j
    return below / (len(xa) * len(xb))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--at", type=int, help="compare after this many trials (25 or 50)")
    args = ap.parse_args()
    a, b = load(args.a, args.at), load(args.b, args.at)
    rng = random.Random(0)
    print("| function | mode | seeds | median A | median B | A - B | 95% interval of A - B | P(A < B) |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(set(a) & set(b)):
        seeds = sorted(set(a[key]) & set(b[key]))
        if not seeds:
            continue
        xa = [a[key][s] for s in seeds]
        xb = [b[key][s] for s in seeds]
        diffs = sorted(
            statistics.median(rng.choices(xa, k=len(xa))) -
            statistics.median(rng.choices(xb, k=len(xb))) for _ in range(args.resamples))
        lo = diffs[int(0.025 * len(diffs))]
        hi = diffs[int(0.975 * len(diffs)) - 1]
        ma, mb = statistics.median(xa), statistics.median(xb)
        p = prob_below(xa, xb)
        se = ((len(xa) + len(xb) + 1) / (12.0 * len(xa) * len(xb))) ** 0.5
        print("| %s | %s | %d-%d (%d) | %.4g | %.4g | %+.3g | [%+.3g, %+.3g] | %.3f +- %.3f |" %
              (key[0], key[1], seeds[0], seeds[-1], len(seeds), ma, mb, ma - mb, lo, hi, p, se))


if __name__ == "__main__":
    main()
