// JobWorkload: backend.job_kind "job", the default (docs/kubernetes.md).
//
// A trial attempt is a headless Service plus a batch/v1 Job in Indexed
// completion mode with completions = parallelism = workers. Pod i of the Job
// is rank i; its stable hostname `<job>-<i>.<service>` resolves through the
// Service (the Job's pods get `subdomain: <service>`), so every rank finds
// rank 0 at MASTER_ADDR = `<job>-0.<service>`. Both objects share one name
// and carry the labels and annotations of k8s/render.h, as do the pods.
// The backend sets RANK (the completion index), WORLD_SIZE, LOCAL_RANK=0,
// LOCAL_WORLD_SIZE=1, MASTER_ADDR and MASTER_PORT (kMasterPort); a
// trial.env entry of those names is overridden. backoffLimit =
// backend.backoff_limit, activeDeadlineSeconds = ceil(trial.timeout_s),
// ttlSecondsAfterFinished = backend.ttl_seconds_after_finished; the pods'
// terminationGracePeriodSeconds = ceil(trial.stop_grace_s).
//
// Status: the Job's Complete or Failed condition ends it; a pod belongs to
// the Job its job-name label names; rank = the completion index.
//
// Internal to tune_k8s; stateless and thread-safe.
#pragma once

#include <string>

#include "k8s/workload.h"

namespace tune {

class JobWorkload final : public Workload {
 public:
  // The Service, then the Job.
  Result<std::string> Render(const KubernetesOptions& opts, const LaunchSpec& spec,
                             const std::string& object_name) const override;
  std::string Kind() const override { return "Job"; }
  std::string Resource() const override { return "jobs.batch"; }
  std::string ListName() const override { return "jobs"; }
  std::string Ref(const std::string& name) const override { return "job/" + name; }
  std::string CompanionResource() const override { return "service"; }
  std::optional<WorkloadEnd> Ended(const nlohmann::json& obj) const override;
  std::string OwnerOf(const nlohmann::json& pod) const override;
  std::string RankOf(const nlohmann::json& pod) const override;
};

}  // namespace tune
