"""The Kubeflow operators, as fake_apiserver.py plays them (stdlib only).

For PyTorchJobs (kubeflow.org/v1) it does what the training operator v1.9
does: one pod per replica, named <job>-master-0 and <job>-worker-<i>, with
the replica template's labels plus training.kubeflow.org/job-name,
replica-type (master, worker), replica-index and job-role (master), and a
Service of the same name per pod; into every container it appends
PYTHONUNBUFFERED, MASTER_ADDR and PET_MASTER_ADDR (<job>-master-0),
MASTER_PORT and PET_MASTER_PORT (the Master's port named pytorchjob-port),
WORLD_SIZE (the replicas), RANK and PET_NODE_RANK (master 0, worker i+1)
and PET_NNODES. Status: conditions Created, Running, Succeeded (the Master
succeeded), Restarting and Failed with the operator's reasons and
messages, replicaStatuses.<Type>.{active,succeeded,failed}. A replica that
fails: with backoffLimit 0 the job fails at once (every pod and Service
deleted); else restartPolicy Never fails the job, ExitCode deletes the pod
if it was killed by a signal (exit code >= 128) and makes it again under
the same name (new uid), other codes fail the job. activeDeadlineSeconds
fails it and deletes every pod and Service. Once the job has ended,
runPolicy.cleanPodPolicy applies (All: every pod and its Service deleted;
Running: the Pending and Running ones; None, the default: none), then
ttlSecondsAfterFinished.

For TrainJobs (trainer.kubeflow.org/v1alpha1) it plays Trainer v2 with
the JobSet it would create: the ClusterTrainingRuntime named by runtimeRef
(loaded with --crd) gives the pod template of its first replicated job;
trainer.image, command, args, env, numNodes and resourcesPerNode and the
podSpecOverrides fill it in. Pods are <trainjob>-<replicated job>-0-<i>-<suffix>
with the JobSet's labels (jobset.sigs.k8s.io/jobset-name, replicatedjob-name,
job-index) and batch.kubernetes.io/job-completion-index; the torch plugin's
PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and
PET_MASTER_PORT are set. Status: conditions Created (False
JobsBuildFailed if the runtime does not exist), then Complete (every node
succeeded) or Failed (a node failed) with the JobSet's reasons and
messages, as Trainer copies them, and jobsStatus. A failed pod fails the
TrainJob at once: the JobSet's Job restarts (restartPolicy OnFailure,
backoffLimit 6 by default) are not played.

Both honour deletion (foreground: the pods first) through the Cluster. The
DNS names of the operators' Services are this machine (127.0.0.1), and the
master port a free port per job, as for Jobs.
"""
import copy
import random
import time

PYTORCH_PORT_NAME = "pytorchjob-port"
PYTORCH_DEFAULT_PORT = 23456


def _now():
    import datetime
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rand_suffix():
    return "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def _cond(ctype, reason, message, status="True"):
    t = _now()
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastUpdateTime": t, "lastTransitionTime": t}


class Operators:
    """Controllers for the custom resources; `cluster` is fake_apiserver's
    Cluster (its lock is held by every caller)."""

    KINDS = ("pytorchjobs", "trainjobs")

    def __init__(self, cluster, runtimes):
        self.cluster = cluster
        self.runtimes = runtimes  # ClusterTrainingRuntime name -> object

    # -- shared -----------------------------------------------------------------
    def owned(self, obj, plural=None):
        uid = obj["metadata"]["uid"]
        return [o for (p, n, _), o in self.cluster.objects.items()
                if (plural is None or p == plural) and n == obj["metadata"].get("namespace")
                and any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences", []))]

    def on_create(self, plural, obj):
        obj["_start"] = time.time()
        if plural == "pytorchjobs":
            name = obj["metadata"]["name"]
            obj["status"] = {"conditions": [_cond("Created", "PyTorchJobCreated",
                                                  "PyTorchJob %s is created." % name)],
                             "replicaStatuses": {}, "startTime": _now()}
        else:
            obj["status"] = {"conditions": [], "jobsStatus": []}

    def delete_owned(self, obj, grace):
        """Deletes the pods (gracefully) and Services of `obj`; returns the
        pods still there."""
        for svc in self.owned(obj, "services"):
            self.cluster._remove(("services", svc["metadata"]["namespace"], svc["metadata"]["name"]))
        pods = self.owned(obj, "pods")
        for p in pods:
            if not p["metadata"].get("deletionTimestamp"):
                self.cluster._delete_pod(p, grace)
        return [p for p in self.owned(obj, "pods")]

    def sync(self, plural, obj):
        """One reconcile; True if the object changed."""
        md = obj["metadata"]
        if md.get("deletionTimestamp"):
            if not self.delete_owned(obj, None):
                self.cluster._remove((plural, md["namespace"], md["name"]))
            return True
        old = repr(obj.get("status"))
        if plural == "pytorchjobs":
            self._sync_pytorchjob(obj)
        else:
            self._sync_trainjob(obj)
        if repr(obj.get("status")) != old:
            self.cluster._touch(obj)
            return True
        return False

    def _finished(self, obj, final_types):
        return any(c["type"] in final_types and c["status"] == "True"
                   for c in obj["status"].get("conditions", []))

    def _ttl(self, plural, obj, ttl):
        if ttl is not None and time.time() - obj["_finished"] >= ttl:
            md = obj["metadata"]
            self.cluster.delete(plural, "", md["namespace"], md["name"], "Background", None)

    def _new_pod(self, owner, api_version, kind, name, template, labels):
        md = template.get("metadata", {})
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name,
                            "labels": dict(md.get("labels", {}), **labels),
                            "annotations": dict(md.get("annotations", {})),
                            "ownerReferences": [{"apiVersion": api_version, "kind": kind,
                                                 "name": owner["metadata"]["name"],
                                                 "uid": owner["metadata"]["uid"],
                                                 "controller": True, "blockOwnerDeletion": True}]},
               "spec": copy.deepcopy(template.get("spec", {})),
               "status": {"phase": "Pending", "conditions": []}}
        pod["spec"].setdefault("terminationGracePeriodSeconds", 30)
        pod["spec"].setdefault("serviceAccountName", "default")
        return pod

    def _run(self, pod, owner):
        ns = owner["metadata"]["namespace"]
        self.cluster._store("pods", ns, pod)
        self.cluster._schedule(pod, owner)

    @staticmethod
    def _counts(pods):
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        return {"active": sum(1 for p in live if p["status"]["phase"] in ("Pending", "Running")),
                "succeeded": sum(1 for p in pods if p["status"]["phase"] == "Succeeded"),
                "failed": sum(1 for p in pods if p["status"]["phase"] == "Failed")}

    # -- PyTorchJob -------------------------------------------------------------
    # As training-operator v1.9.0 reconciles (pkg/controller.v1/common/job.go
    # ReconcileJobs, common/pod.go ReconcilePods, pytorch/pytorchjob_controller.go
    # UpdateJobStatus): its work queue is a FakeWorkQueue whose NumRequeues is
    # always 0, so backoffLimit 0 fails the job on the first new replica
    # failure and a larger one never counts pod replacements.
    def _set_cond(self, st, ctype, reason, message):
        conds = st["conditions"]
        for c in conds:
            if c["type"] == ctype:
                if c["status"] != "True" or c["reason"] != reason:
                    c.update(status="True", reason=reason, message=message, lastTransitionTime=_now())
                c["lastUpdateTime"] = _now()
                break
        else:
            conds.append(_cond(ctype, reason, message))
        # Running and Restarting exclude each other; an end ends Running.
        other = {"Running": ("Restarting",), "Restarting": ("Running",),
                 "Succeeded": ("Running", "Restarting"), "Failed": ("Running", "Restarting")}
        for c in conds:
            if c["type"] in other.get(ctype, ()) and c["status"] == "True":
                c.update(status="False", lastTransitionTime=_now())

    def _delete_pods_and_services(self, job, pods, only_active=False):
        ns = job["metadata"]["namespace"]
        for p in pods:
            if only_active and p["status"]["phase"] not in ("Pending", "Running"):
                continue
            if not p["metadata"].get("deletionTimestamp"):
                self.cluster._delete_pod(p, None)
            self.cluster._remove(("services", ns, p["metadata"]["name"]))

    @staticmethod
    def _exit_code(pod):
        for cs in pod["status"].get("containerStatuses", []):
            t = cs.get("state", {}).get("terminated")
            if t:
                return int(t.get("exitCode", 0))
        return 0xbeef  # the operator's "no exit code" value

    def _sync_pytorchjob(self, job):
        md, spec, st = job["metadata"], job["spec"], job["status"]
        name, ns = md["name"], md["namespace"]
        run_policy = spec.get("runPolicy", {})
        replicas = spec["pytorchReplicaSpecs"]
        pods = self.owned(job, "pods")
        if self._finished(job, ("Succeeded", "Failed")):
            # cleanPodPolicy once the job has ended: All deletes every pod
            # and its Service, Running the Pending and Running ones, None
            # (the operator's default for PyTorchJobs) nothing.
            policy = run_policy.get("cleanPodPolicy", "None")
            if policy in ("All", "Running"):
                self._delete_pods_and_services(job, pods, only_active=policy == "Running")
            self._ttl("pytorchjobs", job, run_policy.get("ttlSecondsAfterFinished"))
            return
        total = sum(int(r.get("replicas", 1)) for r in replicas.values())
        # Every replica slot without a pod gets one (at first all; after a
        # restart, the one whose failed pod was deleted: same name, new uid).
        self._create_pytorch_pods(job, replicas, total, {p["metadata"]["name"] for p in pods})
        pods = self.owned(job, "pods")
        by_type = {}
        for p in pods:
            by_type.setdefault(p["metadata"]["labels"]["training.kubeflow.org/replica-type"], []).append(p)
        prev_failed = sum(int(c.get("failed", 0)) for c in st.get("replicaStatuses", {}).values())
        st["replicaStatuses"] = {
            rtype: dict(self._counts(by_type.get(rtype.lower(), [])),
                        selector="training.kubeflow.org/job-name=%s,training.kubeflow.org/operator-name="
                                 "pytorchjob-controller,training.kubeflow.org/replica-type=%s"
                                 % (name, rtype.lower()))
            for rtype in replicas}
        st["lastReconcileTime"] = _now()
        counts = self._counts(pods)
        backoff = run_policy.get("backoffLimit")
        ads = run_policy.get("activeDeadlineSeconds")
        limit_msg = None
        if backoff is not None and counts["failed"] > prev_failed and counts["active"] != total and 1 > backoff:
            limit_msg = "Job %s has failed because it has reached the specified backoff limit" % name
        elif ads is not None and time.time() - job["_start"] > ads:
            limit_msg = "Job %s has failed because it was active longer than specified deadline" % name
        if limit_msg:
            # Past a limit the job is not yet finished, so cleanPodPolicy does
            # not apply: every pod and Service goes.
            self._delete_pods_and_services(job, pods)
            self._end(job, "Failed", "PyTorchJobFailed", limit_msg)
            return
        # ReconcilePods: a failed pod whose restartPolicy allows it is deleted
        # (and made again on the next pass); ExitCode retries only exit codes
        # >= 128 (killed by a signal), other codes fail the job.
        for rtype, r in replicas.items():
            policy = r.get("restartPolicy", "Never")
            for p in by_type.get(rtype.lower(), []):
                if p["status"]["phase"] != "Failed" or p["metadata"].get("deletionTimestamp"):
                    continue
                code = self._exit_code(p)
                if policy in ("OnFailure", "Always") or (policy == "ExitCode" and code >= 128):
                    self.cluster._delete_pod(p, None)
                    job["_restarts"] = job.get("_restarts", 0) + 1
                    self._set_cond(st, "Restarting", "PyTorchJobRestarting",
                                   "job %s is restarting because %s replica(s) failed." % (name, rtype))
                elif policy == "ExitCode":
                    self._end(job, "Failed", "PyTorchJobFailed",
                              'job "%s" is failing because "%s" replica(s) failed.' % (name, rtype))
                    return
        # UpdateJobStatus (with a Master: the job ends with it).
        for rtype, r in replicas.items():
            c = st["replicaStatuses"][rtype]
            if rtype == "Master":
                if c["active"] and all(p["status"]["phase"] == "Running" for p in by_type.get("master", [])):
                    self._set_cond(st, "Running", "PyTorchJobRunning", "PyTorchJob %s is running." % name)
                if int(r.get("replicas", 1)) - c["succeeded"] == 0:
                    self._end(job, "Succeeded", "PyTorchJobSucceeded",
                              "PyTorchJob %s is successfully completed." % name)
                    return
            if c["failed"] and int(r.get("replicas", 1)) > c["succeeded"] + c["active"]:
                if r.get("restartPolicy", "Never") != "Never":
                    self._set_cond(st, "Restarting", "PyTorchJobRestarting",
                                   "PyTorchJob %s is restarting because %d %s replica(s) failed."
                                   % (name, c["failed"], rtype))
                else:
                    self._end(job, "Failed", "PyTorchJobFailed",
                              "PyTorchJob %s is failed because %d %s replica(s) failed." % (name, c["failed"], rtype))
                    return

    def _end(self, job, ctype, reason, message):
        st = job["status"]
        st.setdefault("completionTime", _now())
        self._set_cond(st, ctype, reason, message)
        job["_finished"] = time.time()

    def _create_pytorch_pods(self, job, replicas, total, existing):
        name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
        master_spec = replicas.get("Master", {}).get("template", {}).get("spec", {})
        port = PYTORCH_DEFAULT_PORT
        for c in master_spec.get("containers", []):
            for p in c.get("ports", []):
                if p.get("name") == PYTORCH_PORT_NAME:
                    port = p["containerPort"]
        master_addr = "%s-master-0" % name
        for rtype in ("Master", "Worker"):
            r = replicas.get(rtype)
            if r is None:
                continue
            for i in range(int(r.get("replicas", 1))):
                pod_name = "%s-%s-%d" % (name, rtype.lower(), i)
                if pod_name in existing:
                    continue
                rank = i if rtype == "Master" else i + 1
                labels = {"training.kubeflow.org/job-name": name,
                          "training.kubeflow.org/operator-name": "pytorchjob-controller",
                          "training.kubeflow.org/replica-type": rtype.lower(),
                          "training.kubeflow.org/replica-index": str(i)}
                if rtype == "Master":
                    labels["training.kubeflow.org/job-role"] = "master"
                pod = self._new_pod(job, "kubeflow.org/v1", "PyTorchJob", pod_name, r.get("template", {}), labels)
                # ExitCode is the operator's: the pod itself never restarts.
                policy = r.get("restartPolicy", "Never")
                pod["spec"]["restartPolicy"] = "Never" if policy == "ExitCode" else policy
                pod["spec"]["hostname"] = pod_name
                env = [("PYTHONUNBUFFERED", "1"), ("MASTER_PORT", str(port)), ("PET_MASTER_PORT", str(port)),
                       ("MASTER_ADDR", master_addr), ("PET_MASTER_ADDR", master_addr),
                       ("WORLD_SIZE", str(total)), ("RANK", str(rank)), ("PET_NODE_RANK", str(rank)),
                       ("PET_NNODES", str(total))]
                for c in pod["spec"].get("containers", []):
                    c.setdefault("env", []).extend({"name": k, "value": v} for k, v in env)
                # The operator's Service per pod, selecting it by its labels
                # (kept when the pod is made again).
                if ("services", ns, pod_name) not in self.cluster.objects:
                    self.cluster._store("services", ns, {
                        "apiVersion": "v1", "kind": "Service",
                        "metadata": {"name": pod_name, "labels": dict(labels),
                                     "ownerReferences": copy.deepcopy(pod["metadata"]["ownerReferences"])},
                        "spec": {"clusterIP": "None", "selector": dict(labels),
                                 "ports": [{"name": PYTORCH_PORT_NAME, "port": port, "targetPort": port}]},
                        "status": {"loadBalancer": {}}})
                self._run(pod, job)

    # -- TrainJob ---------------------------------------------------------------
    # Conditions as Trainer sets them at the commit the CRD is from (kubeflow/
    # trainer ea42d1188, before v2.0.0): pkg/controller/trainjob_controller.go
    # sets Created (True JobsCreationSucceeded "Succeeded to create Jobs";
    # False JobsBuildFailed "Failed to build Jobs" when the objects cannot be
    # built, e.g. the runtime does not exist); pkg/runtime/framework/plugins/
    # jobset/jobset.go TerminalCondition copies the JobSet's Completed or
    # Failed condition as Complete or Failed, reason and message unchanged:
    # JobSet v0.5.2's (pkg/constants/constants.go) AllJobsCompleted "jobset
    # completed successfully", FailedJobs "jobset failed due to one or more
    # job failures (first failed job: <job>)". They are metav1.Conditions
    # (no lastUpdateTime).
    @staticmethod
    def _tj_cond(ctype, reason, message, status="True"):
        c = _cond(ctype, reason, message, status)
        del c["lastUpdateTime"]
        return c

    def _sync_trainjob(self, tj):
        md, spec, st = tj["metadata"], tj["spec"], tj["status"]
        name, ns = md["name"], md["namespace"]
        if self._finished(tj, ("Complete", "Failed")):
            return
        runtime = self.runtimes.get(spec["runtimeRef"]["name"])
        conds = st["conditions"]
        if runtime is None:
            if not conds:
                conds.append(self._tj_cond("Created", "JobsBuildFailed", "Failed to build Jobs", status="False"))
            return
        rjob = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
        trainer = spec.get("trainer", {})
        nodes = int(trainer.get("numNodes", runtime["spec"].get("mlPolicy", {}).get("numNodes", 1)))
        pods = self.owned(tj, "pods")
        if not pods and not conds:
            self._create_trainjob_pods(tj, runtime, rjob, trainer, nodes)
            conds.append(self._tj_cond("Created", "JobsCreationSucceeded", "Succeeded to create Jobs"))
            pods = self.owned(tj, "pods")
        counts = self._counts(pods)
        st["jobsStatus"] = [{"name": rjob["name"], "active": 1 if counts["active"] else 0,
                             "ready": 1 if counts["active"] else 0,
                             "succeeded": 1 if counts["succeeded"] == nodes else 0,
                             "failed": 1 if counts["failed"] else 0, "suspended": 0}]
        if counts["failed"]:
            conds.append(self._tj_cond("Failed", "FailedJobs",
                                       "jobset failed due to one or more job failures (first failed job: %s-%s-0)"
                                       % (name, rjob["name"])))
        elif counts["succeeded"] == nodes:
            conds.append(self._tj_cond("Complete", "AllJobsCompleted", "jobset completed successfully"))
        else:
            return
        tj["_finished"] = time.time()
        for p in pods:  # the JobSet's Jobs stop their other pods
            if p["status"]["phase"] in ("Pending", "Running"):
                self.cluster._delete_pod(p, None)

    def _create_trainjob_pods(self, tj, runtime, rjob, trainer, nodes):
        name = tj["metadata"]["name"]
        template = copy.deepcopy(rjob["template"]["spec"]["template"])
        pod_spec = template.setdefault("spec", {})
        container = pod_spec["containers"][0]
        for key in ("image", "command", "args"):
            if key in trainer:
                container[key] = copy.deepcopy(trainer[key])
        if "resourcesPerNode" in trainer:
            container["resources"] = copy.deepcopy(trainer["resourcesPerNode"])
        container.setdefault("env", []).extend(copy.deepcopy(trainer.get("env", [])))
        for ov in tj["spec"].get("podSpecOverrides", []):
            if not any(t.get("name") == rjob["name"] for t in ov.get("targetJobs", [])):
                continue
            for key in ("serviceAccountName", "nodeSelector", "tolerations"):
                if key in ov:
                    pod_spec[key] = copy.deepcopy(ov[key])
            pod_spec.setdefault("volumes", []).extend(copy.deepcopy(ov.get("volumes", [])))
            for oc in ov.get("containers", []):
                for c in pod_spec["containers"]:
                    if c["name"] == oc.get("name"):
                        c.setdefault("volumeMounts", []).extend(copy.deepcopy(oc.get("volumeMounts", [])))
                        c.setdefault("env", []).extend(copy.deepcopy(oc.get("env", [])))
        pod_spec["restartPolicy"] = pod_spec.get("restartPolicy", "OnFailure")
        nproc = str(runtime["spec"].get("mlPolicy", {}).get("torch", {}).get("numProcPerNode", "auto"))
        job_name = "%s-%s-0" % (name, rjob["name"])
        for i in range(nodes):
            labels = {"jobset.sigs.k8s.io/jobset-name": name,
                      "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                      "jobset.sigs.k8s.io/job-index": "0",
                      "batch.kubernetes.io/job-name": job_name, "job-name": job_name,
                      "batch.kubernetes.io/job-completion-index": str(i)}
            pod = self._new_pod(tj, "trainer.kubeflow.org/v1alpha1", "TrainJob",
                                "%s-%d-%s" % (job_name, i, _rand_suffix()), template, labels)
            pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] = str(i)
            pod["spec"]["hostname"] = "%s-%d" % (job_name, i)
            pod["spec"]["subdomain"] = name
            env = [("PET_NNODES", str(nodes)), ("PET_NPROC_PER_NODE", nproc), ("PET_NODE_RANK", str(i)),
                   ("PET_MASTER_ADDR", "%s-0.%s" % (job_name, name)), ("PET_MASTER_PORT", "29400")]
            for c in pod["spec"]["containers"]:
                c.setdefault("env", []).extend({"name": k, "value": v} for k, v in env)
            self._run(pod, tj)
