#include "k8s/job_workload.h"

#include <cmath>
#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "k8s/object_fields.h"
#include "k8s/render.h"
#include "k8s/render_parts.h"

namespace tune {
namespace {

using nlohmann::json;
using namespace render_internal;

// The torchrun variables the backend sets itself; a user's env of the same
// name is overridden.
const std::set<std::string> kDistributedEnv = {"RANK",       "WORLD_SIZE",       "LOCAL_RANK",
                                               "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};

// The headless Service: DNS records for the Job's pods.
json HeadlessService(const std::string& name, const json& labels, const json& annotations) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
          {"spec",
           {{"clusterIP", "None"},
            // Records exist before the pods are ready: ranks > 0 look up rank 0
            // while it is still starting.
            {"publishNotReadyAddresses", true},
            {"selector", {{"job-name", name}}},
            {"ports", json::array({{{"name", "rendezvous"}, {"port", kMasterPort},
                                    {"targetPort", kMasterPort}, {"protocol", "TCP"}}})}}}};
}

// The trial's env plus the torchrun variables: rank from the completion
// index, rank 0 at `<name>-0.<name>`.
json JobEnv(const LaunchSpec& spec, const std::string& name) {
  json env = TrialEnv(spec, kDistributedEnv, "");
  env.push_back({{"name", "RANK"},
                 {"valueFrom",
                  {{"fieldRef",
                    {{"fieldPath", "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}}});
  env.push_back(EnvVar("WORLD_SIZE", std::to_string(spec.workers)));
  env.push_back(EnvVar("LOCAL_RANK", "0"));
  env.push_back(EnvVar("LOCAL_WORLD_SIZE", "1"));
  env.push_back(EnvVar("MASTER_ADDR", name + "-0." + name));
  env.push_back(EnvVar("MASTER_PORT", std::to_string(kMasterPort)));
  return env;
}

}  // namespace

Result<std::string> JobWorkload::Render(const KubernetesOptions& opts, const LaunchSpec& spec,
                                        const std::string& object_name) const {
  TUNE_RETURN_IF_ERROR(CheckCommon(opts, spec, object_name));
  TUNE_ASSIGN_OR_RETURN(json mounts, ParseArray(opts.volume_mounts_json, "volume_mounts"));
  const std::string& name = object_name;
  json labels = Labels(opts, spec);
  json annotations = Annotations(opts, spec);

  json container = Container(opts, spec, "trial", JobEnv(spec, name), mounts);
  container["ports"] = json::array({{{"name", "rendezvous"}, {"containerPort", kMasterPort}}});
  json pod_spec = {{"restartPolicy", "Never"},
                   {"subdomain", name},
                   // SIGTERM to SIGKILL when tune deletes the Job (trial.stop_grace_s).
                   {"terminationGracePeriodSeconds", static_cast<int64_t>(std::ceil(spec.stop_grace_s))},
                   {"containers", json::array({container})}};
  TUNE_RETURN_IF_ERROR(AddPodOptions(opts, &pod_spec));

  json job_spec = {{"completionMode", "Indexed"},
                   {"completions", spec.workers},
                   {"parallelism", spec.workers},
                   // Retries are the tuner's (max_retries), so they are counted.
                   {"backoffLimit", opts.backoff_limit},
                   {"template",
                    {{"metadata", {{"labels", labels}, {"annotations", annotations}}},
                     {"spec", pod_spec}}}};
  if (opts.ttl_seconds_after_finished) {
    job_spec["ttlSecondsAfterFinished"] = *opts.ttl_seconds_after_finished;
  }
  if (spec.timeout_s > 0) {
    job_spec["activeDeadlineSeconds"] = static_cast<int64_t>(std::ceil(spec.timeout_s));
  }
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
              {"spec", job_spec}};
  return ListText(json::array({HeadlessService(name, labels, annotations), job}));
}

std::optional<WorkloadEnd> JobWorkload::Ended(const json& obj) const {
  return EndedByCondition(obj, "Complete", "Failed");
}

std::string JobWorkload::OwnerOf(const json& pod) const {
  return k8s_object::Str(k8s_object::LabelsOf(pod), "job-name");
}

std::string JobWorkload::RankOf(const json& pod) const {
  return k8s_object::Str(k8s_object::AnnotationsOf(pod), "batch.kubernetes.io/job-completion-index");
}

}  // namespace tune
