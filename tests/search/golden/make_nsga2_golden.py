#!/usr/bin/env python3
"""Golden parent populations of Optuna 5.0.0's NSGAIISampler for
tests/search/nsga2_sampler_test.cc.

Random histories of completed trials (values in 0..3, so fronts and
crowding distances tie often; random directions; constraints in half of
them), each trial's generation set to number // population_size as a
sequential run without failures gets it, and the parent population of
every generation read back by get_parent_population (select_parent: elite
selection over the previous generation and its parents).

  python -m venv venv && venv/bin/pip install optuna==5.0.0
  venv/bin/python tests/search/golden/make_nsga2_golden.py > tests/search/golden/nsga2_golden_optuna5.json
"""
import json
import sys
import warnings

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import create_trial

assert optuna.__version__ == "5.0.0", optuna.__version__
warnings.filterwarnings("ignore")
optuna.logging.set_verbosity(optuna.logging.ERROR)

rng = np.random.default_rng(5)
cases = []
for it in range(60):
    population = int(rng.integers(2, 7))
    n_objectives = int(rng.integers(1, 4))
    generations = int(rng.integers(1, 6))
    n = population * generations
    maximize = [bool(b) for b in rng.integers(0, 2, size=n_objectives)]
    values = rng.integers(0, 4, size=(n, n_objectives)).astype(float)
    constrained = bool(it % 2)
    constraints = np.where(rng.random((n, 2)) < 0.3, rng.integers(-1, 3, size=(n, 2)) * 0.5, -1.0)
    study = optuna.create_study(directions=["maximize" if b else "minimize" for b in maximize])
    sampler = optuna.samplers.NSGAIISampler(population_size=population)
    for i in range(n):
        attrs = {"NSGAIISampler:generation": i // population}
        if constrained:
            attrs["constraints"] = constraints[i].tolist()
        study.add_trial(
            create_trial(
                values=values[i].tolist(),
                params={"x": 0.5},
                distributions={"x": FloatDistribution(0, 1)},
                system_attrs=attrs,
            )
        )
    parents = [
        sorted(t.number for t in sampler.get_parent_population(study, g)) for g in range(1, generations + 1)
    ]
    cases.append(
        {
            "population_size": population,
            "maximize": maximize,
            "values": values.tolist(),
            "constraints": constraints.tolist() if constrained else [],
            "parents": parents,
        }
    )

json.dump({"optuna": optuna.__version__, "cases": cases}, sys.stdout, separators=(",", ":"))
print()
