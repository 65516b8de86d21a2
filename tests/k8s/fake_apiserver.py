#!/usr/bin/env python3
"""A loopback stand-in for a Kubernetes API server, for tests (stdlib only).

The real kubectl talks to it through the kubeconfig it writes. It serves:
  - discovery (/version, /api, /api/v1, /apis, /apis/<group>/<version>);
  - /openapi/v3 as 404 and /openapi/v2 with the real v1.32 definitions and no
    paths (protobuf, as kubectl asks for it, or JSON), so kubectl validates
    every manifest itself against the real schema (--validate=strict);
  - create/get/list/delete (and server-side dry run) for namespaces, pods,
    services, configmaps, secrets, serviceaccounts, persistentvolumeclaims, jobs,
    roles, rolebindings; label and field selectors; watch (enough for
    `kubectl delete --wait`); pods/log with follow;
  - selfsubjectaccessreviews (`kubectl auth can-i`), allowed unless denied
    with --deny VERB:RESOURCE[/SUBRESOURCE].
A Job controller runs each Job's pods as local processes: one per completion
index (Indexed mode), with the container's command, args, env (valueFrom
fieldRef and secretKeyRef resolved; `$(NAME)` expanded and `$$` unescaped as
the kubelet does), JOB_COMPLETION_INDEX and HOSTNAME; status, conditions,
backoffLimit, activeDeadlineSeconds and ttlSecondsAfterFinished follow the
real controller. Deleting a Job with propagationPolicy Foreground removes its
pods (SIGTERM to the process group, SIGKILL after the grace period) before
the Job. DNS does not exist here: an env value naming a pod through the Job's
headless Service (`<job>-0.<service>`) is rewritten to 127.0.0.1, and
MASTER_PORT to a free port per Job, so concurrent trials do not collide.

Simulated failures, as a real cluster shows them:
  - a pod whose nodeSelector does not match the single node's labels (or that
    asks for more nvidia.com/gpu than --node-gpus) stays Pending with
    PodScheduled=False, reason Unschedulable;
  - an image whose name contains "does-not-exist" stays Pending with the
    container waiting in ErrImagePull, then ImagePullBackOff;
  - an env secretKeyRef whose Secret or key does not exist (when the pod is
    scheduled; it is not retried) stays Pending with the container waiting
    in CreateContainerConfigError and the kubelet's message.

--log-stream-max-seconds S ends every followed log stream after S seconds,
partway through a line, as a dropped connection does.

Bounded lifetime: the server stops by itself after --lifetime seconds or
when its parent process exits, and kills the pods it started.

  fake_apiserver.py --kubeconfig OUT.json --openapi definitions.json
                    [--work-dir DIR] [--lifetime S] [--deny VERB:RES]...
"""
import argparse
import base64
import copy
import datetime
import json
import os
import random
import re
import signal
import socket
import string
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fake_kubeflow import Operators

# ---------------------------------------------------------------------------
# Resources served (discovery and storage)

RESOURCES = {
    # (group, version, plural): (kind, namespaced, short names)
    ("", "v1", "namespaces"): ("Namespace", False, ["ns"]),
    ("", "v1", "pods"): ("Pod", True, ["po"]),
    ("", "v1", "services"): ("Service", True, ["svc"]),
    ("", "v1", "configmaps"): ("ConfigMap", True, ["cm"]),
    ("", "v1", "secrets"): ("Secret", True, []),
    ("", "v1", "serviceaccounts"): ("ServiceAccount", True, ["sa"]),
    ("", "v1", "persistentvolumeclaims"): ("PersistentVolumeClaim", True, ["pvc"]),
    ("", "v1", "events"): ("Event", True, ["ev"]),
    ("batch", "v1", "jobs"): ("Job", True, []),
    ("apps", "v1", "statefulsets"): ("StatefulSet", True, ["sts"]),
    ("apps", "v1", "deployments"): ("Deployment", True, ["deploy"]),
    ("rbac.authorization.k8s.io", "v1", "roles"): ("Role", True, []),
    ("rbac.authorization.k8s.io", "v1", "rolebindings"): ("RoleBinding", True, []),
    ("authorization.k8s.io", "v1", "selfsubjectaccessreviews"):
        ("SelfSubjectAccessReview", False, []),
}
SUBRESOURCES = {("", "v1", "pods/log"): "Pod", ("", "v1", "pods/status"): "Pod",
                ("batch", "v1", "jobs/status"): "Job"}
PLURAL_OF = {kind: plural for (_, _, plural), (kind, _, _) in RESOURCES.items()}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch",
         "update", "watch"]

DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUB = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def api_version(group, version):
    return version if group == "" else group + "/" + version


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details = details or {}
        self.headers = headers or {}

    def body(self):
        return {"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Failure", "message": self.message,
                "reason": self.reason, "details": self.details,
                "code": self.code}


def not_found(plural, group, name):
    res = plural if not group else plural + "." + group
    return ApiError(404, "NotFound", '%s "%s" not found' % (res, name),
                    {"name": name, "group": group, "kind": plural})


# ---------------------------------------------------------------------------
# CustomResourceDefinitions (--crd FILE): served as a cluster serves them

CRD_SCHEMAS = {}  # (group, version, kind) -> OpenAPI v3 schema of the CRD
CRD_KINDS = set()  # (group, kind) of the custom resources served
RUNTIMES = {}  # ClusterTrainingRuntime name -> object (for the TrainJob operator)


def _v2_schema(s):
    """A CRD's structural OpenAPI v3 schema as the API server publishes it in
    OpenAPI v2 (apiextensions-apiserver's ToStructuralOpenAPIV2): no
    anyOf/oneOf/allOf/not, and a nullable, x-kubernetes-preserve-unknown-fields
    or x-kubernetes-embedded-resource node loses its type, properties and
    items (kubectl then accepts anything there); x-kubernetes-int-or-string
    has no type."""
    if not isinstance(s, dict):
        return s
    out = {k: v for k, v in s.items()
           if k not in ("anyOf", "oneOf", "allOf", "not", "nullable", "x-kubernetes-validations",
                        "description")}
    if s.get("nullable") or s.get("x-kubernetes-preserve-unknown-fields") or \
            s.get("x-kubernetes-embedded-resource"):
        for k in ("type", "properties", "items", "x-kubernetes-preserve-unknown-fields",
                  "x-kubernetes-embedded-resource"):
            out.pop(k, None)
    if s.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
    if "properties" in out:
        out["properties"] = {k: _v2_schema(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _v2_schema(out["items"])
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _v2_schema(out["additionalProperties"])
    return out


def load_crds(paths):
    """Serves the CustomResourceDefinitions in the YAML files `paths`:
    discovery, storage, and their schemas for /openapi/v2. Other documents
    of kind ClusterTrainingRuntime are the runtimes TrainJobs may name."""
    import yaml  # PyYAML (python3-yaml); only needed with --crd
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in paths:
        with open(path) as f:
            docs = [d for d in yaml.load_all(f, Loader=loader) if d]
        for d in docs:
            if d.get("kind") == "ClusterTrainingRuntime":
                RUNTIMES[d["metadata"]["name"]] = d
                continue
            if d.get("kind") != "CustomResourceDefinition":
                raise SystemExit("fake_apiserver: %s: expected CustomResourceDefinition documents, got %s"
                                 % (path, d.get("kind")))
            spec = d["spec"]
            group, names = spec["group"], spec["names"]
            namespaced = spec.get("scope", "Namespaced") == "Namespaced"
            for v in spec["versions"]:
                if not v.get("served", True):
                    continue
                RESOURCES[(group, v["name"], names["plural"])] = (
                    names["kind"], namespaced, names.get("shortNames", []))
                if "status" in v.get("subresources", {}):
                    SUBRESOURCES[(group, v["name"], names["plural"] + "/status")] = names["kind"]
                CRD_SCHEMAS[(group, v["name"], names["kind"])] = v["schema"]["openAPIV3Schema"]
            CRD_KINDS.add((group, names["kind"]))
            PLURAL_OF[names["kind"]] = names["plural"]


def crd_definitions():
    """OpenAPI v2 definitions of the served CRDs, named as the API server
    names them (`org.kubeflow.v1.PyTorchJob`), with their GVK extension."""
    defs = {}
    for (group, version, kind), schema in CRD_SCHEMAS.items():
        prefix = ".".join(reversed(group.split("."))) + "." + version + "."
        d = _v2_schema(schema)
        d.setdefault("properties", {})["metadata"] = {
            "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
        d["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
        defs[prefix + kind] = d
        defs[prefix + kind + "List"] = {
            "type": "object", "required": ["items"],
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                           "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"},
                           "items": {"type": "array", "items": {"$ref": "#/definitions/" + prefix + kind}}},
            "x-kubernetes-group-version-kind": [{"group": group, "kind": kind + "List", "version": version}]}
    return defs


# ---------------------------------------------------------------------------
# OpenAPI v2 as protobuf (gnostic openapiv2/OpenAPIv2.proto), for kubectl

def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, wire, payload):
    return _varint((num << 3) | wire) + payload


def _bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return _field(num, 2, _varint(len(data)) + data)


def _bool(num, v):
    return _field(num, 0, _varint(1 if v else 0))


def _double(num, v):
    return _field(num, 1, struct.pack("<d", float(v)))


def _int(num, v):
    return _field(num, 0, _varint(int(v)))


def _any(value):  # message Any { string yaml = 2; } (JSON is YAML)
    return _bytes(2, json.dumps(value))


def _schema(s):
    """Encodes one JSON schema as message Schema."""
    out = bytearray()
    if "$ref" in s:
        out += _bytes(1, s["$ref"])
    for key, num in (("format", 2), ("title", 3), ("pattern", 13),
                     ("discriminator", 26)):
        if key in s:
            out += _bytes(num, s[key])
    if "default" in s:
        out += _bytes(5, _any(s["default"]))
    for key, num in (("multipleOf", 6), ("maximum", 7), ("minimum", 9)):
        if key in s:
            out += _double(num, s[key])
    for key, num in (("exclusiveMaximum", 8), ("exclusiveMinimum", 10),
                     ("uniqueItems", 16), ("readOnly", 27)):
        if key in s:
            out += _bool(num, s[key])
    for key, num in (("maxLength", 11), ("minLength", 12), ("maxItems", 14),
                     ("minItems", 15), ("maxProperties", 17),
                     ("minProperties", 18)):
        if key in s:
            out += _int(num, s[key])
    for r in s.get("required", []):
        out += _bytes(19, r)
    for e in s.get("enum", []):
        out += _bytes(20, _any(e))
    if "additionalProperties" in s:
        ap = s["additionalProperties"]
        inner = _bool(2, ap) if isinstance(ap, bool) else _bytes(1, _schema(ap))
        out += _bytes(21, inner)
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        out += _bytes(22, b"".join(_bytes(1, t) for t in types))
    if "items" in s:
        items = s["items"] if isinstance(s["items"], list) else [s["items"]]
        out += _bytes(23, b"".join(_bytes(1, _schema(i)) for i in items))
    for sub in s.get("allOf", []):
        out += _bytes(24, _schema(sub))
    if "properties" in s:
        props = b"".join(
            _bytes(1, _bytes(1, name) + _bytes(2, _schema(sub)))
            for name, sub in s["properties"].items())
        out += _bytes(25, props)
    for key, value in s.items():
        if key.startswith("x-"):
            out += _bytes(31, _bytes(1, key) + _bytes(2, _any(value)))
    return bytes(out)


def decode_protobuf(data):
    """Decodes protobuf wire format into {field number: [values]} (LEN fields
    stay bytes)."""
    out, i = {}, 0

    def varint():
        nonlocal i
        shift = n = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n
    while i < len(data):
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            val = varint()
        elif wire == 1:
            val, i = data[i:i + 8], i + 8
        elif wire == 2:
            n = varint()
            val, i = data[i:i + n], i + n
        elif wire == 5:
            val, i = data[i:i + 4], i + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        out.setdefault(num, []).append(val)
    return out


def access_review_from_protobuf(data):
    """A SelfSubjectAccessReview in Kubernetes' protobuf envelope ("k8s\\0" +
    runtime.Unknown{raw = 2}) as its JSON form (the fields can-i sends)."""
    if not data.startswith(b"k8s\x00"):
        raise ValueError("no k8s protobuf envelope")
    raw = decode_protobuf(data[4:]).get(2, [b""])[0]
    review = decode_protobuf(raw)
    spec = decode_protobuf(review.get(2, [b""])[0])
    out = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
           "spec": {}}
    if 1 in spec:
        ra = decode_protobuf(spec[1][0])
        names = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource",
                 6: "subresource", 7: "name"}
        out["spec"]["resourceAttributes"] = {
            names[k]: v[0].decode() for k, v in ra.items() if k in names}
    return out


def openapi_v2_protobuf(doc):
    out = bytearray(_bytes(1, doc.get("swagger", "2.0")))
    info = doc.get("info", {})
    out += _bytes(2, _bytes(1, info.get("title", "")) +
                  _bytes(2, info.get("version", "")))
    defs = b"".join(_bytes(1, _bytes(1, name) + _bytes(2, _schema(s)))
                    for name, s in doc.get("definitions", {}).items())
    out += _bytes(9, defs)
    return bytes(out)


# ---------------------------------------------------------------------------
# Selectors

def parse_label_selector(text):
    """Returns a predicate over a labels dict (equality, set and existence)."""
    if not text:
        return lambda labels: True
    reqs = []
    for part in re.split(r",(?![^(]*\))", text):
        part = part.strip()
        m = re.match(r"^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$", part)
        if m:
            vals = {v.strip() for v in m.group(3).split(",")}
            key, neg = m.group(1), m.group(2) == "notin"
            reqs.append(lambda l, k=key, v=vals, n=neg: (l.get(k) in v) != n)
            continue
        m = re.match(r"^([\w./-]+)\s*(!=|==|=)\s*([\w./-]*)$", part)
        if m:
            key, op, val = m.groups()
            if op == "!=":
                reqs.append(lambda l, k=key, v=val: l.get(k) != v)
            else:
                reqs.append(lambda l, k=key, v=val: l.get(k) == v)
            continue
        if part.startswith("!"):
            reqs.append(lambda l, k=part[1:]: k not in l)
        else:
            reqs.append(lambda l, k=part: k in l)
    return lambda labels: all(r(labels) for r in reqs)


def parse_field_selector(text):
    if not text:
        return lambda obj: True
    reqs = []
    for part in text.split(","):
        m = re.match(r"^([\w.]+)\s*(!=|==|=)\s*(.*)$", part.strip())
        if not m:
            raise ApiError(400, "BadRequest", "invalid field selector %r" % text)
        path, op, val = m.groups()

        def get(obj, path=path):
            cur = obj
            for p in path.split("."):
                cur = cur.get(p, {}) if isinstance(cur, dict) else {}
            return cur if isinstance(cur, str) else ""
        if op == "!=":
            reqs.append(lambda o, g=get, v=val: g(o) != v)
        else:
            reqs.append(lambda o, g=get, v=val: g(o) == v)
    return lambda obj: all(r(obj) for r in reqs)


# ---------------------------------------------------------------------------
# The cluster: object store, Job controller, pod processes

class Faults:
    """Seeded fault injection, scoped by verb and path. The configuration is a
    JSON object, given with --faults FILE at start and replaced at any time
    by POST /_fake/faults (`kubectl create --raw /_fake/faults -f FILE`):

      {"seed": 7,
       "rules": [                       # the first rule that fires decides
         {"verb": "DELETE", "path": "/jobs/", "status": 500, "first": 1},
         {"status": [500, 429], "rate": 0.2, "retry_after": 1},
         {"verb": "GET", "path": "/pods$", "delay": 10},     # slow answers
         {"hang": true},                                     # a hung API
         {"path": "/log$", "log": "fail"},                   # log read fails
         {"path": "/log$", "log": "truncate", "rate": 0.5}], # stream cut
       "replace_pods": {"rate": 0.1, "after": 0.3, "index": 0},
       "lose_state": 1}

    A rule matches a request to a resource (never discovery, OpenAPI or
    /_fake) when `verb` (an HTTP method, default any) and `path` (a regular
    expression searched in the URL path, default any) match. It fires on its
    first `first` matches if given, else with probability `rate` (default 1)
    from the seeded generator. `status` (one code or a list to draw from)
    answers with Kubernetes' Status for it (500 InternalError, 503
    ServiceUnavailable, 429 TooManyRequests, 504 Timeout) and a Retry-After
    header when `retry_after` is given (client-go then retries by itself);
    `delay` sleeps before answering normally; `hang` never answers (until
    the server stops); `log` applies to pods/log only.

    `replace_pods`: a pod of completion index `index` (default 0), the
    first of its index in its Job, that has run `after` seconds is killed
    (SIGKILL, exit 137) with probability `rate`, or the first `first` such
    pods: it fails, and the Job controller replaces it under a new name if
    backoffLimit allows. The same for a PyTorchJob's pod of RANK `index`
    (0: the master): the training operator makes it again under the same
    name if its restartPolicy allows (ExitCode, fake_kubeflow.py); and for
    a TrainJob's pod of completion index `index`: its restartPolicy is
    OnFailure, so the kubelet restarts the killed container in place
    (restartCount + 1, a new log). Only a container killed so is restarted
    in place; any other failed container fails its pod. `lose_state`: each new value wipes every object
    outside the system namespaces and kills their pods, as if the cluster
    were replaced. GET /_fake/stats answers the counts of injected faults.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.config = {}
        self.rng = random.Random(0)
        self.fired = []  # per rule
        self.replace_fired = 0
        self.stats = {"requests": 0, "status": 0, "delay": 0, "hang": 0, "log_fail": 0,
                      "log_truncate": 0, "pods_replaced": 0, "state_lost": 0}

    def set(self, config):
        if not isinstance(config, dict) or not isinstance(config.get("rules", []), list):
            raise ApiError(400, "BadRequest", "faults: expected an object with a list of rules")
        with self.lock:
            self.config = config
            self.rng = random.Random(config.get("seed", 0))
            self.fired = [0] * len(config.get("rules", []))
            self.replace_fired = 0

    def _fires(self, rule, i):
        if "first" in rule:
            if self.fired[i] >= int(rule["first"]):
                return False
        elif self.rng.random() >= float(rule.get("rate", 1)):
            return False
        self.fired[i] += 1
        return True

    def pick(self, method, path, is_log):
        """The rule that fires for this request, or None."""
        with self.lock:
            self.stats["requests"] += 1
            for i, rule in enumerate(self.config.get("rules", [])):
                if rule.get("verb", "*") not in ("*", method):
                    continue
                if "path" in rule and not re.search(rule["path"], path):
                    continue
                if "log" in rule and not is_log:
                    continue
                if not self._fires(rule, i):
                    continue
                return dict(rule, _status=self._status(rule))
        return None

    def _status(self, rule):
        st = rule.get("status")
        if isinstance(st, list):
            return self.rng.choice(st) if st else None
        return st

    def count(self, key):
        with self.lock:
            self.stats[key] += 1

    def should_replace(self):
        with self.lock:
            rp = self.config.get("replace_pods")
            if not rp:
                return False
            if "first" in rp:
                ok = self.replace_fired < int(rp["first"])
            else:
                ok = self.rng.random() < float(rp.get("rate", 1))
            if ok:
                self.replace_fired += 1
                self.stats["pods_replaced"] += 1
            return ok


STATUS_OF = {500: ("InternalError", "Internal error occurred: injected fault"),
             503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
             504: ("Timeout", "the server was unable to return a response in the time allotted"),
             429: ("TooManyRequests", "the server has received too many requests and has asked us to try again later")}


class PodProcess:
    def __init__(self, popen, log_path):
        self.popen, self.log_path = popen, log_path
        self.term_deadline = None  # SIGKILL after this time


class Cluster:
    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.rv = 1
        # (plural, namespace, name) -> object
        self.objects = {}
        self.procs = {}  # (namespace, pod name) -> PodProcess
        self.events = []  # (resourceVersion, type, plural, namespace, object)
        self.job_ports = {}  # job uid -> MASTER_PORT
        self.deny = set(args.deny or [])
        self.faults = Faults()
        self.state_epoch = None  # the last lose_state value acted on
        self.operators = Operators(self, RUNTIMES)  # PyTorchJob and TrainJob controllers
        self.node_labels = dict(kv.split("=", 1) for kv in args.node_label)
        self.node_labels.setdefault("kubernetes.io/hostname", "fake-node")
        self.node_labels.setdefault("kubernetes.io/os", "linux")
        for ns in ("default", "kube-system", "kube-public"):
            self._store("namespaces", "", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": ns},
                                           "spec": {"finalizers": ["kubernetes"]},
                                           "status": {"phase": "Active"}})

    # -- store ----------------------------------------------------------------
    def _next_rv(self):
        self.rv += 1
        return str(self.rv)

    def _store(self, plural, ns, obj):
        md = obj.setdefault("metadata", {})
        md.setdefault("uid", str(uuid.uuid4()))
        md.setdefault("creationTimestamp", now_rfc3339())
        md["resourceVersion"] = self._next_rv()
        md.setdefault("generation", 1)
        if ns:
            md["namespace"] = ns
        key = (plural, ns, md["name"])
        existed = key in self.objects
        self.objects[key] = obj
        self._event("MODIFIED" if existed else "ADDED", plural, obj)
        return obj

    def _touch(self, obj):
        obj["metadata"]["resourceVersion"] = self._next_rv()
        self._event("MODIFIED", PLURAL_OF[obj["kind"]], obj)

    def _remove(self, key):
        obj = self.objects.pop(key, None)
        if obj is not None:
            obj["metadata"]["resourceVersion"] = self._next_rv()
            self._event("DELETED", key[0], obj)

    def _event(self, etype, plural, obj):
        """Appends to the event log watches replay from a resourceVersion."""
        self.events.append((int(obj["metadata"]["resourceVersion"]), etype, plural,
                            obj["metadata"].get("namespace", ""), copy.deepcopy(public(obj))))

    def get(self, plural, group, ns, name):
        with self.lock:
            obj = self.objects.get((plural, ns, name))
            if obj is None:
                raise not_found(plural, group, name)
            return copy.deepcopy(obj)

    def list(self, plural, ns, label_sel, field_sel):
        with self.lock:
            out = []
            for (p, n, _), obj in sorted(self.objects.items()):
                if p != plural or (ns is not None and n != ns):
                    continue
                if label_sel(obj["metadata"].get("labels", {})) and field_sel(obj):
                    out.append(copy.deepcopy(obj))
            return out, str(self.rv)

    def create(self, plural, group, version, ns, body, dry_run):
        kind, namespaced, _ = RESOURCES[(group, version, plural)]
        if body.get("kind") not in (None, kind):
            raise ApiError(400, "BadRequest",
                           "the body kind %s does not match %s" % (body.get("kind"), kind))
        body["kind"], body["apiVersion"] = kind, api_version(group, version)
        md = body.setdefault("metadata", {})
        if not md.get("name") and md.get("generateName"):
            md["name"] = md["generateName"] + rand_suffix()
        name = md.get("name", "")
        self._validate(plural, group, kind, name, body)
        with self.lock:
            if namespaced:
                if md.get("namespace") not in (None, "", ns):
                    raise ApiError(400, "BadRequest",
                                   "the namespace of the provided object does not match the namespace sent on the request")
                if ("namespaces", "", ns) not in self.objects:
                    raise ApiError(404, "NotFound", 'namespaces "%s" not found' % ns,
                                   {"name": ns, "kind": "namespaces"})
            else:
                ns = ""
            if (plural, ns, name) in self.objects:
                res = plural if not group else plural + "." + group
                raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (res, name),
                               {"name": name, "group": group, "kind": plural})
            if dry_run:
                return body
            if plural == "jobs":
                self._default_job(body)
            elif plural in Operators.KINDS:
                self.operators.on_create(plural, body)
            elif plural == "services":
                body.setdefault("spec", {}).setdefault("clusterIP", "10.96.0.%d" % random.randint(2, 250))
                body["status"] = {"loadBalancer": {}}
            elif plural == "namespaces":
                body["status"] = {"phase": "Active"}
            obj = self._store(plural, ns, body)
            return copy.deepcopy(obj)

    def _validate(self, plural, group, kind, name, body):
        causes = []
        if not name:
            causes.append("metadata.name: Required value: name or generateName is required")
        elif plural in ("services",) and (not DNS1035.match(name) or len(name) > 63):
            causes.append("metadata.name: Invalid value: %r: a DNS-1035 label must consist of lower case "
                          "alphanumeric characters or '-', start with an alphabetic character, and end "
                          "with an alphanumeric character (at most 63 characters)" % name)
        elif not DNS1123_SUB.match(name) or len(name) > 253:
            causes.append("metadata.name: Invalid value: %r: a lowercase RFC 1123 subdomain" % name)
        for key, val in body.get("metadata", {}).get("labels", {}).items():
            if not isinstance(val, str) or len(val) > 63 or not re.match(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$", val):
                causes.append("metadata.labels: Invalid value: %r" % val)
        if plural == "jobs":
            spec = body.get("spec", {})
            if len(name) > 63:
                causes.append("metadata.name: Invalid value: %r: must be no more than 63 characters" % name)
            tmpl = spec.get("template", {})
            pod = tmpl.get("spec", {})
            if pod.get("restartPolicy") not in ("Never", "OnFailure"):
                causes.append('spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"')
            if not pod.get("containers"):
                causes.append("spec.template.spec.containers: Required value")
            for i, c in enumerate(pod.get("containers", [])):
                if not c.get("image"):
                    causes.append("spec.template.spec.containers[%d].image: Required value" % i)
                if not c.get("name"):
                    causes.append("spec.template.spec.containers[%d].name: Required value" % i)
            if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
                causes.append("spec.completions: Required value: when completion mode is Indexed")
            sub = pod.get("subdomain")
            if sub is not None and not DNS1035.match(sub):
                causes.append("spec.template.spec.subdomain: Invalid value: %r" % sub)
        if causes:
            raise ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (kind, name, "; ".join(causes)),
                           {"name": name, "group": group, "kind": kind,
                            "causes": [{"message": c} for c in causes]})

    def _default_job(self, job):
        spec = job.setdefault("spec", {})
        uid = job["metadata"].setdefault("uid", str(uuid.uuid4()))
        spec.setdefault("completions", 1)
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        labels = {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
                  "batch.kubernetes.io/job-name": job["metadata"]["name"],
                  "job-name": job["metadata"]["name"]}
        spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
        tmd = spec.setdefault("template", {}).setdefault("metadata", {})
        tmd.setdefault("labels", {}).update(labels)
        job["status"] = {"startTime": now_rfc3339(), "active": 0, "ready": 0,
                         "terminating": 0}
        job["_start"] = time.time()  # dropped when served

    def delete(self, plural, group, ns, name, policy, grace):
        with self.lock:
            obj = self.objects.get((plural, ns, name))
            if obj is None:
                raise not_found(plural, group, name)
            md = obj["metadata"]
            if plural == "jobs":
                policy = policy or "Background"
                pods = self._job_pods(obj)
                if policy == "Orphan":
                    for p in pods:
                        p["metadata"].pop("ownerReferences", None)
                    self._remove((plural, ns, name))
                elif policy == "Foreground":
                    md.setdefault("deletionTimestamp", now_rfc3339())
                    md["deletionGracePeriodSeconds"] = 0
                    if "foregroundDeletion" not in md.setdefault("finalizers", []):
                        md["finalizers"].append("foregroundDeletion")
                    for p in pods:
                        self._delete_pod(p, grace)
                    self._touch(obj)
                    if not pods:
                        self._remove((plural, ns, name))
                else:  # Background: the Job goes now, its pods right after
                    for p in pods:
                        self._delete_pod(p, grace)
                    self._remove((plural, ns, name))
                return copy.deepcopy(obj)
            if plural in Operators.KINDS:
                # As for Jobs, with the pods and Services the operator owns.
                policy = policy or "Background"
                if policy == "Orphan":
                    for o in self.operators.owned(obj):
                        o["metadata"].pop("ownerReferences", None)
                    self._remove((plural, ns, name))
                elif policy == "Foreground":
                    md.setdefault("deletionTimestamp", now_rfc3339())
                    md["deletionGracePeriodSeconds"] = 0
                    if "foregroundDeletion" not in md.setdefault("finalizers", []):
                        md["finalizers"].append("foregroundDeletion")
                    left = self.operators.delete_owned(obj, grace)
                    self._touch(obj)
                    if not left:
                        self._remove((plural, ns, name))
                else:
                    self.operators.delete_owned(obj, grace)
                    self._remove((plural, ns, name))
                return copy.deepcopy(obj)
            if plural == "pods":
                self._delete_pod(obj, grace)
                return copy.deepcopy(obj)
            if plural == "namespaces":
                for key in [k for k in self.objects if k[1] == name]:
                    if key[0] == "pods":
                        self._delete_pod(self.objects[key], grace)
                    else:
                        self._remove(key)
            self._remove((plural, ns, name))
            return copy.deepcopy(obj)

    # -- pods -----------------------------------------------------------------
    def _job_pods(self, job):
        uid = job["metadata"]["uid"]
        return [o for (p, n, _), o in self.objects.items()
                if p == "pods" and n == job["metadata"]["namespace"]
                and o["metadata"].get("labels", {}).get("batch.kubernetes.io/controller-uid") == uid]

    def _delete_pod(self, pod, grace):
        md = pod["metadata"]
        key = (md["namespace"], md["name"])
        md.setdefault("deletionTimestamp", now_rfc3339())
        if grace is None:
            grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
        grace = min(float(grace), self.args.max_grace)
        proc = self.procs.get(key)
        if proc is not None and proc.popen.poll() is None:
            try:
                os.killpg(proc.popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            proc.term_deadline = time.time() + grace
        else:
            self._remove(("pods", md["namespace"], md["name"]))
            self.procs.pop(key, None)
        self._touch(pod)

    def _create_pod(self, job, index):
        spec = job["spec"]
        tmpl = copy.deepcopy(spec["template"])
        jname, ns = job["metadata"]["name"], job["metadata"]["namespace"]
        md = tmpl.get("metadata", {})
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "%s-%s%s" % (jname, "" if index is None else "%d-" % index, rand_suffix()),
                            "labels": dict(md.get("labels", {})),
                            "annotations": dict(md.get("annotations", {})),
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                                 "name": jname, "uid": job["metadata"]["uid"],
                                                 "controller": True, "blockOwnerDeletion": True}]},
               "spec": tmpl.get("spec", {}),
               "status": {"phase": "Pending", "conditions": []}}
        if index is not None:
            pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] = str(index)
            pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] = str(index)
            pod["spec"]["hostname"] = "%s-%d" % (jname, index)
            for c in pod["spec"].get("containers", []):
                c.setdefault("env", []).append({"name": "JOB_COMPLETION_INDEX", "value": str(index)})
        pod["spec"].setdefault("terminationGracePeriodSeconds", 30)
        pod["spec"].setdefault("serviceAccountName", pod["spec"].get("serviceAccountName", "default"))
        self._store("pods", ns, pod)
        self._schedule(pod, job)
        return pod

    def _schedule(self, pod, job):
        spec, status = pod["spec"], pod["status"]
        reason = None
        for k, v in spec.get("nodeSelector", {}).items():
            if self.node_labels.get(k) != v:
                reason = ("0/1 nodes are available: 1 node(s) didn't match Pod's node "
                          "affinity/selector. preemption: 0/1 nodes are available: 1 "
                          "Preemption is not helpful for scheduling.")
        gpus = 0
        for c in spec.get("containers", []):
            res = c.get("resources", {})
            gpus += int(res.get("limits", {}).get("nvidia.com/gpu", res.get("requests", {}).get("nvidia.com/gpu", 0)))
        if reason is None and gpus > self.args.node_gpus:
            reason = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
        if reason:
            status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                     "reason": "Unschedulable", "message": reason,
                                     "lastTransitionTime": now_rfc3339()}]
            return
        spec["nodeName"] = "fake-node"
        status["conditions"] = [{"type": "PodScheduled", "status": "True",
                                 "lastTransitionTime": now_rfc3339()}]
        c = spec["containers"][0]
        if "does-not-exist" in c.get("image", ""):
            status["containerStatuses"] = [{
                "name": c["name"], "image": c["image"], "imageID": "", "ready": False,
                "restartCount": 0, "started": False,
                "state": {"waiting": {"reason": "ErrImagePull",
                                      "message": 'failed to pull and unpack image "%s": not found' % c["image"]}},
                "lastState": {}}]
            pod["_pull_failed_at"] = time.time()
            return
        missing = self._missing_secret(pod, c)
        if missing:
            status["containerStatuses"] = [{
                "name": c["name"], "image": c["image"], "imageID": "", "ready": False,
                "restartCount": 0, "started": False,
                "state": {"waiting": {"reason": "CreateContainerConfigError", "message": missing}},
                "lastState": {}}]
            return
        self._start_pod(pod, job)

    def _secret_value(self, ns, ref):
        """The value a secretKeyRef names, or the kubelet's error message."""
        secret = self.objects.get(("secrets", ns, ref.get("name", "")))
        if secret is None:
            return None, 'secret "%s" not found' % ref.get("name", "")
        key = ref.get("key", "")
        if key in (secret.get("data") or {}):
            return base64.b64decode(secret["data"][key]).decode("utf-8", "replace"), None
        if key in (secret.get("stringData") or {}):
            return secret["stringData"][key], None
        return None, "couldn't find key %s in Secret %s/%s" % (key, ns, ref.get("name", ""))

    def _missing_secret(self, pod, container):
        for e in container.get("env", []):
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref is not None:
                _, error = self._secret_value(pod["metadata"]["namespace"], ref)
                if error:
                    return error
        return None

    def _pod_env(self, pod, job, container):
        md = pod["metadata"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "HOSTNAME": pod["spec"].get("hostname", md["name"]),
               "KUBERNETES_SERVICE_HOST": "127.0.0.1",
               "KUBERNETES_SERVICE_PORT": str(self.args.port)}
        subdomain = pod["spec"].get("subdomain")
        for e in container.get("env", []):
            if "value" in e:
                # The kubelet expands $(NAME) against the variables defined
                # before this one.
                val = expand_vars(e["value"], env)
            elif "valueFrom" in e and "secretKeyRef" in e["valueFrom"]:
                val, _ = self._secret_value(md["namespace"], e["valueFrom"]["secretKeyRef"])
                val = val or ""
            elif "valueFrom" in e and "fieldRef" in e["valueFrom"]:
                path = e["valueFrom"]["fieldRef"]["fieldPath"]
                m = re.match(r"^metadata\.(annotations|labels)\['([^']+)'\]$", path)
                if m:
                    val = md.get(m.group(1), {}).get(m.group(2), "")
                else:
                    val = {"metadata.name": md["name"], "metadata.namespace": md["namespace"],
                           "metadata.uid": md["uid"], "spec.nodeName": "fake-node",
                           "spec.serviceAccountName": pod["spec"].get("serviceAccountName", ""),
                           "status.podIP": "127.0.0.1", "status.hostIP": "127.0.0.1"}.get(path, "")
            else:
                val = ""
            # No DNS here: a name of a pod behind the Job's headless Service
            # (<host>.<subdomain>[.<ns>.svc[.cluster.local]]) is this machine.
            if subdomain and re.match(r"^[a-z0-9-]+\.%s(\.%s(\.svc(\.cluster\.local)?)?)?$"
                                      % (re.escape(subdomain), re.escape(md["namespace"])), val):
                val = "127.0.0.1"
            # Nor for the Service the training operator makes per pod.
            if val and "training.kubeflow.org/job-name" in md.get("labels", {}) and \
                    ("services", md["namespace"], val) in self.objects:
                val = "127.0.0.1"
            env[e["name"]] = val
        for key in ("MASTER_PORT", "PET_MASTER_PORT"):
            if key in env:
                env[key] = str(self.job_ports.setdefault(job["metadata"]["uid"], free_port()))
        return env

    def _start_pod(self, pod, job, restarts=0):
        c = pod["spec"]["containers"][0]
        env = self._pod_env(pod, job, c)
        # command and args are expanded against the container's whole env.
        argv = [expand_vars(a, env) for a in list(c.get("command", [])) + list(c.get("args", []))]
        md = pod["metadata"]
        # A container restarted in place writes a new log (kubectl logs
        # shows the current one).
        log_path = os.path.join(self.args.work_dir, "%s_%s%s.log" % (md["namespace"], md["name"],
                                                                    ".%d" % restarts if restarts else ""))
        cwd = c.get("workingDir")
        if not cwd or not os.path.isdir(cwd):
            cwd = self.args.work_dir
        status = pod["status"]
        with open(log_path, "wb") as log:
            try:
                popen = subprocess.Popen(argv, env=env, cwd=cwd,
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as e:
                log.write(("exec %s: %s\n" % (argv[:1], e)).encode())
                status.update(phase="Failed", reason="StartError")
                status["containerStatuses"] = [{
                    "name": c["name"], "image": c["image"], "ready": False, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 128, "reason": "StartError",
                                             "message": str(e), "finishedAt": now_rfc3339()}}}]
                return
        self.procs[(md["namespace"], md["name"])] = PodProcess(popen, log_path)
        status.update(phase="Running", podIP="127.0.0.1", hostIP="127.0.0.1")
        status.setdefault("startTime", now_rfc3339())
        status["conditions"] = [cond for cond in status["conditions"]
                                if cond["type"] not in ("Initialized", "Ready", "ContainersReady")]
        status["conditions"] += [{"type": t, "status": "True", "lastTransitionTime": now_rfc3339()}
                                 for t in ("Initialized", "Ready", "ContainersReady")]
        last = {}
        if restarts:
            last = {"terminated": (status.get("containerStatuses") or [{}])[0].get("state", {}).get("terminated", {})}
        status["containerStatuses"] = [{
            "name": c["name"], "image": c["image"], "imageID": "fake://" + c["image"],
            "ready": True, "restartCount": restarts, "started": True,
            "state": {"running": {"startedAt": now_rfc3339()}}, "lastState": last}]

    # -- controller loop ------------------------------------------------------
    def lose_state(self):
        """Everything outside the system namespaces is gone, its pods killed."""
        for key, proc in list(self.procs.items()):
            if key[0] in ("kube-system", "kube-public"):
                continue
            try:
                os.killpg(proc.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            del self.procs[key]
        for key in list(self.objects):
            if key[0] != "namespaces" and key[1] not in ("kube-system", "kube-public"):
                self._remove(key)
        self.faults.count("state_lost")

    @staticmethod
    def _pod_rank(pod):
        """A Job's pod: its completion index; a PyTorchJob's: the operator's
        RANK (master 0, worker i + 1)."""
        labels = pod["metadata"].get("labels", {})
        if "training.kubeflow.org/replica-type" in labels:
            i = int(labels.get("training.kubeflow.org/replica-index", "0"))
            return str(i if labels["training.kubeflow.org/replica-type"] == "master" else i + 1)
        return labels.get("batch.kubernetes.io/job-completion-index")

    def replace_pods(self):
        rp = self.faults.config.get("replace_pods")
        if not rp:
            return
        index = str(rp.get("index", 0))
        for (ns, name), proc in self.procs.items():
            pod = self.objects.get(("pods", ns, name))
            if pod is None or "_replace_checked" in pod or proc.popen.poll() is not None:
                continue
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if self._pod_rank(pod) != index:
                continue
            started = pod.setdefault("_running_since", time.time())
            if time.time() - started < float(rp.get("after", 0)):
                continue
            pod["_replace_checked"] = True
            owner = (pod["metadata"].get("ownerReferences") or [{}])[0].get("uid")
            job = next((o for (p, n, _), o in self.objects.items()
                        if p in ("jobs", "pytorchjobs", "trainjobs") and o["metadata"]["uid"] == owner), None)
            if job is None or index in job.setdefault("_replaced", []):
                continue  # only the first pod of an index is ever replaced
            if self.faults.should_replace():
                job["_replaced"].append(index)
                pod["_killed_by_fault"] = True
                try:
                    os.killpg(proc.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def tick(self):
        with self.lock:
            changed = False
            epoch = self.faults.config.get("lose_state")
            if epoch is not None and epoch != self.state_epoch:
                self.lose_state()
            self.state_epoch = epoch
            self.replace_pods()
            for key, proc in list(self.procs.items()):
                pod = self.objects.get(("pods",) + key)
                code = proc.popen.poll()
                if code is None:
                    if proc.term_deadline and time.time() > proc.term_deadline:
                        try:
                            os.killpg(proc.popen.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    continue
                if pod is None:
                    del self.procs[key]
                    continue
                if "_exited" in pod:
                    continue
                if code != 0 and pod.pop("_killed_by_fault", False) and \
                        pod["spec"].get("restartPolicy") in ("OnFailure", "Always") and \
                        not pod["metadata"].get("deletionTimestamp"):
                    # The kubelet restarts the killed container in place (a
                    # TrainJob's pods: the JobSet's restartPolicy OnFailure).
                    cs = pod["status"]["containerStatuses"][0]
                    cs["state"] = {"terminated": {
                        "exitCode": code if code >= 0 else 128 - code, "reason": "Error",
                        "startedAt": cs["state"].get("running", {}).get("startedAt", now_rfc3339()),
                        "finishedAt": now_rfc3339()}}
                    del self.procs[key]
                    uid = (pod["metadata"].get("ownerReferences") or [{}])[0].get("uid")
                    owner = next((o for (p, n, _), o in self.objects.items() if o["metadata"].get("uid") == uid), pod)
                    self._start_pod(pod, owner, cs.get("restartCount", 0) + 1)
                    self._touch(pod)
                    changed = True
                    continue
                pod["_exited"] = True
                st = pod["status"]
                st["phase"] = "Succeeded" if code == 0 else "Failed"
                cs = st["containerStatuses"][0]
                cs.update(ready=False, started=False)
                cs["state"] = {"terminated": {
                    "exitCode": code if code >= 0 else 128 - code,
                    "reason": "Completed" if code == 0 else "Error",
                    "startedAt": cs["state"].get("running", {}).get("startedAt", now_rfc3339()),
                    "finishedAt": now_rfc3339()}}
                container = pod["spec"]["containers"][0]
                if code != 0 and container.get("terminationMessagePolicy") == "FallbackToLogsOnError":
                    # The kubelet's rule: the log's tail, at most 80 lines
                    # and 2048 bytes, when the container failed.
                    with open(proc.log_path, "rb") as f:
                        tail = b"\n".join(f.read().split(b"\n")[-81:])[-2048:]
                    if tail:
                        cs["state"]["terminated"]["message"] = tail.decode("utf-8", "replace")
                for cond in st["conditions"]:
                    if cond["type"] in ("Ready", "ContainersReady"):
                        cond.update(status="False", reason="PodCompleted")
                self._touch(pod)
                changed = True
                if pod["metadata"].get("deletionTimestamp"):
                    self._remove(("pods",) + key)
                    del self.procs[key]
            for (plural, ns, name), pod in list(self.objects.items()):
                if plural == "pods" and "_pull_failed_at" in pod and not pod["metadata"].get("deletionTimestamp"):
                    w = pod["status"]["containerStatuses"][0]["state"]["waiting"]
                    if w["reason"] == "ErrImagePull" and time.time() - pod["_pull_failed_at"] > 1:
                        w.update(reason="ImagePullBackOff",
                                 message='Back-off pulling image "%s"' % pod["spec"]["containers"][0]["image"])
                        self._touch(pod)
                if plural == "pods" and pod["metadata"].get("deletionTimestamp") and (ns, name) not in self.procs:
                    self._remove((plural, ns, name))
            for (plural, ns, name), job in list(self.objects.items()):
                if plural == "jobs":
                    changed |= self._sync_job(job)
                elif plural in Operators.KINDS:
                    changed |= self.operators.sync(plural, job)
            return changed

    def _sync_job(self, job):
        md, spec, st = job["metadata"], job["spec"], job["status"]
        pods = self._job_pods(job)
        if md.get("deletionTimestamp"):
            if not pods:
                self._remove(("jobs", md["namespace"], md["name"]))
            return True
        finished = any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
                       for c in st.get("conditions", []))
        if finished:
            ttl = spec.get("ttlSecondsAfterFinished")
            if ttl is not None and time.time() - job["_finished"] >= ttl:
                self.delete("jobs", "batch", md["namespace"], md["name"], "Background", None)
                return True
            return False
        indexed = spec["completionMode"] == "Indexed"
        completions = spec["completions"]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        active = [p for p in live if p["status"]["phase"] in ("Pending", "Running")]
        failed = [p for p in pods if p["status"]["phase"] == "Failed"]
        succeeded = [p for p in pods if p["status"]["phase"] == "Succeeded"]
        done_idx = sorted({int(p["metadata"]["labels"].get("batch.kubernetes.io/job-completion-index", 0))
                           for p in succeeded})
        old = json.dumps(st, sort_keys=True)
        st["active"] = len(active)
        st["ready"] = sum(1 for p in active if p["status"]["phase"] == "Running")
        st["failed"] = len(failed)
        st["succeeded"] = len(done_idx) if indexed else len(succeeded)
        if indexed:
            st["completedIndexes"] = compress_indexes(done_idx)
        st.setdefault("uncountedTerminatedPods", {})
        fail_reason = None
        if len(failed) > spec["backoffLimit"]:
            fail_reason = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
        ads = spec.get("activeDeadlineSeconds")
        if ads is not None and time.time() - job["_start"] > ads:
            fail_reason = ("DeadlineExceeded", "Job was active longer than specified deadline")
        if fail_reason:
            for p in active:
                self._delete_pod(p, None)
            self._finish(job, "Failed", "FailureTarget", *fail_reason)
        elif st["succeeded"] >= completions:
            self._finish(job, "Complete", "SuccessCriteriaMet", "CompletionsReached",
                         "Reached expected number of succeeded pods")
        else:
            # Keep parallelism pods running: missing indexes get a new pod.
            if indexed:
                busy = {int(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"])
                        for p in active}
                for i in range(completions):
                    if len(busy) >= spec["parallelism"]:
                        break
                    if i not in busy and i not in done_idx:
                        self._create_pod(job, i)
                        busy.add(i)
            else:
                want = min(spec["parallelism"], completions - len(succeeded))
                for _ in range(want - len(active)):
                    self._create_pod(job, None)
        if json.dumps(st, sort_keys=True) != old:
            self._touch(job)
            return True
        return False

    def _finish(self, job, final, interim, reason, message):
        st = job["status"]
        t = now_rfc3339()
        st["conditions"] = [
            {"type": interim, "status": "True", "reason": reason, "message": message,
             "lastProbeTime": t, "lastTransitionTime": t},
            {"type": final, "status": "True", "reason": reason, "message": message,
             "lastProbeTime": t, "lastTransitionTime": t}]
        if final == "Complete":
            st["completionTime"] = t
        st["active"] = 0
        st["ready"] = 0
        job["_finished"] = time.time()
        self._touch(job)

    def kill_all(self):
        with self.lock:
            for proc in self.procs.values():
                try:
                    os.killpg(proc.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for proc in self.procs.values():
                try:
                    proc.popen.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass

    # -- access review ----------------------------------------------------------
    def review(self, body):
        attrs = body.get("spec", {}).get("resourceAttributes", {})
        res = attrs.get("resource", "")
        if attrs.get("subresource"):
            res += "/" + attrs["subresource"]
        denied = ("%s:%s" % (attrs.get("verb", ""), res)) in self.deny
        body = dict(body)
        body["status"] = {"allowed": not denied}
        if denied:
            body["status"]["denied"] = True
            body["status"]["reason"] = "RBAC: denied by the test (--deny)"
        else:
            body["status"]["reason"] = 'RBAC: allowed by the fake cluster'
        body["metadata"] = {"creationTimestamp": None}
        return body


def expand_vars(text, env):
    """Kubernetes' variable expansion of command, args and env values:
    `$$` is a literal `$`; `$(NAME)` is NAME's value when NAME is defined,
    else left as written; any other `$` (also an unclosed `$(`) stays."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c != "$" or i + 1 == n:
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2:close]
                out.append(env[name] if name in env else text[i:close + 1])
                i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def compress_indexes(idx):
    out, i = [], 0
    while i < len(idx):
        j = i
        while j + 1 < len(idx) and idx[j + 1] == idx[j] + 1:
            j += 1
        out.append(str(idx[i]) if i == j else "%d-%d" % (idx[i], idx[j]))
        i = j + 1
    return ",".join(out)


def rand_suffix():
    return "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def public(obj):
    """Drops the controller's private bookkeeping (keys starting with _)."""
    return {k: v for k, v in obj.items() if not k.startswith("_")}


# ---------------------------------------------------------------------------
# HTTP

def discovery_resources(group, version):
    out = []
    for (g, v, plural), (kind, namespaced, short) in RESOURCES.items():
        if (g, v) != (group, version):
            continue
        verbs = ["create"] if kind == "SelfSubjectAccessReview" else VERBS
        item = {"name": plural, "singularName": kind.lower(), "namespaced": namespaced,
                "kind": kind, "verbs": verbs}
        if short:
            item["shortNames"] = short
        if plural == "jobs":
            item["categories"] = ["all"]
        if plural in ("pods", "services"):
            item["categories"] = ["all"]
        out.append(item)
    for (g, v, name), kind in SUBRESOURCES.items():
        if (g, v) == (group, version):
            out.append({"name": name, "singularName": "", "namespaced": True, "kind": kind,
                        "verbs": ["get"] if name.endswith("/log") else ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": api_version(group, version), "resources": out}


def groups():
    versions = {}
    for (g, v, _) in RESOURCES:
        if g and v not in versions.setdefault(g, []):
            versions[g].append(v)
    return [{"name": g, "versions": [{"groupVersion": g + "/" + v, "version": v} for v in vs],
             "preferredVersion": {"groupVersion": g + "/" + vs[0], "version": vs[0]}}
            for g, vs in sorted(versions.items())]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cluster = None  # set in main
    openapi_json = b""
    openapi_pb = b""

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake_apiserver: " + (fmt % args) + "\n")

    # -- responses ------------------------------------------------------------
    def send_json(self, code, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_raw(self, code, ctype, data):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def read_raw_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or ""):
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def read_body(self):
        data = self.read_raw_body()
        if not data:
            return {}
        if "protobuf" in (self.headers.get("Content-Type") or ""):
            # Typed clients (can-i) send protobuf; only reviews are decoded.
            try:
                return access_review_from_protobuf(data)
            except (ValueError, IndexError):
                raise ApiError(415, "UnsupportedMediaType",
                               "the fake API server reads protobuf only for access reviews")
        try:
            return json.loads(data)
        except ValueError:
            raise ApiError(415, "UnsupportedMediaType", "the body is not JSON")

    # -- routing --------------------------------------------------------------
    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def dispatch(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        parts = [p for p in url.path.split("/") if p]
        try:
            if parts[:1] == ["_fake"]:
                self.serve_fake_control(method, parts)
                return
            if method == "GET" and self.serve_discovery(url.path, parts):
                return
            self.fault = self.cluster.faults.pick(method, url.path, parts[-1:] == ["log"])
            self.apply_fault()
            self.serve_resource(method, parts, query)
        except ApiError as e:
            self.send_json(e.code, e.body(), e.headers)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def serve_fake_control(self, method, parts):
        faults = self.cluster.faults
        if method == "POST" and parts == ["_fake", "faults"]:
            faults.set(self.read_body())
            self.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                 "status": "Success"})
        elif method == "GET" and parts == ["_fake", "stats"]:
            with faults.lock:
                self.send_json(200, dict(faults.stats))
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def apply_fault(self):
        """Acts on the fault picked for this request (see Faults)."""
        f, faults = self.fault, self.cluster.faults
        if f is None or "log" in f:
            return
        if f.get("hang"):
            faults.count("hang")
            while not self.server.stopping:
                time.sleep(0.1)
            raise BrokenPipeError()
        if f.get("delay"):
            faults.count("delay")
            time.sleep(float(f["delay"]))
        code = f.get("_status")
        if code:
            faults.count("status")
            # The request's body is read, so that the connection stays usable.
            self.read_raw_body()
            reason, message = STATUS_OF.get(int(code), ("InternalError", "injected fault"))
            headers = {"Retry-After": str(f["retry_after"])} if "retry_after" in f else {}
            raise ApiError(int(code), reason, message, {"retryAfterSeconds": f.get("retry_after", 0)},
                           headers)

    def serve_discovery(self, path, parts):
        c = self.cluster
        if path == "/version":
            self.send_json(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-fake",
                                 "gitCommit": "fake", "gitTreeState": "clean",
                                 "buildDate": "2024-12-11T00:00:00Z", "goVersion": "go1.23.4",
                                 "compiler": "gc", "platform": "linux/amd64"})
        elif path == "/api":
            self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                 "serverAddressByClientCIDRs": [
                                     {"clientCIDR": "0.0.0.0/0",
                                      "serverAddress": "127.0.0.1:%d" % c.args.port}]})
        elif path == "/api/v1":
            self.send_json(200, discovery_resources("", "v1"))
        elif path == "/apis":
            self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups()})
        elif len(parts) == 2 and parts[0] == "apis":
            gs = [g for g in groups() if g["name"] == parts[1]]
            if not gs:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            self.send_json(200, dict(kind="APIGroup", apiVersion="v1", **gs[0]))
        elif len(parts) == 3 and parts[0] == "apis":
            if not any(g == parts[1] and v == parts[2] for (g, v, _) in RESOURCES):
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            self.send_json(200, discovery_resources(parts[1], parts[2]))
        elif path.startswith("/openapi/v3"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        elif path == "/openapi/v2":
            if "protobuf" in (self.headers.get("Accept") or ""):
                self.send_raw(200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                              self.openapi_pb)
            else:
                self.send_raw(200, "application/json", self.openapi_json)
        else:
            return False
        return True

    def parse_resource_path(self, parts):
        """Returns (group, version, namespace, plural, name, subresource)."""
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns = None
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
            ns, rest = rest[1], rest[2:]
        if not rest or (group, version, rest[0]) not in RESOURCES:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        return group, version, ns, plural, name, sub

    def serve_resource(self, method, parts, query):
        c = self.cluster
        group, version, ns, plural, name, sub = self.parse_resource_path(parts)
        kind, namespaced, _ = RESOURCES[(group, version, plural)]
        if namespaced and ns is None and name is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns_key = (ns or "") if namespaced else ""
        dry_run = query.get("dryRun") == "All"
        if plural == "selfsubjectaccessreviews" and method == "POST":
            self.send_json(201, c.review(self.read_body()))
            return
        if method == "GET" and name is None:
            if query.get("watch") in ("true", "1"):
                self.watch(plural, group, version, ns if namespaced else None, query)
                return
            items, rv = c.list(plural, ns if namespaced else None,
                               parse_label_selector(query.get("labelSelector")),
                               parse_field_selector(query.get("fieldSelector")))
            self.send_json(200, {"kind": kind + "List", "apiVersion": api_version(group, version),
                                 "metadata": {"resourceVersion": rv},
                                 "items": [public(o) for o in items]})
        elif method == "GET" and sub == "log":
            self.serve_log(ns, name, query)
        elif method == "GET":
            self.send_json(200, public(c.get(plural, group, ns_key, name)))
        elif method == "POST" and name is None:
            obj = c.create(plural, group, version, ns_key, self.read_body(), dry_run)
            self.send_json(201, public(obj))
        elif method == "DELETE" and name is not None:
            body = self.read_body()
            policy = query.get("propagationPolicy") or body.get("propagationPolicy")
            grace = query.get("gracePeriodSeconds") or body.get("gracePeriodSeconds")
            if dry_run or body.get("dryRun") == ["All"]:
                self.send_json(200, public(c.get(plural, group, ns_key, name)))
                return
            obj = c.delete(plural, group, ns_key, name, policy, grace)
            with c.lock:
                still = (plural, ns_key, name) in c.objects
            if still:
                self.send_json(202, public(obj))
            else:
                self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                     "status": "Success",
                                     "details": {"name": name, "group": group, "kind": plural,
                                                 "uid": obj["metadata"]["uid"]}})
        else:
            raise ApiError(405, "MethodNotAllowed",
                           "the fake API server does not support %s here" % method)

    def watch(self, plural, group, version, ns, query):
        """Streams ADDED/MODIFIED/DELETED events after resourceVersion (all
        current objects as ADDED when it is absent or 0), until
        timeoutSeconds."""
        c = self.cluster
        label_sel = parse_label_selector(query.get("labelSelector"))
        field_sel = parse_field_selector(query.get("fieldSelector"))
        timeout = float(query.get("timeoutSeconds") or 60)
        deadline = time.time() + min(timeout, self.server.lifetime_left())
        start_rv = int(query.get("resourceVersion") or 0)
        self.start_stream("application/json")
        with c.lock:
            if start_rv == 0:
                items, _ = c.list(plural, ns, label_sel, field_sel)
                pos = len(c.events)
            else:
                items = []
                pos = next((i for i, e in enumerate(c.events) if e[0] > start_rv), len(c.events))
        for o in items:
            self.chunk(json.dumps({"type": "ADDED", "object": public(o)}).encode() + b"\n")
        while time.time() < deadline and not self.server.stopping:
            with c.lock:
                new, pos = c.events[pos:], len(c.events)
            for _, etype, p, n, obj in new:
                if p != plural or (ns is not None and n != ns):
                    continue
                if not (label_sel(obj["metadata"].get("labels", {})) and field_sel(obj)):
                    continue
                self.chunk(json.dumps({"type": etype, "object": obj}).encode() + b"\n")
            time.sleep(0.05)
        self.end_stream()

    def serve_log(self, ns, name, query):
        c = self.cluster
        pod = c.get("pods", "", ns, name)
        with c.lock:
            proc = c.procs.get((ns, name))
        cname = pod["spec"]["containers"][0]["name"]
        if query.get("container") not in (None, "", cname):
            raise ApiError(400, "BadRequest", 'container %s is not valid for pod %s'
                           % (query.get("container"), name))
        if proc is None:
            waiting = (pod["status"].get("containerStatuses") or [{}])[0].get("state", {}).get("waiting")
            if waiting:
                msg = 'container "%s" in pod "%s" is waiting to start: trying and failing to pull image' % (cname, name)
            else:
                msg = 'container "%s" in pod "%s" is waiting to start: ContainerCreating' % (cname, name)
            raise ApiError(400, "BadRequest", msg)
        follow = query.get("follow") in ("true", "1")
        cut = c.args.log_stream_max_seconds
        cut_at = time.time() + cut if (follow and cut > 0) else None
        fault = getattr(self, "fault", None) or {}
        if fault.get("log") == "fail":
            c.faults.count("log_fail")
            raise ApiError(500, "InternalError", "Internal error occurred: injected fault: "
                           "the kubelet did not answer for the log of pod %s" % name)
        self.start_stream("text/plain")
        if fault.get("log") == "truncate":
            # Part of what is there now, cut mid-line, then the end.
            c.faults.count("log_truncate")
            with open(proc.log_path, "rb") as f:
                data = f.read()
            self.chunk(data[:len(data) // 2])
            self.end_stream()
            return
        with open(proc.log_path, "rb") as f:
            while True:
                if cut_at and time.time() > cut_at:
                    # A dropped connection, as when an API server restarts;
                    # cut mid-line on purpose.
                    data = f.read(7)
                    self.chunk(data)
                    break
                data = f.read(65536)
                if data:
                    self.chunk(data)
                    continue
                if not follow or self.server.stopping:
                    break
                if proc.popen.poll() is not None:
                    data = f.read()
                    self.chunk(data)
                    break
                with c.lock:
                    if ("pods", ns, name) not in c.objects:
                        break
                time.sleep(0.05)
        self.end_stream()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, lifetime, verbose):
        super().__init__(addr, handler)
        self.deadline = time.time() + lifetime
        self.verbose = verbose
        self.stopping = False

    def lifetime_left(self):
        return max(0.0, self.deadline - time.time())


def write_kubeconfig(path, port):
    cfg = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": "fake", "cluster": {"server": "http://127.0.0.1:%d" % port}}],
           "users": [{"name": "fake", "user": {}}],
           "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake",
                                                     "namespace": "default"}}],
           "current-context": "fake"}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cfg, f, indent=2)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig")
    ap.add_argument("--openapi", required=True, help="OpenAPI v2 document (definitions)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--work-dir", default=None, help="pod logs and default pod cwd")
    ap.add_argument("--lifetime", type=float, default=300, help="seconds before stopping")
    ap.add_argument("--deny", action="append", help="VERB:RESOURCE[/SUB] denied by can-i")
    ap.add_argument("--node-label", action="append", default=[], help="KEY=VALUE of the node")
    ap.add_argument("--node-gpus", type=int, default=0)
    ap.add_argument("--max-grace", type=float, default=5,
                    help="cap on a pod's termination grace period (seconds)")
    ap.add_argument("--log-stream-max-seconds", type=float, default=0,
                    help="end every followed log stream after this long (tests reconnects)")
    ap.add_argument("--faults", default=None, help="JSON file of faults to inject (see Faults)")
    ap.add_argument("--crd", action="append", default=[],
                    help="YAML file of CustomResourceDefinitions to serve (and ClusterTrainingRuntimes)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.work_dir is None:
        args.work_dir = os.path.dirname(os.path.abspath(args.kubeconfig))
    os.makedirs(args.work_dir, exist_ok=True)

    load_crds(args.crd)
    with open(args.openapi, "rb") as f:
        doc = json.loads(f.read())
    doc["definitions"].update(crd_definitions())
    Handler.openapi_json = json.dumps(doc).encode()
    doc.pop("paths", None)  # no paths: kubectl then validates on the client
    Handler.openapi_pb = openapi_v2_protobuf(doc)

    server = Server(("127.0.0.1", args.port), Handler, args.lifetime, args.verbose)
    args.port = server.server_address[1]
    cluster = Cluster(args)
    if args.faults:
        with open(args.faults) as f:
            cluster.faults.set(json.load(f))
    Handler.cluster = cluster
    parent = os.getppid()

    def stop(*_):
        server.stopping = True
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def controller():
        while not server.stopping:
            cluster.tick()
            if time.time() > server.deadline or os.getppid() != parent:
                server.stopping = True
            time.sleep(0.05)
        server.shutdown()

    t = threading.Thread(target=controller, daemon=True)
    t.start()
    write_kubeconfig(args.kubeconfig, args.port)
    print("fake_apiserver: listening on 127.0.0.1:%d" % args.port, flush=True)
    server.serve_forever(poll_interval=0.1)
    cluster.kill_all()
    server.server_close()


if __name__ == "__main__":
    main()
