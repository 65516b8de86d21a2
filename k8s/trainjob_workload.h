// TrainJobWorkload: backend.job_kind "trainjob", a
// trainer.kubeflow.org/v1alpha1 TrainJob for clusters that run Kubeflow
// Trainer (v2) (docs/kubernetes.md).
//
// runtimeRef names the ClusterTrainingRuntime backend.runtime_ref (default
// torch-distributed); trainer holds image, command, env, numNodes = workers
// and resourcesPerNode. The runtime sets the PET_* variables for torchrun;
// pod options (service account, node selector, tolerations, volumes and
// mounts) go through podSpecOverrides to the runtime's trainer node. The
// object carries the labels and annotations of k8s/render.h, and so do the
// pods through spec.labels, which the runtime passes to its JobSet and Jobs.
//
// Status: Kubeflow Trainer makes a JobSet whose pods carry the JobSet's
// labels (not ours): they are found by jobset.sigs.k8s.io/jobset-name; rank
// 0 = job-index 0, completion index 0. A failed container restarts in place
// (restartPolicy OnFailure). A TrainJob has no deadline of its own: the
// backend enforces trial.timeout_s. Nor can a TrainJob set the pods'
// terminationGracePeriodSeconds (podSpecOverrides has no such field): the
// runtime's pod template decides (Kubernetes' default 30 s), not
// trial.stop_grace_s.
//
// Internal to tune_k8s; stateless and thread-safe.
#pragma once

#include <string>

#include "k8s/workload.h"

namespace tune {

// The torch-distributed runtime's replicated job and container that the
// TrainJob's trainer fills in (podSpecOverrides target them).
inline constexpr const char* kTrainerReplicatedJob = "trainer-node";
inline constexpr const char* kTrainerContainer = "trainer";

class TrainJobWorkload final : public Workload {
 public:
  // A `v1/List` holding the one TrainJob. InvalidArgument also without a
  // backend.runtime_ref.
  Result<std::string> Render(const KubernetesOptions& opts, const LaunchSpec& spec,
                             const std::string& object_name) const override;
  std::string Kind() const override { return "TrainJob"; }
  std::string Resource() const override { return "trainjobs.trainer.kubeflow.org"; }
  std::optional<WorkloadEnd> Ended(const nlohmann::json& obj) const override;
  std::string OwnerOf(const nlohmann::json& pod) const override;
  std::string RankOf(const nlohmann::json& pod) const override;
  bool PodsCarryLabels() const override { return false; }
  std::string GroupVersion() const override { return "trainer.kubeflow.org/v1alpha1"; }
  std::string Plural() const override { return "trainjobs"; }
  std::string NotInstalled() const override {
    return "Kubeflow Trainer is not installed: the cluster serves no trainjobs.trainer.kubeflow.org";
  }
  bool EnforceDeadline() const override { return true; }
  bool RestartsUnderSameName() const override { return true; }
};

}  // namespace tune
