#!/usr/bin/env python3
"""Golden results of Optuna 5.0.0's multi-objective arithmetic for
tests/core/pareto_golden_test.cc.

Random small cases with many ties (integer values in 0..4) and some
continuous ones: _fast_non_domination_rank (with and without penalties,
with n_below), _is_pareto_front, _calc_crowding_distance and
_crowding_distance_sort, compute_hypervolume and _solve_hssp.

  python -m venv venv && venv/bin/pip install optuna==5.0.0
  venv/bin/python tests/core/golden/make_pareto_golden.py > tests/core/golden/pareto_golden_optuna5.json
"""
import json
import math

import numpy as np
import optuna
from optuna._hypervolume.hssp import _solve_hssp
from optuna._hypervolume.wfg import compute_hypervolume
from optuna.samplers.nsgaii._elite_population_selection_strategy import _calc_crowding_distance
from optuna.samplers.nsgaii._elite_population_selection_strategy import _crowding_distance_sort
from optuna.study._multi_objective import _fast_non_domination_rank
from optuna.study._multi_objective import _is_pareto_front

assert optuna.__version__ == "5.0.0", optuna.__version__


class _Trial:  # what the crowding functions read of a FrozenTrial
    def __init__(self, number, values):
        self.number = number
        self.values = list(values)


def _num(x):
    return "inf" if x == math.inf else "-inf" if x == -math.inf else float(x)


rng = np.random.default_rng(31)
cases = []
for it in range(120):
    m = int(rng.integers(1, 5))
    n = int(rng.integers(1, 16))
    pts = rng.integers(0, 5, size=(n, m)).astype(float)
    n_below = int(rng.integers(0, n + 2))
    penalty = None
    if it % 2:
        penalty = np.where(rng.random(n) < 0.4, rng.integers(0, 3, size=n) * 0.5, 0.0)
    ranks = _fast_non_domination_rank(pts, penalty=penalty, n_below=n_below if n_below > 0 else None)
    case = {
        "points": pts.tolist(),
        "n_below": n_below,
        "violations": [] if penalty is None else penalty.tolist(),
        "ranks": [int(r) for r in ranks],
        "front": [int(i) for i in np.nonzero(_is_pareto_front(pts, assume_unique_lexsorted=False))[0]],
    }
    if m >= 2:
        population = [_Trial(i, p) for i, p in enumerate(pts)]
        distance = _calc_crowding_distance(list(population))
        _crowding_distance_sort(population)
        case["crowding"] = [_num(distance[i]) for i in range(n)]
        case["crowding_order"] = [t.number for t in population]
        hv_points = rng.random((n, m)) if it % 3 == 0 else pts
        reference = np.full(m, 1.2 if it % 3 == 0 else 5.5)
        case["hv_points"] = hv_points.tolist()
        case["reference"] = reference.tolist()
        case["hypervolume"] = float(compute_hypervolume(hv_points, reference))
        # One front, as Optuna's callers pass (with dominated points, the
        # contributions left are all 0 up to rounding, and Optuna's order
        # among them is rounding noise).
        hssp_points = hv_points[_is_pareto_front(hv_points, assume_unique_lexsorted=False)]
        k = int(rng.integers(1, len(hssp_points) + 1))
        case["hssp_points"] = hssp_points.tolist()
        case["hssp_size"] = k
        case["hssp"] = [int(i) for i in _solve_hssp(hssp_points, np.arange(len(hssp_points)), k, reference)]
    cases.append(case)

json.dump({"optuna": optuna.__version__, "cases": cases}, __import__("sys").stdout, separators=(",", ":"))
print()
