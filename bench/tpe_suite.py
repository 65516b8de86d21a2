#!/usr/bin/env python3
"""The TPE benchmark suite of bench/tpe_suite.cc, for Optuna (standard library only).

Each problem: a name, a search space, the function (of a dict of parameter
values) and its optimum; every function is minimised. The definitions are
those of tpe_suite.cc, checked by tests/bench/tpe_suite_test.cc, which runs

  python3 bench/tpe_suite.py points [--per-function 6] [--seed 0]

and evaluates the printed points (JSON lines: function, params, value) with
the C++ definitions.

Spaces: name -> ("float", low, high, log) | ("int", low, high, log) |
("cat", [choices]). bench/tpe_optuna.py turns them into Optuna distributions
and suggests the parameters in name order, as tune's SearchSpace holds them.
"""
import argparse
import json
import math
import random


def branin(p):
    x1, x2 = p["x1"], p["x2"]
    b, c, t = 5.1 / (4 * math.pi * math.pi), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


ALPHA = [1.0, 1.2, 3.0, 3.2]
A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
     [17, 8, 0.05, 10, 0.1, 14]]
P = [[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
     [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
     [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
     [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381]]


def hartmann6(p):
    total = 0.0
    for r in range(4):
        e = 0.0
        for i in range(6):
            e += A[r][i] * (p["x%d" % i] - P[r][i]) ** 2
        total += ALPHA[r] * math.exp(-e)
    return -total


def mixed6(p):
    opt = p["optimizer"]
    offset = {"adamw": 0.0, "adam": 0.05, "sgd": 0.3}[opt]
    lr_opt = 1e-2 if opt == "sgd" else 3e-4
    wd_opt = {"adamw": 1e-2, "adam": 1e-5, "sgd": 1e-4}[opt]
    return (offset + math.log10(p["lr"] / lr_opt) ** 2 + 0.05 * (math.log2(p["lora_r"]) - 4) ** 2
            + 0.03 * (p["num_layers"] - 4) ** 2 + 0.1 * math.log10(p["weight_decay"] / wd_opt) ** 2
            + 2 * (p["dropout"] - 0.1) ** 2)


def rosenbrock4(p):
    total = 0.0
    for i in range(3):
        x, y = p["x%d" % i], p["x%d" % (i + 1)]
        total += 100 * (y - x * x) ** 2 + (1 - x) ** 2
    return total


ST_ROOT = -2.903534027771177  # root of 4x^3 - 32x + 5 near -2.9


def _st_term(x):
    return 0.5 * (x ** 4 - 16 * x * x + 5 * x)


def styblinski_tang5(p):
    total = 0.0
    for i in range(5):
        total += _st_term(p["x%d" % i])
    return total


def levy6(p):
    w = [1 + (p["x%d" % i] - 1) / 4 for i in range(6)]
    total = math.sin(math.pi * w[0]) ** 2
    for i in range(5):
        total += (w[i] - 1) ** 2 * (1 + 10 * math.sin(math.pi * w[i] + 1) ** 2)
    total += (w[5] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[5]) ** 2)
    return total


def conditional(p):
    model = p["model"]
    if model == "linear":
        return 0.3 + 0.1 * (math.log10(p["linear_alpha"]) + 2) ** 2
    if model == "tree":
        return 0.15 + 0.01 * (p["tree_depth"] - 7) ** 2 + 0.002 * (p["tree_min_leaf"] - 5) ** 2
    offset = {"gelu": 0.0, "relu": 0.05, "tanh": 0.1, "sigmoid": 0.3}[p["net_activation"]]
    return (offset + 0.3 * (math.log10(p["net_lr"]) + 2.5) ** 2
            + 0.05 * (math.log2(p["net_width"]) - 8) ** 2)


def hpo_lora(p):
    sched = p["schedule"]
    offset = {"cosine": 0.0, "linear": 0.02, "constant": 0.08}[sched]
    rank = float(p["rank"])
    lr_opt = 2e-3 * math.sqrt(16 / rank) * (0.5 if sched == "constant" else 1.0)
    u = math.log10(p["learning_rate"] / lr_opt)
    v = math.log10(p["weight_decay"] / 1e-3)
    return offset + 0.5 * (u + v) ** 2 + 0.05 * (u - v) ** 2 + 0.02 * (math.log2(rank) - 4) ** 2


def _xs(n, low, high):
    return {"x%d" % i: ("float", low, high, False) for i in range(n)}


# name, space, function, optimum: in tpe_suite.cc's order.
SUITE = [
    ("branin", {"x1": ("float", -5, 10, False), "x2": ("float", 0, 15, False)}, branin,
     0.397887357729739),
    ("hartmann6", _xs(6, 0, 1), hartmann6, -3.32236801141551),
    ("mixed6", {"optimizer": ("cat", ["adam", "sgd", "adamw"]),
                "lora_r": ("cat", [4, 8, 16, 32, 64]),
                "num_layers": ("int", 1, 8, False),
                "lr": ("float", 1e-6, 1e-1, True),
                "weight_decay": ("float", 1e-6, 1e-1, True),
                "dropout": ("float", 0, 0.5, False)}, mixed6, 0.0),
    ("rosenbrock4", _xs(4, -5, 10), rosenbrock4, 0.0),
    ("styblinski_tang5", _xs(5, -5, 5), styblinski_tang5, 5 * _st_term(ST_ROOT)),
    ("levy6", _xs(6, -10, 10), levy6, 0.0),
    ("conditional", {"model": ("cat", ["linear", "tree", "net"]),
                     "linear_alpha": ("float", 1e-6, 1e2, True),
                     "tree_depth": ("int", 1, 12, False),
                     "tree_min_leaf": ("int", 1, 50, False),
                     "net_activation": ("cat", ["relu", "tanh", "gelu", "sigmoid"]),
                     "net_width": ("int", 16, 1024, True),
                     "net_lr": ("float", 1e-5, 1, True)}, conditional, 0.0),
    ("hpo_lora", {"learning_rate": ("float", 1e-5, 1e-1, True),
                  "weight_decay": ("float", 1e-6, 1e-1, True),
                  "rank": ("int", 1, 64, True),
                  "schedule": ("cat", ["constant", "linear", "cosine"])}, hpo_lora, 0.0),
]


def random_point(space, rng):
    p = {}
    for name in sorted(space):
        d = space[name]
        if d[0] == "cat":
            p[name] = rng.choice(d[1])
        elif d[0] == "int":
            if d[3]:
                p[name] = min(d[2], max(d[1], int(round(math.exp(rng.uniform(math.log(d[1]),
                                                                         math.log(d[2])))))))
            else:
                p[name] = rng.randint(d[1], d[2])
        elif d[3]:
            p[name] = math.exp(rng.uniform(math.log(d[1]), math.log(d[2])))
        else:
            p[name] = rng.uniform(d[1], d[2])
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["points"])
    ap.add_argument("--per-function", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for name, space, f, _ in SUITE:
        for _ in range(args.per_function):
            p = random_point(space, rng)
            print(json.dumps({"function": name, "params": p, "value": f(p)}))


if __name__ == "__main__":
    main()
