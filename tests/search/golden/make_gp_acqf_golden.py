#!/usr/bin/env python3
"""Golden numbers of Optuna 5.0.0's acquisition optimiser for
gp_optimize_acqf_golden_test.

Two cases, each a GP fitted by fit_kernel_params (default start) on fixed
data: 20 uniform points of Hartmann-6 in [0, 1]^6 (continuous), and 25 points
of the five-parameter space of tests/search/gp_test_space.h (a log float, an
int, a choice, a stepped float, a log int with 1024 values: every branch of
the local search) with a smooth function of them. For each: the data, the
fitted kernel parameters, local_search_mixed_batched's result from fixed
starting points, and optimize_acqf_mixed's result (the best trial as the warm
start, as GPSampler passes it) for rng seeds 0-4.

  $(bench/gp_optuna_venv.sh) tests/search/golden/make_gp_acqf_golden.py > tests/search/golden/gp_acqf_golden_optuna5.json
"""
import json
import math

import numpy as np
import optuna
import torch
from optuna._gp import acqf as acqf_module
from optuna._gp import gp
from optuna._gp import optim_mixed
from optuna._gp import prior
from optuna._gp import search_space as gp_search_space
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

assert optuna.__version__ == "5.0.0", optuna.__version__
torch.set_num_threads(1)

A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
              [17, 8, 0.05, 10, 0.1, 14]])
P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                     [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])
ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def hartmann6(x):
    return -float(np.sum(ALPHA * np.exp(-np.sum(A * (x - P) ** 2, axis=1))))


def mixed(p):
    c = {"x": 0.0, "y": 0.3, "z": 0.8}[p["c_choice"]]
    return (math.log10(p["a_lr"] / 1e-3) ** 2 + 0.1 * (p["b_int"] - 3) ** 2 + c
            + (p["d_q"] - 0.5) ** 2 + 0.05 * (math.log2(p["e_logint"]) - 5) ** 2)


def case(space, x, values, starts):
    y = -np.asarray(values)  # GPSampler maximises
    y = (y - y.mean()) / max(1e-10, y.std())
    is_cat = space.is_categorical
    g = gp.fit_kernel_params(X=x, Y=y, is_categorical=is_cat, log_prior=prior.default_log_prior,
                             minimum_noise=prior.DEFAULT_MINIMUM_NOISE_VAR, deterministic_objective=False)
    acqf = acqf_module.LogEI(gpr=g, search_space=space, threshold=float(y.max()))
    local_x, local_f = optim_mixed.local_search_mixed_batched(acqf, np.asarray(starts, dtype=float), tol=1e-4)
    runs = []
    for seed in range(5):
        bx, bf = optim_mixed.optimize_acqf_mixed(acqf, warmstart_normalized_params_array=x[np.argmax(y), None],
                                                 n_preliminary_samples=2048, n_local_search=10, tol=1e-4,
                                                 rng=np.random.RandomState(seed))
        runs.append({"x": bx.tolist(), "value": float(bf)})
    return {"x": x.tolist(), "y": y.tolist(), "is_categorical": is_cat.tolist(),
            "inverse_squared_lengthscales": g.inverse_squared_lengthscales.numpy().tolist(),
            "kernel_scale": g.kernel_scale.item(), "noise_var": g.noise_var.item(), "threshold": float(y.max()),
            "local_starts": np.asarray(starts).tolist(), "local_x": local_x.tolist(),
            "local_value": local_f.tolist(), "optimize": runs}


def continuous_case():
    rng = np.random.RandomState(0)
    x = rng.rand(20, 6)
    space = gp_search_space.SearchSpace({"x%d" % i: FloatDistribution(0.0, 1.0) for i in range(6)})
    starts = rng.rand(5, 6)
    return case(space, x, [hartmann6(r) for r in x], starts)


def mixed_case():
    dists = {"a_lr": FloatDistribution(1e-4, 1e-2, log=True), "b_int": IntDistribution(1, 4),
             "c_choice": CategoricalDistribution(["x", "y", "z"]), "d_q": FloatDistribution(0.0, 1.0, step=0.25),
             "e_logint": IntDistribution(1, 1024, log=True)}
    space = gp_search_space.SearchSpace(dists)
    rng = np.random.RandomState(1)
    params = [{"a_lr": float(10 ** rng.uniform(-4, -2)), "b_int": int(rng.randint(1, 5)),
               "c_choice": ["x", "y", "z"][rng.randint(3)], "d_q": float(0.25 * rng.randint(5)),
               "e_logint": int(rng.randint(1, 1025))} for _ in range(25)]
    x = space.get_normalized_params([None] * len(params), params)
    starts = space.sample_normalized_params(5, rng)
    return case(space, x, [mixed(p) for p in params], starts)


print(json.dumps({"continuous": continuous_case(), "mixed": mixed_case()}, indent=1))
