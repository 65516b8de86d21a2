// KubernetesOptions: experiment.json's `backend` options for the kubernetes
// backend (docs/experiment.md, `backend`). A plain struct, filled by the spec parser.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace tune {

// Kubernetes options; JSON-valued ones are kept as JSON text and spliced
// into manifests as they are (they are validated by kubectl against the
// real schema).
struct KubernetesOptions {
  // What one trial attempt runs as (k8s/workload.h): "job" (a batch/v1
  // Indexed Job plus a headless Service), "pytorchjob" (kubeflow.org/v1,
  // the Kubeflow training operator) or "trainjob" (trainer.kubeflow.org/
  // v1alpha1, Kubeflow Trainer v2).
  std::string job_kind = "job";
  // trainjob: the ClusterTrainingRuntime its runtimeRef names.
  std::string runtime_ref = "torch-distributed";
  std::string namespace_ = "default";
  std::string image;
  std::string image_pull_policy;         // empty: Kubernetes' default
  std::string service_account;
  std::map<std::string, std::string> node_selector;
  std::string tolerations_json = "[]";
  std::string volumes_json = "[]";
  std::string volume_mounts_json = "[]";
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::optional<int> ttl_seconds_after_finished;
  int backoff_limit = 0;
  double pending_timeout_s = 600;
  // Every API call (k8s/api_call.h): transient failures are retried with
  // exponential backoff from api_backoff_initial_s up to api_backoff_max_s
  // (with jitter) until api_deadline_s; one kubectl run may take at most
  // api_call_timeout_s. Deletions that still fail are retried until the
  // end of the run, and for api_deadline_s more.
  double api_backoff_initial_s = 0.5;
  double api_backoff_max_s = 10;
  double api_call_timeout_s = 30;
  double api_deadline_s = 120;
  std::string kubeconfig;
  std::string context;
  std::string kubectl = "kubectl";
};

}  // namespace tune
