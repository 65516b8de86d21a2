#!/usr/bin/env python3
"""Copies Kubeflow CRD YAML files without their `description` fields (they
make up most of the bytes and nothing reads them): strip_descriptions.py
SRC... DEST_DIR. Needs PyYAML."""
import os
import sys

import yaml


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items()
                if not (k == "description" and isinstance(v, str))}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def main():
    *srcs, dest = sys.argv[1:]
    for src in srcs:
        with open(src) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        out = os.path.join(dest, os.path.basename(src))
        with open(out, "w") as f:
            yaml.safe_dump_all([strip(d) for d in docs], f, sort_keys=False, width=100)


if __name__ == "__main__":
    main()
