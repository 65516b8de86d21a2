#!/usr/bin/env python3
"""Sets two samplers' proposals after the same history side by side.

Reads the JSON lines of `tpe_bench probe --dump A` and `tpe_optuna.py probe
--dump B` (one proposal per seed, same history) and prints, per mode, how
often each categorical value was proposed (with a two-proportion z score)
and the quartiles of each numerical parameter, with the two-sample
Kolmogorov-Smirnov distance and its 1% critical value. Differences beyond
the noise point at a sampler-level difference that regret tables, which mix
many such steps, show only faintly. Standard library only.

  python3 bench/compare_probe.py ours.jsonl optuna.jsonl
"""
import argparse
import collections
import json
import math
import statistics


def load(path):
    runs = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            runs[r["mode"]].append(r["params"])
    return runs


def ks_distance(a, b):
    a, b = sorted(a), sorted(b)
    i = j = 0
    d = 0.0
    while i < len(a) and j < len(b):
        x = min(a[i], b[j])
        while i < len(a) and a[i] <= x:
            i += 1
        while j < len(b) and b[j] <= x:
            j += 1
        d = max(d, abs(i / len(a) - j / len(b)))
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    a, b = load(args.a), load(args.b)
    for mode in sorted(set(a) & set(b)):
        pa, pb = a[mode], b[mode]
        na, nb = len(pa), len(pb)
        print("## %s (%d vs %d proposals)\n" % (mode, na, nb))
        print("| parameter | value or quartiles | A | B | z or KS (1%% critical %.3f) |" %
              (1.63 * math.sqrt((na + nb) / (na * nb))))
        print("|---|---|---|---|---|")
        for name in sorted(pa[0]):
            va = [p[name] for p in pa]
            vb = [p[name] for p in pb]
            if isinstance(va[0], str) or name == "lora_r":
                for value in sorted(set(va) | set(vb), key=str):
                    fa, fb = va.count(value) / na, vb.count(value) / nb
                    pooled = (va.count(value) + vb.count(value)) / (na + nb)
                    se = math.sqrt(max(pooled * (1 - pooled) * (1 / na + 1 / nb), 1e-300))
                    print("| %s | %s | %.3f | %.3f | z %+.2f |" % (name, value, fa, fb, (fa - fb) / se))
            else:
                qa = statistics.quantiles(va, n=4)
                qb = statistics.quantiles(vb, n=4)
                fmt = lambda q: ", ".join("%.4g" % x for x in q)
                print("| %s | q1, median, q3 | %s | %s | KS %.3f |" % (name, fmt(qa), fmt(qb), ks_distance(va, vb)))
        print()


if __name__ == "__main__":
    main()
