#!/usr/bin/env python3
"""Golden numbers of Optuna 5.0.0's Gaussian process for gp_golden_test.

Builds optuna._gp.gp.GPRegressor on small fixed data with fixed kernel
parameters and records the kernel matrix, the posterior, the marginal log
likelihood, the log prior and log EI at fixed points; fits the kernel
parameters (fit_kernel_params with default_log_prior) on fixed data and
records the fit and its loss; records standard_logei over a range of z and
the normalized coordinates of optuna._gp.search_space for a mixed space.

  $(bench/gp_optuna_venv.sh) tests/search/golden/make_gp_golden.py > tests/search/golden/gp_golden_optuna5.json
"""
import json
import math

import numpy as np
import optuna
import torch
from optuna._gp import acqf as acqf_module
from optuna._gp import gp
from optuna._gp import prior
from optuna._gp import search_space as gp_search_space
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

assert optuna.__version__ == "5.0.0", optuna.__version__

X = np.array([[0.1, 0.2, 0], [0.5, 0.9, 1], [0.8, 0.1, 0], [0.3, 0.6, 2], [0.95, 0.4, 1], [0.0, 0.0, 0]])
Y = np.array([-1.0, 0.3, 1.2, -0.2, 0.6, -0.9])
IS_CAT = np.array([False, False, True])
Q = np.array([[0.7, 0.15, 0], [0.2, 0.5, 2], [0.45, 0.85, 1]])
W, SCALE, NOISE = [4.0, 2.0, 1.0], 1.1, 1e-3


def regressor(x, y, is_cat, w, scale, noise):
    g = gp.GPRegressor(
        is_categorical=torch.from_numpy(is_cat), X_train=torch.from_numpy(x), y_train=torch.from_numpy(y),
        inverse_squared_lengthscales=torch.tensor(w, dtype=torch.float64),
        kernel_scale=torch.tensor(scale, dtype=torch.float64), noise_var=torch.tensor(noise, dtype=torch.float64))
    return g


def fixed_case():
    g = regressor(X, Y, IS_CAT, W, SCALE, NOISE)
    with torch.no_grad():
        mll = g.marginal_log_likelihood().item()
        log_prior = prior.default_log_prior(g).item()
        k_train = g.kernel().numpy()
    g._cache_matrix()
    with torch.no_grad():
        k_q = g.kernel(torch.from_numpy(Q)).numpy()
        mean, var = g.posterior(torch.from_numpy(Q))
        f0 = float(Y.max())
        logei = acqf_module.logei(mean.clone(), var.clone() + 1e-12, f0).numpy()
    return {"x": X.tolist(), "y": Y.tolist(), "is_categorical": IS_CAT.tolist(), "query": Q.tolist(),
            "inverse_squared_lengthscales": W, "kernel_scale": SCALE, "noise_var": NOISE,
            "kernel_train": k_train.tolist(), "kernel_query_train": k_q.tolist(), "mll": mll,
            "log_prior": log_prior, "mean": mean.numpy().tolist(), "var": var.numpy().tolist(),
            "threshold": f0, "logei": logei.tolist()}


def fit_case(deterministic):
    rng = np.random.RandomState(0)
    x = np.column_stack([rng.rand(14), rng.rand(14), rng.randint(0, 2, 14).astype(float)])
    y = np.sin(6 * x[:, 0]) + 0.2 * x[:, 1] + 0.5 * x[:, 2] + 0.01 * rng.randn(14)
    y = (y - y.mean()) / y.std()
    is_cat = np.array([False, False, True])
    g = gp.fit_kernel_params(X=x, Y=y, is_categorical=is_cat, log_prior=prior.default_log_prior,
                             minimum_noise=prior.DEFAULT_MINIMUM_NOISE_VAR,
                             deterministic_objective=deterministic)
    with torch.no_grad():
        loss = -(g.marginal_log_likelihood() + prior.default_log_prior(g)).item()
    return {"x": x.tolist(), "y": y.tolist(), "is_categorical": is_cat.tolist(), "deterministic": deterministic,
            "inverse_squared_lengthscales": g.inverse_squared_lengthscales.numpy().tolist(),
            "kernel_scale": g.kernel_scale.item(), "noise_var": g.noise_var.item(), "loss": loss}


def logei_case():
    zs = [5.0, 2.0, 0.5, 0.0, -0.5, -3.0, -10.0, -24.9, -25.1, -30.0, -40.0, -100.0]
    with torch.no_grad():
        v = acqf_module.standard_logei(torch.tensor(zs, dtype=torch.float64)).numpy()
    return {"z": zs, "value": v.tolist()}


def space_case():
    space = {"a_lr": FloatDistribution(1e-4, 1e-2, log=True), "b_int": IntDistribution(1, 4),
             "c_choice": CategoricalDistribution(["x", "y", "z"]), "d_q": FloatDistribution(0.0, 1.0, step=0.25),
             "e_logint": IntDistribution(1, 1024, log=True)}
    s = gp_search_space.SearchSpace(space)
    params = [{"a_lr": 1e-3, "b_int": 1, "c_choice": "z", "d_q": 0.5, "e_logint": 1},
              {"a_lr": 3e-3, "b_int": 4, "c_choice": "x", "d_q": 1.0, "e_logint": 37}]
    trials = [optuna.trial.create_trial(params=p, distributions=space, value=0.0) for p in params]
    return {"params": params, "normalized": s.get_normalized_params(trials).tolist()}


print(json.dumps({"optuna": optuna.__version__, "fixed": fixed_case(),
                  "fit": [fit_case(False), fit_case(True)], "standard_logei": logei_case(),
                  "space": space_case()}, indent=1))
