#!/usr/bin/env python3
"""Extracts the OpenAPI v2 definitions the k8s tests need from the published
Kubernetes swagger.json: the kinds below and every definition they reference,
with descriptions dropped (validation does not read them).

  python3 extract_definitions.py SWAGGER_JSON > definitions.json
"""
import json
import sys

KINDS = [
    "io.k8s.api.batch.v1.Job", "io.k8s.api.batch.v1.JobList",
    "io.k8s.api.core.v1.Service", "io.k8s.api.core.v1.ServiceList",
    "io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.PodList",
    "io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.ServiceAccount",
    "io.k8s.api.core.v1.PersistentVolumeClaim", "io.k8s.api.core.v1.ConfigMap",
    "io.k8s.api.rbac.v1.Role", "io.k8s.api.rbac.v1.RoleBinding",
    "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    # The kit's results database and dashboard (k8s/postgres.yaml, k8s/dashboard.yaml).
    "io.k8s.api.apps.v1.StatefulSet", "io.k8s.api.apps.v1.Deployment", "io.k8s.api.core.v1.Secret",
]


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def refs(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.add(v.rsplit("/", 1)[-1])
            else:
                refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def main():
    defs = json.load(open(sys.argv[1]))["definitions"]
    todo, seen = list(KINDS), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found = set()
        refs(defs[name], found)
        todo.extend(found - seen)
    out = {name: strip(defs[name]) for name in sorted(seen)}
    json.dump({"swagger": "2.0",
               "info": {"title": "Kubernetes", "version": "v1.32.0"},
               "definitions": out}, sys.stdout, indent=None, sort_keys=True,
              separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
