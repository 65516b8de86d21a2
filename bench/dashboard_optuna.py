#!/usr/bin/env python3
"""Copies an experiment of a tune results database into Optuna's RDB storage.

    dashboard_optuna.py TUNE_DB OPTUNA_DB [--experiment NAME]

The study gets the experiment's name, direction, parameters (with their
distributions), final values, states and every objective report as an
intermediate value, so that optuna-dashboard serves the same trials as
`tune dashboard` (bench/dashboard_bench.sh). Needs optuna.
"""
import argparse
import json
import sqlite3

import optuna


def distribution(p):
    t = p["type"]
    if t == "choice":
        return optuna.distributions.CategoricalDistribution(p["values"])
    if t in ("randint", "int", "qrandint", "lograndint"):
        return optuna.distributions.IntDistribution(p["low"], p["high"], log=t == "lograndint")
    return optuna.distributions.FloatDistribution(p["low"], p["high"], log=t.startswith("log") or t == "qloguniform")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tune_db")
    ap.add_argument("optuna_db")
    ap.add_argument("--experiment")
    a = ap.parse_args()
    db = sqlite3.connect("file:%s?mode=ro" % a.tune_db, uri=True)
    q = "SELECT id, name, spec_json FROM experiments " + ("WHERE name = ?" if a.experiment else "ORDER BY id DESC LIMIT 1")
    eid, name, spec_json = db.execute(q, (a.experiment,) if a.experiment else ()).fetchone()
    spec = json.loads(spec_json)
    metric = spec.get("objective", {}).get("metric", "loss")
    direction = "maximize" if spec.get("objective", {}).get("mode") == "max" else "minimize"
    dists = {k: distribution(v) for k, v in spec["parameters"].items()}
    states = {"completed": optuna.trial.TrialState.COMPLETE, "pruned": optuna.trial.TrialState.PRUNED,
              "failed": optuna.trial.TrialState.FAIL}
    curves = {}
    for tid, step, value in db.execute(
            "SELECT r.trial_id, r.step, m.value FROM reports r JOIN trials t ON t.id = r.trial_id "
            "JOIN metrics m ON m.report_id = r.id WHERE t.experiment_id = ? AND r.attempt = t.attempt "
            "AND r.excluded IS NULL AND m.name = ?", (eid, metric)):
        curves.setdefault(tid, {})[step] = value
    trials = []
    for tid, state, value, params_json in db.execute(
            "SELECT id, state, value, params_json FROM trials WHERE experiment_id = ? ORDER BY number", (eid,)):
        if state not in states:
            continue
        st = states[state]
        trials.append(optuna.trial.create_trial(
            state=st, value=value if st == optuna.trial.TrialState.COMPLETE else None,
            params=json.loads(params_json), distributions=dists, intermediate_values=curves.get(tid, {})))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=name, storage="sqlite:///" + a.optuna_db, direction=direction)
    study.add_trials(trials)
    print("%s: %d trials copied into %s" % (name, len(trials), a.optuna_db))


if __name__ == "__main__":
    main()
