#!/usr/bin/env python3
"""The multi-objective benchmark functions of bench/mo_bench.cc, for Optuna
(standard library only).

Each problem: its search space, the function of a dict of parameter values
(returning the objective values in order and the constraint values, in
Optuna's convention c <= 0 feasible, or [] without constraints), each
objective's direction, and the fixed reference point of the hypervolume,
given in the objectives' raw units (bench/mo_compare.py negates maximised
objectives and their reference coordinate before computing it).

mo_bench.cc defines the very same functions; bench/mo_compare.py recomputes
every trial's values of both sides from its parameters with the definitions
here and stops on any difference, so the two cannot drift apart.

Spaces: name -> ("float", low, high, log) | ("int", low, high, log) |
("cat", [choices]); parameters are suggested in name order, as tune's
SearchSpace (a std::map) holds them.
"""
import math


def _unit(n):
    return {"x%d" % i: ("float", 0.0, 1.0, False) for i in range(n)}


def _xs(p, n):
    return [p["x%d" % i] for i in range(n)]


def zdt1(p):
    # Zitzler, Deb, Thiele 2000, ZDT1 with 6 variables: convex front
    # f2 = 1 - sqrt(f1) at x1..x5 = 0.
    x = _xs(p, 6)
    g = 1 + 9 * sum(x[1:]) / 5
    return [x[0], g * (1 - math.sqrt(x[0] / g))], []


def zdt2(p):
    # ZDT2, 6 variables: concave front f2 = 1 - f1^2.
    x = _xs(p, 6)
    g = 1 + 9 * sum(x[1:]) / 5
    return [x[0], g * (1 - (x[0] / g) ** 2)], []


def dtlz2(p):
    # Deb, Thiele, Laumanns, Zitzler 2002, DTLZ2 with 3 objectives and 6
    # variables (k = 4): the front is the unit sphere's positive octant at
    # x2..x5 = 0.5.
    x = _xs(p, 6)
    g = sum((v - 0.5) ** 2 for v in x[2:])
    a, b = x[0] * math.pi / 2, x[1] * math.pi / 2
    return [(1 + g) * math.cos(a) * math.cos(b), (1 + g) * math.cos(a) * math.sin(b),
            (1 + g) * math.sin(a)], []


# mixed: a LoRA-like trade-off between quality (maximised) and adapter size
# (minimised). `target` picks where the adapter goes: wider targets cost
# more size per rank and train to a lower loss, each with its own best
# learning rate and weight decay, so each choice owns a part of the front
# (attn for the smallest adapters, mlp in the middle, all for the largest)
# and a good lr found for one choice is poor for the others.
MIXED_OFFSET = {"attn": 0.15, "mlp": 0.05, "all": 0.0}
MIXED_SIZE = {"attn": 1.0, "mlp": 2.0, "all": 4.0}
MIXED_LR = {"attn": 3e-3, "mlp": 1e-3, "all": 3e-4}
MIXED_WD = {"attn": 1e-2, "mlp": 1e-3, "all": 1e-4}


def mixed(p):
    t = p["target"]
    loss = (MIXED_OFFSET[t] + 0.6 / math.sqrt(p["rank"]) + math.log10(p["lr"] / MIXED_LR[t]) ** 2
            + 0.3 * math.log10(p["weight_decay"] / MIXED_WD[t]) ** 2 + 2 * (p["dropout"] - 0.1) ** 2)
    return [3.0 - loss, MIXED_SIZE[t] * p["rank"] / 64.0], []


def srn(p):
    # Srinivas and Deb 1994 (SRN): two objectives, two constraints,
    # x, y in [-20, 20]; constraints as Optuna's: c <= 0 is feasible.
    x, y = p["x"], p["y"]
    f1 = 2 + (x - 2) ** 2 + (y - 1) ** 2
    f2 = 9 * x - (y - 1) ** 2
    return [f1, f2], [x * x + y * y - 225, x - 3 * y + 10]


# name -> (space, f, maximize per objective, reference point in raw units)
SUITE = {
    "zdt1": (_unit(6), zdt1, [False, False], [1.1, 4.0]),
    "zdt2": (_unit(6), zdt2, [False, False], [1.1, 5.0]),
    "dtlz2": (_unit(6), dtlz2, [False, False, False], [1.2, 1.2, 1.2]),
    "mixed": ({"lr": ("float", 1e-5, 1e-1, True), "rank": ("int", 1, 64, True),
               "dropout": ("float", 0.0, 0.5, False), "target": ("cat", ["attn", "mlp", "all"]),
               "weight_decay": ("float", 1e-6, 1e-1, True)},
              mixed, [True, False], [2.0, 4.0]),
    "srn": ({"x": ("float", -20.0, 20.0, False), "y": ("float", -20.0, 20.0, False)}, srn,
            [False, False], [250.0, 0.0]),
}
