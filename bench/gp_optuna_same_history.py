#!/usr/bin/env python3
"""Optuna 5.0's GP asked for the next suggestion at every step of tune's runs.

Reads a --dump of bench/gp_bench.cc (sequential runs: every trial's
parameters in order) and, at each step n past the 10 startup trials, gives
the first n trials of tune's run to Optuna's own code as GPSampler uses it
(search_space.SearchSpace, _standardize_values, fit_kernel_params warm-
started from the fit at n - 1 as GPSampler's cache does, LogEI over the best
value, optimize_acqf_mixed with the best trial as the warm start and
GPSampler's defaults; rng RandomState(1000 seed + n)). It compares the
objective at Optuna's suggestion with the objective at tune's (trial n of
the run). Whole runs diverge after a few steps from any tiny difference
(the acquisition has several near-equal maxima), so comparing only final
regrets needs many seeds; this compares the two decision rules step by
step on the same histories.

Prints per function: the steps, how often each side's suggestion has the
lower objective, how often each improves on the best value so far, and the
mean improvement. --dump writes one line per step.

  $(bench/gp_optuna_venv.sh) bench/gp_optuna_same_history.py TUNE_DUMP [--functions a,b] [--seeds N] [--dump OUT]
"""
import argparse
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gp_optuna  # noqa: E402
import optuna  # noqa: E402
from optuna._gp import acqf as acqf_module  # noqa: E402
from optuna._gp import gp  # noqa: E402
from optuna._gp import optim_mixed  # noqa: E402
from optuna._gp import prior  # noqa: E402
from optuna._gp import search_space as gp_search_space  # noqa: E402
from optuna.samplers._gp.sampler import _standardize_values  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")


def steps(f, dists, seed, params, n_startup=10):
    space = gp_search_space.SearchSpace(dists)
    x_all = space.get_normalized_params([None] * len(params), params)
    values = np.array([f(p) for p in params])
    cache = None
    for n in range(n_startup, len(params)):
        x = x_all[:n]
        y, _, _ = _standardize_values(-values[:n, None])
        y = y[:, 0]
        g = gp.fit_kernel_params(X=x, Y=y, is_categorical=space.is_categorical, log_prior=prior.default_log_prior,
                                 minimum_noise=prior.DEFAULT_MINIMUM_NOISE_VAR, deterministic_objective=False,
                                 gpr_cache=cache)
        cache = g
        acqf = acqf_module.LogEI(gpr=g, search_space=space, threshold=float(y.max()))
        best_x, _ = optim_mixed.optimize_acqf_mixed(
            acqf, warmstart_normalized_params_array=x[np.argmax(y), None], n_preliminary_samples=2048,
            n_local_search=10, tol=1e-4, rng=np.random.RandomState(1000 * seed + n))
        yield {"seed": seed, "n": n, "best_before": float(values[:n].min()), "f_tune": float(values[n]),
               "f_optuna": float(f(space.get_unnormalized_param(best_x)))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tune_dump")
    ap.add_argument("--functions")
    ap.add_argument("--seeds", type=int, help="only the first N seeds of each function")
    ap.add_argument("--sampler", default="gp")
    ap.add_argument("--dump")
    args = ap.parse_args()
    problems = {p[0]: p for p in gp_optuna.SUITE}
    wanted = set(args.functions.split(",")) if args.functions else None
    out = open(args.dump, "w") if args.dump else None
    results, seen = {}, {}
    with open(args.tune_dump) as f:
        for line in f:
            r = json.loads(line)
            if r["sampler"] != args.sampler or r.get("inflight", 1) != 1 or (wanted and r["function"] not in wanted):
                continue
            seen[r["function"]] = seen.get(r["function"], 0) + 1
            if args.seeds and seen[r["function"]] > args.seeds:
                continue
            _, space, fn, _ = problems[r["function"]]
            for s in steps(fn, gp_optuna.distributions(space), r["seed"], r["params"]):
                results.setdefault(r["function"], []).append(s)
                if out:
                    out.write(json.dumps(dict(s, function=r["function"])) + "\n")
                    out.flush()
    print("| function | runs | steps | tune's suggestion lower / Optuna's lower / equal |"
          " improves on the best so far: tune / Optuna | mean improvement: tune / Optuna |")
    print("|---|---|---|---|---|---|")
    for name, rs in results.items():
        lower_t = sum(s["f_tune"] < s["f_optuna"] for s in rs)
        lower_o = sum(s["f_optuna"] < s["f_tune"] for s in rs)
        imp_t = [max(0.0, s["best_before"] - s["f_tune"]) for s in rs]
        imp_o = [max(0.0, s["best_before"] - s["f_optuna"]) for s in rs]
        print("| %s | %d | %d | %d / %d / %d | %d / %d | %.3g / %.3g |" % (
            name, len({s["seed"] for s in rs}), len(rs), lower_t, lower_o, len(rs) - lower_t - lower_o,
            sum(v > 0 for v in imp_t), sum(v > 0 for v in imp_o), np.mean(imp_t), np.mean(imp_o)))


if __name__ == "__main__":
    main()
