"""Prints, as JSON, what an MLflow tracking server holds for one experiment,
read with MLflow's own Python client (the tests' cached environment):

  {"experiment_id": "...", "runs": {"<run name>": {"run_id", "status",
   "start_time", "end_time", "params", "tags",
   "metrics": {"<key>": [[step, value, timestamp], ...]}}}}

Usage: read_mlflow.py TRACKING_URI EXPERIMENT_NAME
"""
import json
import math
import sys

from mlflow.tracking import MlflowClient


def number(v):
    return None if math.isnan(v) else v


def main():
    uri, name = sys.argv[1], sys.argv[2]
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        print(json.dumps({"experiment_id": None, "runs": {}}))
        return
    runs = {}
    page = None
    while True:
        found = client.search_runs([experiment.experiment_id], max_results=1000, page_token=page)
        for run in found:
            metrics = {}
            for key in run.data.metrics:
                history = client.get_metric_history(run.info.run_id, key)
                metrics[key] = sorted([m.step, number(m.value), m.timestamp] for m in history)
            name_ = run.info.run_name
            if name_ in runs:
                raise SystemExit("two runs named " + name_)
            runs[name_] = {
                "run_id": run.info.run_id,
                "status": run.info.status,
                "start_time": run.info.start_time,
                "end_time": run.info.end_time,
                "params": dict(run.data.params),
                "tags": {k: v for k, v in run.data.tags.items()},
                "metrics": metrics,
            }
        page = found.token
        if not page:
            break
    print(json.dumps({"experiment_id": experiment.experiment_id, "runs": runs}, sort_keys=True))


if __name__ == "__main__":
    main()
