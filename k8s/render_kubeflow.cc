#include "k8s/render_kubeflow.h"

#include <cmath>
#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "k8s/render.h"
#include "k8s/render_parts.h"

namespace tune {
namespace {

using nlohmann::json;
using namespace render_internal;

// What the training operator sets in every pod (its envvar.go); a trial.env
// entry of these names would fight it, so it is left out.
const std::set<std::string> kOperatorEnv = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                                            "LOCAL_RANK", "LOCAL_WORLD_SIZE", "PYTHONUNBUFFERED"};

json List(json item) {
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array({std::move(item)})}};
}

}  // namespace

Result<std::string> RenderPyTorchJob(const KubernetesOptions& opts, const LaunchSpec& spec,
                                     const std::string& object_name) {
  TUNE_RETURN_IF_ERROR(CheckCommon(opts, spec, object_name));
  TUNE_ASSIGN_OR_RETURN(json mounts, ParseArray(opts.volume_mounts_json, "volume_mounts"));
  json labels = Labels(opts, spec);
  json annotations = Annotations(opts, spec);

  json env = TrialEnv(spec, kOperatorEnv, "PET_");
  // One process per pod, as for Jobs (the operator sets no LOCAL_*).
  env.push_back(EnvVar("LOCAL_RANK", "0"));
  env.push_back(EnvVar("LOCAL_WORLD_SIZE", "1"));

  auto replica = [&](bool master, int replicas) {
    json container = {{"name", kPyTorchContainer},
                      {"image", opts.image},
                      {"command", Command(spec)},
                      {"env", env},
                      {"resources", Resources(spec)},
                      {"terminationMessagePolicy", "FallbackToLogsOnError"}};
    // The operator reads MASTER_PORT from the Master's port of this name.
    if (master) {
      container["ports"] = json::array({{{"name", kPyTorchPortName}, {"containerPort", kPyTorchPort}}});
    }
    if (!opts.image_pull_policy.empty()) container["imagePullPolicy"] = opts.image_pull_policy;
    if (!spec.working_dir.empty()) container["workingDir"] = spec.working_dir;
    if (!mounts.empty()) container["volumeMounts"] = mounts;
    json pod_spec = {{"containers", json::array({container})}};
    // With backend.backoff_limit > 0 the operator may replace a pod: under
    // ExitCode it makes a pod that was killed by a signal (exit code >= 128:
    // OOM kill, eviction, preemption) again under the same name, and fails
    // the job when the program itself exits non-zero (tune retries that as
    // a failed attempt). Never: every replica failure fails the job.
    return std::make_pair(pod_spec, json{{"replicas", replicas},
                                         {"restartPolicy", opts.backoff_limit > 0 ? "ExitCode" : "Never"},
                                         {"template", {{"metadata", {{"labels", labels}, {"annotations", annotations}}}}}});
  };
  json replicas = json::object();
  for (bool master : {true, false}) {
    int n = master ? 1 : spec.workers - 1;
    if (n == 0) continue;
    auto [pod_spec, r] = replica(master, n);
    TUNE_RETURN_IF_ERROR(AddPodOptions(opts, &pod_spec));
    r["template"]["spec"] = pod_spec;
    replicas[master ? "Master" : "Worker"] = r;
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
  json job = {{"apiVersion", "kubeflow.org/v1"},
              {"kind", "PyTorchJob"},
              {"metadata", {{"name", object_name}, {"labels", labels}, {"annotations", annotations}}},
              {"spec", {{"runPolicy", run_policy}, {"pytorchReplicaSpecs", replicas}}}};
  return DumpJson(List(job), 2);
}

Result<std::string> RenderTrainJob(const KubernetesOptions& opts, const LaunchSpec& spec,
                                   const std::string& object_name) {
  TUNE_RETURN_IF_ERROR(CheckCommon(opts, spec, object_name));
  if (opts.runtime_ref.empty()) {
    return Status::InvalidArgument("backend.runtime_ref: expected the name of a ClusterTrainingRuntime");
  }
  TUNE_ASSIGN_OR_RETURN(json mounts, ParseArray(opts.volume_mounts_json, "volume_mounts"));
  json labels = Labels(opts, spec);
  json annotations = Annotations(opts, spec);

  json trainer = {{"image", opts.image},
                  {"command", Command(spec)},
                  {"numNodes", spec.workers}};
  json env = TrialEnv(spec, kOperatorEnv, "PET_");
  if (!env.empty()) trainer["env"] = env;
  json resources = Resources(spec);
  if (!resources.empty()) trainer["resourcesPerNode"] = resources;

  json override_spec = json::object();
  TUNE_RETURN_IF_ERROR(AddPodOptions(opts, &override_spec));
  if (!mounts.empty()) {
    override_spec["containers"] = json::array({{{"name", kTrainerContainer}, {"volumeMounts", mounts}}});
  }
  json job_spec = {{"runtimeRef",
                    {{"name", opts.runtime_ref},
                     {"apiGroup", "trainer.kubeflow.org"},
                     {"kind", "ClusterTrainingRuntime"}}},
                   {"labels", labels},
                   {"annotations", annotations},
                   {"trainer", trainer}};
  if (!override_spec.empty()) {
    override_spec["targetJobs"] = json::array({{{"name", kTrainerReplicatedJob}}});
    job_spec["podSpecOverrides"] = json::array({override_spec});
  }
  json job = {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
              {"kind", "TrainJob"},
              {"metadata", {{"name", object_name}, {"labels", labels}, {"annotations", annotations}}},
              {"spec", job_spec}};
  return DumpJson(List(job), 2);
}

}  // namespace tune
