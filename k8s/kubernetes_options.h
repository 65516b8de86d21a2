// KubernetesOptions: experiment.json's `backend` options for the kubernetes
// backend (SPEC section 2). A plain struct, filled by the spec parser.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace tune {

// Kubernetes options; JSON-valued ones are kept as JSON text and spliced
// into manifests as they are (they are validated by kubectl against the
// real schema).
struct KubernetesOptions {
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
  std::string kubeconfig;
  std::string context;
  std::string kubectl = "kubectl";
};

}  // namespace tune
