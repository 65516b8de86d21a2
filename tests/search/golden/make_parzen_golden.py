#!/usr/bin/env python3
"""Golden log-densities of Optuna's Parzen estimator for parzen_estimator_test.

Builds optuna.samplers._tpe.parzen_estimator._ParzenEstimator on small fixed
histories and records log_pdf at fixed points. Values are in Optuna's
internal representation (numbers as is, choice indices for categoricals).
Two releases, two files:

- Optuna 3.1 (Debian's python3-optuna) -> parzen_golden.json: Scott's rule
  for multivariate bandwidths, the prior's centre among the neighbours.
  3.1's truncnorm.logpdf leaves out the -log(scale) term of a scaled density
  (later releases add it), so its continuous kernels are not normalised; the
  script applies that upstream fix before computing. Everything else is 3.1
  as shipped.
- Optuna 5.x -> parzen_golden_optuna5.json: neighbour gaps in every mode,
  the prior's centre not a neighbour, log ints as discrete cells in log
  space, the prior always on (the cases without a prior are left out).
  Among equal observations, which one gets which gap depends on the order
  of numpy's argsort, which is not stable (numpy's SIMD sorts order ties by
  CPU and build). In multivariate mode that decides which kernel is wide,
  so the script makes the estimator's argsort stable: ties by observation
  index, as in tune.

Run:
  /usr/bin/python3 make_parzen_golden.py > parzen_golden.json
  $VENV/bin/python make_parzen_golden.py > parzen_golden_optuna5.json
(VENV: a scratch virtual environment with `pip install optuna`.)
"""
import json
import os
import sys

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator, _ParzenEstimatorParameters
from optuna.samplers._tpe import _truncnorm
from optuna.samplers._tpe import parzen_estimator as _pe_module
from optuna.samplers._tpe.sampler import default_weights

OPTUNA_MAJOR = int(optuna.__version__.split(".")[0])

if OPTUNA_MAJOR < 4:
    _upstream_logpdf = _truncnorm.logpdf

    def _logpdf_with_scale(x, a, b, loc=0, scale=1):
        return _upstream_logpdf(x, a, b, loc=loc, scale=scale) - np.log(scale)

    _pe_module.truncnorm.logpdf = _logpdf_with_scale
else:
    # bench/optuna_stable_argsort.py, shared with bench/tpe_optuna.py.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
    import optuna_stable_argsort
    optuna_stable_argsort.make_stable()


def dist_json(d):
    if isinstance(d, CategoricalDistribution):
        return {"type": "categorical", "n": len(d.choices)}
    if isinstance(d, FloatDistribution):
        return {"type": "float", "low": d.low, "high": d.high, "log": d.log, "step": d.step}
    return {"type": "int", "low": d.low, "high": d.high, "log": d.log, "step": d.step}


def case(name, space, obs, points, consider_prior=True, prior_weight=1.0, magic_clip=True,
         endpoints=False, multivariate=False):
    if OPTUNA_MAJOR < 4:
        params = _ParzenEstimatorParameters(consider_prior, prior_weight, magic_clip, endpoints,
                                            default_weights, multivariate)
    elif not consider_prior:
        return None  # 5.x always has the prior
    else:
        params = _ParzenEstimatorParameters(prior_weight, magic_clip, endpoints, default_weights,
                                            multivariate)
    observations = {k: np.asarray(v, dtype=float) for k, v in obs.items()}
    pe = _ParzenEstimator(observations, space, params)
    samples = {k: np.asarray(v, dtype=float) for k, v in points.items()}
    if any(isinstance(d, CategoricalDistribution) for d in space.values()):
        samples = {k: (v.astype(int) if isinstance(space[k], CategoricalDistribution) else v)
                   for k, v in samples.items()}
    log_pdf = pe.log_pdf(samples)
    return {
        "name": name,
        "params": [{"name": k, **dist_json(d)} for k, d in space.items()],
        "observations": {k: list(map(float, v)) for k, v in obs.items()},
        "points": {k: list(map(float, v)) for k, v in points.items()},
        "options": {"consider_prior": consider_prior, "prior_weight": prior_weight,
                    "consider_magic_clip": magic_clip, "consider_endpoints": endpoints,
                    "multivariate": multivariate},
        "log_pdf": [float(x) for x in log_pdf],
    }


def main():
    rng = np.random.RandomState(0)
    cases = []
    u = FloatDistribution(0.0, 10.0)
    cases.append(case("uniform", {"x": u}, {"x": [1.0, 2.5, 3.0, 7.2, 9.9, 0.3]},
                      {"x": [0.0, 0.5, 2.7, 5.0, 8.0, 10.0]}))
    cases.append(case("uniform_endpoints_noclip", {"x": u}, {"x": [1.0, 2.5, 3.0, 7.2, 9.9]},
                      {"x": [0.0, 2.7, 5.0, 9.95]}, magic_clip=False, endpoints=True))
    cases.append(case("uniform_no_prior", {"x": u}, {"x": [1.0, 2.5, 3.0, 7.2]},
                      {"x": [0.0, 2.7, 5.0, 9.95]}, consider_prior=False))
    cases.append(case("uniform_prior_weight", {"x": u}, {"x": [1.0, 2.5, 3.0, 7.2]},
                      {"x": [0.0, 2.7, 5.0, 9.95]}, prior_weight=3.0))
    cases.append(case("uniform_empty", {"x": u}, {"x": []}, {"x": [0.0, 3.3, 10.0]}))
    cases.append(case("uniform_ramp", {"x": u}, {"x": list(rng.uniform(0, 10, 40))},
                      {"x": list(rng.uniform(0, 10, 8))}))
    lg = FloatDistribution(1e-5, 1e-1, log=True)
    cases.append(case("loguniform", {"lr": lg}, {"lr": [1e-4, 3e-4, 2e-3, 5e-2, 1e-5]},
                      {"lr": [1e-5, 1e-4, 1e-3, 1e-2, 1e-1]}))
    it = IntDistribution(1, 8)
    cases.append(case("int", {"n": it}, {"n": [1, 3, 3, 4, 8, 2]},
                      {"n": [1, 2, 3, 4, 5, 6, 7, 8]}))
    it2 = IntDistribution(0, 20, step=4)
    cases.append(case("int_step", {"n": it2}, {"n": [0, 4, 16, 20]},
                      {"n": [0, 4, 8, 12, 16, 20]}))
    q = FloatDistribution(0.0, 1.0, step=0.1)
    cases.append(case("quantized", {"q": q}, {"q": [0.1, 0.3, 0.3, 0.9]},
                      {"q": [0.0, 0.1, 0.2, 0.5, 1.0]}))
    il = IntDistribution(1, 64, log=True)
    cases.append(case("int_log", {"r": il}, {"r": [4, 8, 8, 32, 1]},
                      {"r": [1, 2, 4, 8, 16, 33, 64]}))
    c = CategoricalDistribution(["a", "b", "c", "d"])
    cases.append(case("categorical", {"c": c}, {"c": [0, 2, 2, 3, 2]},
                      {"c": [0, 1, 2, 3]}))
    cases.append(case("categorical_prior_weight", {"c": c}, {"c": [0, 2, 2]},
                      {"c": [0, 1, 2, 3]}, prior_weight=0.5))
    mixed = {"lr": lg, "n": it, "c": c, "x": u}
    mixed_obs = {"lr": [1e-4, 3e-3, 2e-2, 5e-5, 1e-3], "n": [1, 4, 4, 8, 2],
                 "c": [0, 1, 3, 1, 1], "x": [0.5, 9.0, 3.3, 4.4, 7.7]}
    mixed_pts = {"lr": [1e-4, 2e-3, 1e-2], "n": [4, 1, 7], "c": [1, 0, 2], "x": [4.0, 0.1, 9.9]}
    cases.append(case("multivariate_mixed", mixed, mixed_obs, mixed_pts, multivariate=True))
    cases.append(case("multivariate_mixed_endpoints", mixed, mixed_obs, mixed_pts,
                      multivariate=True, endpoints=True, magic_clip=False))
    big = {"lr": list(np.exp(rng.uniform(np.log(1e-5), np.log(1e-1), 30))),
           "n": list(rng.randint(1, 9, 30)), "c": list(rng.randint(0, 4, 30)),
           "x": list(rng.uniform(0, 10, 30))}
    cases.append(case("multivariate_ramp", mixed, big, mixed_pts, multivariate=True))
    cases = [c for c in cases if c is not None]
    bandwidths = "optuna3" if OPTUNA_MAJOR < 4 else "optuna5"
    patch = "truncnorm.logpdf - log(scale)" if OPTUNA_MAJOR < 4 else "none"
    json.dump({"optuna_version": optuna.__version__, "bandwidths": bandwidths, "patch": patch,
               "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
