#!/usr/bin/env python3
"""The peer of `tune importance`: Optuna's get_param_importances (PED-ANOVA,
Optuna 5's default) on the trials of a tune results database.

Reads the experiment's stored spec (its parameters) and completed trials
straight from the SQLite file, builds an in-memory Optuna study with the same
trials, and prints the importances and the time get_param_importances took
(study construction not counted). Run by bench/importance_bench.sh.

  $VENV/bin/python bench/importance_optuna.py DB [EXPERIMENT]
"""
import json
import sqlite3
import sys
import time

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

optuna.logging.set_verbosity(optuna.logging.ERROR)


def distribution(p):
    t = p["type"]
    if t in ("uniform", "loguniform", "quniform", "qloguniform"):
        return FloatDistribution(p["low"], p["high"], log=t.endswith("loguniform") and t != "quniform",
                                 step=p.get("q") if t == "quniform" else None)
    if t in ("randint", "lograndint"):
        return IntDistribution(p["low"], p["high"] - 1, log=t == "lograndint")
    if t == "qrandint":
        return IntDistribution(p["low"], p["high"], step=p["q"])
    return CategoricalDistribution(p["values"])


def main():
    db = sqlite3.connect(sys.argv[1])
    if len(sys.argv) > 2:
        row = db.execute("SELECT id, spec_json FROM experiments WHERE name = ?", (sys.argv[2],)).fetchone()
    else:
        row = db.execute("SELECT id, spec_json FROM experiments ORDER BY id DESC LIMIT 1").fetchone()
    experiment_id, spec = row[0], json.loads(row[1])
    dists = {name: distribution(p) for name, p in spec["parameters"].items()}
    direction = "maximize" if spec["objective"].get("mode") == "max" else "minimize"
    study = optuna.create_study(direction=direction)
    trials = []
    for params_json, value in db.execute(
            "SELECT params_json, value FROM trials WHERE experiment_id = ? AND state = 'completed' "
            "AND value IS NOT NULL ORDER BY number", (experiment_id,)):
        params = json.loads(params_json)
        trials.append(optuna.trial.create_trial(params=params, distributions=dists, value=value))
    study.add_trials(trials)
    start = time.perf_counter()
    importances = optuna.importance.get_param_importances(study)
    seconds = time.perf_counter() - start
    print(json.dumps({"optuna": optuna.__version__, "trials": len(trials), "seconds": seconds,
                      "importances": importances}))


if __name__ == "__main__":
    main()
