#!/usr/bin/env python3
"""Compares two samplers' final regrets, run by run, with a bootstrap.

Reads the JSON lines of `tpe_bench quality --dump A` and
`tpe_optuna.py quality --dump B` (or any two such files) and prints, per
function and mode present in both, the median regret of each over the seeds
both ran, the difference A - B and its 95% bootstrap interval (the seeds of
the two samplers are independent draws, so each side is resampled on its
own). Standard library only.

  python3 bench/compare_regrets.py ours.jsonl optuna.jsonl [--resamples 2000]
"""
import argparse
import json
import random
import statistics


def load(path):
    runs = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            runs.setdefault((r["function"], r["mode"]), {})[r["seed"]] = r["regret"]
    return runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args()
    a, b = load(args.a), load(args.b)
    rng = random.Random(0)
    print("| function | mode | seeds | median A | median B | A - B | 95% interval of A - B |")
    print("|---|---|---|---|---|---|---|")
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
        print("| %s | %s | %d-%d (%d) | %.4g | %.4g | %+.3g | [%+.3g, %+.3g] |" %
              (key[0], key[1], seeds[0], seeds[-1], len(seeds), ma, mb, ma - mb, lo, hi))


if __name__ == "__main__":
    main()
