#!/usr/bin/env python3
"""Golden parameter importances for ped_anova_test: what Optuna 5's
optuna.importance.get_param_importances(study) (PED-ANOVA, its default
evaluator) says on small studies with every parameter shape tune has.

Each case runs a RandomSampler study on a fixed objective and records the
search space, every completed trial (params and value) and the normalised
importances. The C++ test rebuilds the same trials and compares.

Run (VENV: a scratch virtual environment with `pip install optuna`, 5.x):
  $VENV/bin/python make_ped_anova_golden.py > ped_anova_golden.json
"""
import json
import math
import sys
import warnings

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.simplefilter("ignore")


def space_json(dist):
    if isinstance(dist, FloatDistribution):
        return {"kind": "float", "low": dist.low, "high": dist.high, "log": dist.log, "step": dist.step}
    if isinstance(dist, IntDistribution):
        return {"kind": "int", "low": dist.low, "high": dist.high, "log": dist.log, "step": dist.step}
    return {"kind": "choice", "choices": list(dist.choices)}


def mixed(trial):
    lr = trial.suggest_float("lr", 1e-5, 1e-1, log=True)
    x = trial.suggest_float("x", -5.0, 5.0)
    q = trial.suggest_float("q", 0.0, 1.0, step=0.1)
    n = trial.suggest_int("n", 0, 20)
    m = trial.suggest_int("m", 1, 1024, log=True)
    s = trial.suggest_int("s", 0, 100, step=10)
    c = trial.suggest_categorical("c", ["adamw", "sgd", "adam"])
    r = trial.suggest_categorical("r", [4, 8, 16, 32])
    return ((math.log10(lr) + 3.0) ** 2 + {"adamw": 0.0, "sgd": 2.0, "adam": 0.5}[c]
            + 0.05 * x + 0.1 * abs(q - 0.3) + 0.02 * n + 0.3 * math.log2(m) / 10 + 0.001 * s
            + 0.2 * (r == 4))


def accuracy(trial):  # maximised; 30 trials: ceil(0.1 * 30) is 4 in floating point
    d = trial.suggest_float("dropout", 0.0, 0.5)
    w = trial.suggest_int("warmup", 0, 49)
    a = trial.suggest_categorical("alpha", [8, 16, 32])
    return 0.9 - (d - 0.1) ** 2 - 0.001 * w + 0.01 * (a == 16)


def ties(trial):  # rounded values: trials tie at the cutoff
    x = trial.suggest_float("x", 0.0, 1.0)
    y = trial.suggest_float("y", 0.0, 1.0)
    return round(x + 0.2 * y, 1)


def few(trial):  # the fewest trials that give an answer, with a one-choice parameter
    x = trial.suggest_float("x", 0.0, 10.0)
    k = trial.suggest_categorical("k", ["only"])
    return x


def main():
    cases = []
    for name, objective, direction, n_trials, seed in [
        ("mixed", mixed, "minimize", 60, 1),
        ("mixed-200", mixed, "minimize", 200, 2),
        ("accuracy-max", accuracy, "maximize", 30, 3),
        ("ties", ties, "minimize", 40, 4),
        ("few", few, "minimize", 2, 5),
    ]:
        study = optuna.create_study(direction=direction, sampler=optuna.samplers.RandomSampler(seed=seed))
        study.optimize(objective, n_trials=n_trials)
        trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        importances = optuna.importance.get_param_importances(study)
        cases.append({
            "name": name,
            "maximize": direction == "maximize",
            "space": {k: space_json(v) for k, v in trials[0].distributions.items()},
            "trials": [{"params": t.params, "value": t.value} for t in trials],
            "importances": importances,
        })
    json.dump({"optuna": optuna.__version__, "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
