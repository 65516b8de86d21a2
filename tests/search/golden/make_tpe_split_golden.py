"""Optuna 5.0.0's TPE split of small histories into below/above, for
tests/search/tpe_multi_objective_test.cc (tpe_split_golden_optuna5.json).

Each case is a history (completed, pruned, running trials; one to four
objectives; with or without constraints) handed to
optuna.samplers._tpe.sampler._split_trials with n_below = gamma(n) as
TPESampler._sample computes it (default_gamma / default_gamma_multiobjective,
n = the trials that are not running). The numbers of the "below" trials are
recorded.

    python make_tpe_split_golden.py > tpe_split_golden_optuna5.json

Needs optuna==5.0.0 (bench/gp_optuna_venv.sh makes a venv with it).
"""
import json
import math
import types

import numpy as np
import optuna
from optuna.samplers._tpe import sampler as tpe
from optuna.trial import TrialState, create_trial
from optuna.study import StudyDirection

assert optuna.__version__ == "5.0.0", optuna.__version__


def make_case(name, seed, n_trials, directions, *, n_constraints=0, p_infeasible=0.0,
              p_pruned=0.1, n_running=3, grid=None):
    rng = np.random.RandomState(seed)
    m = len(directions)
    trials, records = [], []
    for number in range(n_trials):
        if number >= n_trials - n_running:
            state = TrialState.RUNNING
        elif rng.rand() < p_pruned:
            state = TrialState.PRUNED
        else:
            state = TrialState.COMPLETE
        rec = {"number": number, "state": state.name.lower()}
        kwargs = {"state": state}
        if state == TrialState.COMPLETE:
            vals = rng.rand(m)
            if grid:
                vals = np.round(vals * grid) / grid
            vals = [round(float(v), 6) for v in vals]
            rec["values"] = vals
            kwargs["values"] = vals
        if state == TrialState.PRUNED and m == 1:
            steps = int(rng.randint(1, 5))
            inter = {s: round(float(rng.rand()), 6) for s in range(steps)}
            rec["intermediate"] = [[s, v] for s, v in inter.items()]
            kwargs["intermediate_values"] = inter
        if n_constraints and state != TrialState.RUNNING:
            infeasible = rng.rand() < p_infeasible
            cons = [round(float(-rng.rand()), 6) for _ in range(n_constraints)]
            if infeasible:
                cons[rng.randint(n_constraints)] = round(float(rng.rand()), 6)
            rec["constraints"] = cons
            kwargs["system_attrs"] = {"constraints": tuple(cons)}
        t = create_trial(**kwargs)
        t.number = number
        trials.append(t)
        records.append(rec)
    dirs = [StudyDirection.MAXIMIZE if d else StudyDirection.MINIMIZE for d in directions]
    study = types.SimpleNamespace(directions=dirs, direction=dirs[0] if m == 1 else None)
    n = sum(t.state != TrialState.RUNNING for t in trials)
    n_below = (tpe.default_gamma if m == 1 else tpe.default_gamma_multiobjective)(n)
    below, above = tpe._split_trials(study, trials, n_below)
    return {
        "name": name,
        "maximize": list(directions),
        "n_below": n_below,
        "trials": records,
        "below": sorted(t.number for t in below),
    }


cases = [
    make_case("2 objectives", 1, 60, [False, True]),
    make_case("2 objectives, 200 trials", 2, 200, [False, False]),
    make_case("3 objectives with constraints", 3, 80, [False, False, True], n_constraints=2,
              p_infeasible=0.3),
    make_case("4 objectives", 4, 100, [False, True, False, False]),
    make_case("2 objectives, few feasible", 5, 40, [False, False], n_constraints=1,
              p_infeasible=0.9, p_pruned=0.05),
    make_case("3 objectives on a grid (duplicates)", 6, 120, [False, False, False], grid=4),
    make_case("1 objective with constraints", 7, 50, [False], n_constraints=2, p_infeasible=0.8,
              p_pruned=0.2),
    make_case("1 objective maximised with constraints", 8, 120, [True], n_constraints=1,
              p_infeasible=0.5, p_pruned=0.2),
]
print(json.dumps({"optuna": optuna.__version__, "cases": cases}))
