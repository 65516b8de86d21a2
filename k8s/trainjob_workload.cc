#include "k8s/trainjob_workload.h"

#include <set>

#include <nlohmann/json.hpp>

#include "k8s/object_fields.h"
#include "k8s/render_parts.h"

namespace tune {
namespace {

using nlohmann::json;
using namespace render_internal;
using k8s_object::Str;

// What the runtime sets in every pod; a trial.env entry of these names
// would fight it, so it is left out (as for a PyTorchJob).
const std::set<std::string> kOperatorEnv = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                                            "LOCAL_RANK", "LOCAL_WORLD_SIZE", "PYTHONUNBUFFERED"};

// The pod options and mounts for the runtime's trainer node, as a
// podSpecOverrides entry; empty if there are none.
Result<json> PodSpecOverride(const KubernetesOptions& opts) {
  TUNE_ASSIGN_OR_RETURN(json mounts, ParseArray(opts.volume_mounts_json, "volume_mounts"));
  json override_spec = json::object();
  TUNE_RETURN_IF_ERROR(AddPodOptions(opts, &override_spec));
  if (!mounts.empty()) {
    override_spec["containers"] = json::array({{{"name", kTrainerContainer}, {"volumeMounts", mounts}}});
  }
  if (!override_spec.empty()) override_spec["targetJobs"] = json::array({{{"name", kTrainerReplicatedJob}}});
  return override_spec;
}

}  // namespace

Result<std::string> TrainJobWorkload::Render(const KubernetesOptions& opts, const LaunchSpec& spec,
                                             const std::string& object_name) const {
  TUNE_RETURN_IF_ERROR(CheckCommon(opts, spec, object_name));
  if (opts.runtime_ref.empty()) {
    return Status::InvalidArgument("backend.runtime_ref: expected the name of a ClusterTrainingRuntime");
  }
  TUNE_ASSIGN_OR_RETURN(json override_spec, PodSpecOverride(opts));
  json labels = Labels(opts, spec);
  json annotations = Annotations(opts, spec);
  json trainer = {{"image", opts.image}, {"command", Command(spec)}, {"numNodes", spec.workers}};
  json env = TrialEnv(spec, kOperatorEnv, "PET_");
  if (!env.empty()) trainer["env"] = env;
  json resources = Resources(spec);
  if (!resources.empty()) trainer["resourcesPerNode"] = resources;
  json job_spec = {{"runtimeRef",
                    {{"name", opts.runtime_ref},
                     {"apiGroup", "trainer.kubeflow.org"},
                     {"kind", "ClusterTrainingRuntime"}}},
                   {"labels", labels},
                   {"annotations", annotations},
                   {"trainer", trainer}};
  if (!override_spec.empty()) job_spec["podSpecOverrides"] = json::array({override_spec});
  json job = {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
              {"kind", "TrainJob"},
              {"metadata", {{"name", object_name}, {"labels", labels}, {"annotations", annotations}}},
              {"spec", job_spec}};
  return ListText(json::array({job}));
}

// Kubeflow Trainer (kubeflow/trainer, pkg/controller/trainjob_controller.go
// and pkg/runtime/framework/plugins/jobset/jobset.go at the commit of the
// CRD in tests/k8s/crds) ends a TrainJob with its JobSet's Completed or
// Failed condition, renamed Complete or Failed, reason and message as the
// JobSet set them (AllJobsCompleted; FailedJobs, ReachedMaxRestarts). It
// sets Created False, reason JobsBuildFailed, when it cannot build the
// JobSet (the runtime it names does not exist, ...): no pod ever comes,
// so that ends the attempt too. (JobsCreationFailed is retried by the
// controller and is not an end.)
std::optional<WorkloadEnd> TrainJobWorkload::Ended(const json& obj) const {
  if (auto end = EndedByCondition(obj, "Complete", "Failed")) return end;
  const json& conditions = k8s_object::Path(obj, {"status", "conditions"});
  if (!conditions.is_array()) return std::nullopt;
  for (const json& c : conditions) {
    if (Str(c, "type") == "Created" && Str(c, "status") == "False" && Str(c, "reason") == "JobsBuildFailed") {
      const std::string runtime = Str(k8s_object::Path(obj, {"spec", "runtimeRef"}), "name");
      return WorkloadEnd{false, "JobsBuildFailed",
                         Str(c, "message") + " (from the ClusterTrainingRuntime \"" + runtime +
                             "\" that backend.runtime_ref names: does it exist?)"};
    }
  }
  return std::nullopt;
}

std::string TrainJobWorkload::OwnerOf(const json& pod) const {
  return Str(k8s_object::LabelsOf(pod), "jobset.sigs.k8s.io/jobset-name");
}

std::string TrainJobWorkload::RankOf(const json& pod) const {
  const json& l = k8s_object::LabelsOf(pod);
  if (Str(l, "jobset.sigs.k8s.io/job-index") != "0") return "";
  return Str(l, "batch.kubernetes.io/job-completion-index");
}

}  // namespace tune
