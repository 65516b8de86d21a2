// Workload: what the Kubernetes backend needs to know about the kind of
// object one trial attempt runs as (backend.job_kind), so that its state
// machine (launch, poll, follow rank 0's log, delete, adopt) stays the same
// for every kind, and `tune render` prints what a launch would create
// (docs/architecture.md, section 2.4). One file per kind renders its
// manifest and reads its status:
//
//   job         k8s/job_workload.h: batch/v1 Job (Indexed) + headless
//               Service; pods carry the experiment's labels; rank 0 =
//               completion index 0.
//   pytorchjob  k8s/pytorchjob_workload.h: kubeflow.org/v1 PyTorchJob; the
//               training operator makes the pods (with the template's
//               labels) and a Service per pod; rank 0 = replica-type
//               master, replica-index 0. A failed pod that the operator
//               restarts is made again under the same name (a new uid).
//   trainjob    k8s/trainjob_workload.h: trainer.kubeflow.org/v1alpha1
//               TrainJob; Kubeflow Trainer makes a JobSet whose pods carry
//               the JobSet's labels (not ours): they are found by
//               jobset.sigs.k8s.io/jobset-name; rank 0 = job-index 0,
//               completion index 0. A failed container restarts in place
//               (restartPolicy OnFailure). It has no deadline of its own:
//               the backend enforces trial.timeout_s.
//
// MakeWorkload is the one place that maps backend.job_kind to a kind.
// Internal to tune_k8s; stateless and thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "k8s/kubernetes_options.h"
#include "trial_runner/trial_backend.h"

namespace tune {

// How a workload ended: success, or failure with Kubernetes' reason.
struct WorkloadEnd {
  bool succeeded = false;
  std::string reason, message;
};

class Workload {
 public:
  virtual ~Workload() = default;

  // The attempt's objects as a kubectl-ready JSON `v1/List`, in the order
  // they are created (the contract of RenderTrialManifests, k8s/render.h).
  virtual Result<std::string> Render(const KubernetesOptions& opts, const LaunchSpec& spec,
                                     const std::string& object_name) const = 0;

  // The kind as the API returns it ("Job", "PyTorchJob", "TrainJob").
  virtual std::string Kind() const = 0;
  // kubectl's fully qualified resource ("jobs.batch", "pytorchjobs.kubeflow.org").
  virtual std::string Resource() const = 0;
  // The name used in kubectl commands tune runs and prints ("jobs" for Jobs).
  virtual std::string ListName() const { return Resource(); }
  // A kubectl reference to one object ("job/<name>", "pytorchjobs.kubeflow.org/<name>").
  virtual std::string Ref(const std::string& name) const { return Resource() + "/" + name; }
  // What the backend creates per attempt besides the workload: "service"
  // for a Job's headless Service, else empty.
  virtual std::string CompanionResource() const { return ""; }
  // kubectl references of one attempt's objects, for `kubectl delete`.
  std::vector<std::string> DeleteRefs(const std::string& name) const;
  // The resources that carry the experiment's label, for listing and the
  // final `kubectl delete -l` ("jobs.batch,services,pods", ...).
  std::string LabelledResources() const;
  // The object's end, if its conditions say it ended.
  virtual std::optional<WorkloadEnd> Ended(const nlohmann::json& obj) const = 0;
  // The name of the workload `pod` belongs to ("" if none).
  virtual std::string OwnerOf(const nlohmann::json& pod) const = 0;
  // The pod's rank as a string ("" if unknown); rank "0" speaks for the attempt.
  virtual std::string RankOf(const nlohmann::json& pod) const = 0;
  // True if the pods carry the template's labels (tune.io/experiment), so
  // one `kubectl get KIND,pods -l` lists both. Else PodSelector(names)
  // selects the pods of the named workloads.
  virtual bool PodsCarryLabels() const { return true; }
  virtual std::string PodSelector(const std::vector<std::string>& names) const;
  // The verbs and resources `kubectl auth can-i` checks (as k8s/rbac.yaml
  // grants them): {verb, resource[, subresource]}.
  std::vector<std::vector<std::string>> Permissions() const;
  // For a custom resource: the group/version whose discovery must list
  // Plural(), and the sentence that says it does not.
  virtual std::string GroupVersion() const { return ""; }
  virtual std::string Plural() const { return ""; }
  virtual std::string NotInstalled() const { return ""; }
  // The workload has no deadline of its own (the backend enforces
  // trial.timeout_s).
  virtual bool EnforceDeadline() const { return false; }
  // Rank 0 may run again under the same pod name: a PyTorchJob's pod made
  // again by the operator (restartPolicy ExitCode), a TrainJob's container
  // restarted in place by the kubelet (the JobSet's restartPolicy
  // OnFailure). The backend then checks the pod's uid and restart count
  // before each read of its log.
  virtual bool RestartsUnderSameName() const { return false; }

 protected:
  // The end the object's first condition of type `success` or `failure`
  // with status True says, if any.
  static std::optional<WorkloadEnd> EndedByCondition(const nlohmann::json& obj, const char* success,
                                                     const char* failure);
};

// The workload of backend.job_kind ("job", "pytorchjob", "trainjob");
// nullptr for another kind. The one place that names the kinds.
std::unique_ptr<Workload> MakeWorkload(const std::string& job_kind);

}  // namespace tune
