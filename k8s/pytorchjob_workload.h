// PyTorchJobWorkload: backend.job_kind "pytorchjob", a kubeflow.org/v1
// PyTorchJob for clusters that run the Kubeflow training operator (v1)
// (docs/kubernetes.md).
//
// One Master replica and workers - 1 Worker replicas (restartPolicy Never,
// or ExitCode when backend.backoff_limit > 0: the operator then makes a pod
// killed by a signal again under the same name), each a pod whose container
// is named `pytorch` (the name the operator and Katib look for); the
// Master's port is named `pytorchjob-port`. The operator, not tune, sets
// MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and PET_* in every pod (and
// creates a Service per pod), so a trial.env entry of those names is left
// out; TUNE_*, the rest of trial.env and LOCAL_RANK=0, LOCAL_WORLD_SIZE=1
// (one process per pod) are set. runPolicy: backoffLimit =
// backend.backoff_limit (0: retries are the tuner's), activeDeadlineSeconds
// = ceil(trial.timeout_s), cleanPodPolicy None (the pods outlive the job
// until tune has read rank 0's log and deletes the PyTorchJob),
// ttlSecondsAfterFinished = backend.ttl_seconds_after_finished (the
// backstop if tune dies). Every pod's terminationGracePeriodSeconds =
// ceil(trial.stop_grace_s). The object and the replica templates carry the
// labels and annotations of k8s/render.h.
//
// Status: the Succeeded or Failed condition ends it; a pod belongs to the
// PyTorchJob its training.kubeflow.org/job-name label names; rank =
// replica-index for the master, replica-index + 1 for a worker. A failed pod
// that the operator restarts is made again under the same name (a new uid).
//
// Internal to tune_k8s; stateless and thread-safe.
#pragma once

#include <string>

#include "k8s/workload.h"

namespace tune {

// The PyTorchJob's container name and its Master's port (the operator's
// defaults).
inline constexpr const char* kPyTorchContainer = "pytorch";
inline constexpr const char* kPyTorchPortName = "pytorchjob-port";
inline constexpr int kPyTorchPort = 23456;

class PyTorchJobWorkload final : public Workload {
 public:
  // A `v1/List` holding the one PyTorchJob.
  Result<std::string> Render(const KubernetesOptions& opts, const LaunchSpec& spec,
                             const std::string& object_name) const override;
  std::string Kind() const override { return "PyTorchJob"; }
  std::string Resource() const override { return "pytorchjobs.kubeflow.org"; }
  std::optional<WorkloadEnd> Ended(const nlohmann::json& obj) const override;
  std::string OwnerOf(const nlohmann::json& pod) const override;
  std::string RankOf(const nlohmann::json& pod) const override;
  bool RestartsUnderSameName() const override { return true; }
  std::string GroupVersion() const override { return "kubeflow.org/v1"; }
  std::string Plural() const override { return "pytorchjobs"; }
  std::string NotInstalled() const override {
    return "the Kubeflow training operator is not installed: the cluster serves no pytorchjobs.kubeflow.org";
  }
};

}  // namespace tune
