// What the cluster says about one trial attempt: its workload object and
// its pods as one `kubectl get -o json` listed them, read through the
// attempt's Workload (k8s/workload.h). The Kubernetes backend's poller
// (k8s/kubernetes_backend.h, "State") decides with these. Internal to
// tune_k8s; pure functions, thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/workload.h"
#include "trial_runner/trial_backend.h"

namespace tune {

// The workloads and pods of one listing, by workload name (a pod under the
// workload Workload::OwnerOf names). Pointers into the listed JSON.
struct ClusterView {
  std::map<std::string, const nlohmann::json*> workloads;
  std::map<std::string, std::vector<const nlohmann::json*>> pods;
};

// Indexes the items of `lists` (each a JSON List, or null). Throws on an
// item without metadata (k8s/object_fields.h, Metadata).
ClusterView IndexObjects(const Workload& w, const std::vector<const nlohmann::json*>& lists);

// How an attempt that was still running ended, as far as the cluster says.
struct AttemptEnd {
  RunState state = RunState::kFailed;
  std::string message;
  bool delete_now = false;  // its pods must be stopped now (trial.timeout_s)
};

// The end of the attempt whose workload is `object` (nullptr: not listed,
// so deleted) named `name`: deleted, ended by its conditions (a failure
// names the failed pods, PodFailures), or past `timeout_s` after
// `running_s` seconds for a kind whose deadline the backend enforces.
// nullopt while it runs.
std::optional<AttemptEnd> EndOf(const Workload& w, const std::string& name, const nlohmann::json* object,
                                const std::vector<const nlohmann::json*>& pods, double running_s,
                                double timeout_s);

// "pod <name> <reason>" of the first pending pod that is not being deleted
// (the scheduler's or the kubelet's reason), "" if none.
std::string PendingPod(const std::vector<const nlohmann::json*>& pods);
// A pod that is not being deleted runs.
bool AnyPodRunning(const std::vector<const nlohmann::json*>& pods);

// "rank 1 (pod x) exited with code 3 (Error): \"its last log line\"" for
// each failed pod, joined by "; ".
std::string PodFailures(const Workload& w, const std::vector<const nlohmann::json*>& pods);

// The pod that speaks for the attempt: of the rank-0 pods whose container
// started, the one that succeeded, else the newest that is alive (not
// failed, not being deleted), else the newest. nullptr if none.
const nlohmann::json* RankZeroPod(const Workload& w, const std::vector<const nlohmann::json*>& pods);

// What a pod's log belongs to: "<uid>/<restart count of its container>" (a
// pod made again under its name has another uid; a container restarted in
// place, another count). The same text as kubectl's jsonpath
// {.metadata.uid}/{.status.containerStatuses[0].restartCount}.
std::string PodIdentity(const nlohmann::json& pod);

}  // namespace tune
