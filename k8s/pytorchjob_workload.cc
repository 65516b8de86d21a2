#include "k8s/pytorchjob_workload.h"

#include <cmath>
#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "k8s/object_fields.h"
#include "k8s/render_parts.h"

namespace tune {
namespace {

using nlohmann::json;
using namespace render_internal;

// What the training operator sets in every pod (its envvar.go); a trial.env
// entry of these names would fight it, so it is left out.
const std::set<std::string> kOperatorEnv = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                                            "LOCAL_RANK", "LOCAL_WORLD_SIZE", "PYTHONUNBUFFERED"};

// One replica spec (Master or Worker) of `replicas` pods.
Result<json> ReplicaSpec(const KubernetesOptions& opts, const LaunchSpec& spec, const json& env, const json& mounts,
                         bool master, int replicas) {
  json container = Container(opts, spec, kPyTorchContainer, env, mounts);
  // The operator reads MASTER_PORT from the Master's port of this name.
  if (master) {
    container["ports"] = json::array({{{"name", kPyTorchPortName}, {"containerPort", kPyTorchPort}}});
  }
  json pod_spec = {{"containers", json::array({container})},
                   // SIGTERM to SIGKILL when tune deletes the job (trial.stop_grace_s).
                   {"terminationGracePeriodSeconds", static_cast<int64_t>(std::ceil(spec.stop_grace_s))}};
  TUNE_RETURN_IF_ERROR(AddPodOptions(opts, &pod_spec));
  // With backend.backoff_limit > 0 the operator may replace a pod: under
  // ExitCode it makes a pod that was killed by a signal (exit code >= 128:
  // OOM kill, eviction, preemption) again under the same name, and fails
  // the job when the program itself exits non-zero (tune retries that as
  // a failed attempt). Never: every replica failure fails the job.
  json metadata = {{"labels", Labels(opts, spec)}, {"annotations", Annotations(opts, spec)}};
  return json{{"replicas", replicas},
              {"restartPolicy", opts.backoff_limit > 0 ? "ExitCode" : "Never"},
              {"template", {{"metadata", metadata}, {"spec", pod_spec}}}};
}

}  // namespace

Result<std::string> PyTorchJobWorkload::Render(const KubernetesOptions& opts, const LaunchSpec& spec,
                                               const std::string& object_name) const {
  TUNE_RETURN_IF_ERROR(CheckCommon(opts, spec, object_name));
  TUNE_ASSIGN_OR_RETURN(json mounts, ParseArray(opts.volume_mounts_json, "volume_mounts"));
  json env = TrialEnv(spec, kOperatorEnv, "PET_");
  // One process per pod, as for Jobs (the operator sets no LOCAL_*).
  env.push_back(EnvVar("LOCAL_RANK", "0"));
  env.push_back(EnvVar("LOCAL_WORLD_SIZE", "1"));
  json replicas = json::object();
  TUNE_ASSIGN_OR_RETURN(replicas["Master"], ReplicaSpec(opts, spec, env, mounts, /*master=*/true, 1));
  if (spec.workers > 1) {
    TUNE_ASSIGN_OR_RETURN(replicas["Worker"], ReplicaSpec(opts, spec, env, mounts, false, spec.workers - 1));
  }
  // cleanPodPolicy None: the operator keeps the pods when the job ends, so
  // rank 0's log can be read to its end however short the trial was; tune
  // deletes the PyTorchJob (foreground) once it has read it. With All the
  // operator would delete them the moment the Master succeeds, and a trial
  // that ended between two polls would leave no log. ttlSecondsAfterFinished
  // stays the backstop for a tune that died.
  json run_policy = {{"backoffLimit", opts.backoff_limit}, {"cleanPodPolicy", "None"}};
  if (spec.timeout_s > 0) {
    run_policy["activeDeadlineSeconds"] = static_cast<int64_t>(std::ceil(spec.timeout_s));
  }
  if (opts.ttl_seconds_after_finished) run_policy["ttlSecondsAfterFinished"] = *opts.ttl_seconds_after_finished;
  json metadata = {{"name", object_name}, {"labels", Labels(opts, spec)}, {"annotations", Annotations(opts, spec)}};
  json job = {{"apiVersion", "kubeflow.org/v1"},
              {"kind", "PyTorchJob"},
              {"metadata", metadata},
              {"spec", {{"runPolicy", run_policy}, {"pytorchReplicaSpecs", replicas}}}};
  return ListText(json::array({job}));
}

std::optional<WorkloadEnd> PyTorchJobWorkload::Ended(const json& obj) const {
  return EndedByCondition(obj, "Succeeded", "Failed");
}

std::string PyTorchJobWorkload::OwnerOf(const json& pod) const {
  return k8s_object::Str(k8s_object::LabelsOf(pod), "training.kubeflow.org/job-name");
}

std::string PyTorchJobWorkload::RankOf(const json& pod) const {
  // The operator's RANK: the master is 0, worker i is i + 1.
  const json& l = k8s_object::LabelsOf(pod);
  std::string type = k8s_object::Str(l, "training.kubeflow.org/replica-type");
  std::string index = k8s_object::Str(l, "training.kubeflow.org/replica-index");
  if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos || index.size() > 6) return "";
  if (type == "master") return index;
  if (type == "worker") return std::to_string(std::stoi(index) + 1);
  return "";
}

}  // namespace tune
