"""Prints, as JSON, which keys MLflow's own validation takes, for checking
tracking/mlflow_keys.cc against it: for each key of the JSON list in the
file given, whether mlflow.utils.validation takes it as a metric key
(_validate_metric_name) and as a param key (_validate_param: the name
rules and the 250-character limit).

Usage: mlflow_key_rules.py KEYS.json
"""
import json
import sys

from mlflow.exceptions import MlflowException
from mlflow.utils import validation


def takes(check, key):
    try:
        check(key)
        return True
    except MlflowException:
        return False


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        keys = json.load(f)
    print(json.dumps([{"metric": takes(validation._validate_metric_name, k),
                       "param": takes(lambda k: validation._validate_param(k, "v"), k)} for k in keys]))


if __name__ == "__main__":
    main()
