#include "k8s/render_parts.h"

#include <cmath>
#include <map>
#include <regex>

#include "core/json_text.h"
#include "k8s/render.h"

namespace tune::render_internal {
namespace {

bool IsDns1035Label(const std::string& s) {
  static const std::regex kRe("^[a-z]([-a-z0-9]*[a-z0-9])?$");
  return s.size() <= 63 && std::regex_match(s, kRe);
}

// Kubernetes CPU quantity: whole cores as "2", fractions in millicores.
std::string CpuQuantity(double cpu) {
  long long m = std::llround(cpu * 1000);
  if (m % 1000 == 0) return std::to_string(m / 1000);
  return std::to_string(m) + "m";
}

}  // namespace

Status CheckCommon(const KubernetesOptions& opts, const LaunchSpec& spec, const std::string& name) {
  if (opts.image.empty()) {
    return Status::InvalidArgument("backend.image: the kubernetes backend needs a container image");
  }
  if (!IsDns1035Label(name) || name.size() > 52) {
    return Status::InvalidArgument("Kubernetes object name '" + name +
                                   "' is not a DNS-1035 label of at most 52 characters");
  }
  if (spec.workers < 1) return Status::InvalidArgument("trial.workers: expected at least 1");
  if (spec.argv.empty()) return Status::InvalidArgument("trial.command: expected a non-empty argv");
  return CheckManifestText(spec);
}

Result<json> ParseArray(const std::string& text, const char* key) {
  json j = json::parse(text.empty() ? "[]" : text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) {
    return Status::InvalidArgument(std::string("backend.") + key + ": expected a JSON array, got " + text);
  }
  return j;
}

json Labels(const KubernetesOptions& opts, const LaunchSpec& spec) {
  json labels = json::object();
  for (const auto& [k, v] : opts.labels) labels[k] = v;
  labels[kExperimentLabel] = ExperimentLabelValue(spec.experiment);
  labels[kTrialLabel] = std::to_string(spec.trial_number);
  labels[kTrialIdLabel] = std::to_string(spec.trial_id);
  labels[kAttemptLabel] = std::to_string(spec.attempt);
  return labels;
}

json Annotations(const KubernetesOptions& opts, const LaunchSpec& spec) {
  json annotations = json::object();
  for (const auto& [k, v] : opts.annotations) annotations[k] = v;
  annotations[kExperimentAnnotation] = spec.experiment;
  return annotations;
}

json Resources(const LaunchSpec& spec) {
  json requests = json::object(), limits = json::object();
  if (spec.cpu_per_worker > 0) requests["cpu"] = CpuQuantity(spec.cpu_per_worker);
  if (!spec.memory_per_worker.empty()) {
    requests["memory"] = spec.memory_per_worker;
    limits["memory"] = spec.memory_per_worker;
  }
  if (spec.gpu_per_worker > 0) {
    // Extended resources are requested through limits (requests must equal).
    requests["nvidia.com/gpu"] = std::to_string(spec.gpu_per_worker);
    limits["nvidia.com/gpu"] = std::to_string(spec.gpu_per_worker);
  }
  json resources = json::object();
  if (!requests.empty()) resources["requests"] = requests;
  if (!limits.empty()) resources["limits"] = limits;
  return resources;
}

json Command(const LaunchSpec& spec) {
  json command = json::array();
  for (const std::string& a : spec.argv) command.push_back(EscapeForKubernetesExpansion(a));
  return command;
}

json EnvVar(const std::string& name, const std::string& value) {
  return json{{"name", name}, {"value", EscapeForKubernetesExpansion(value)}};
}

json SecretEnvVar(const std::string& name, const SecretKeyRef& ref) {
  return json{{"name", name}, {"valueFrom", {{"secretKeyRef", {{"name", ref.secret}, {"key", ref.key}}}}}};
}

json TrialEnv(const LaunchSpec& spec, const std::set<std::string>& excluded, const std::string& excluded_prefix) {
  std::map<std::string, json> by_name;
  for (const auto& [k, v] : spec.env) by_name[k] = EnvVar(k, v);
  for (const auto& [k, ref] : spec.secret_env) by_name[k] = SecretEnvVar(k, ref);
  json env = json::array();
  for (auto& [k, e] : by_name) {
    if (excluded.count(k)) continue;
    if (!excluded_prefix.empty() && k.rfind(excluded_prefix, 0) == 0) continue;
    env.push_back(std::move(e));
  }
  return env;
}

json Container(const KubernetesOptions& opts, const LaunchSpec& spec, const std::string& name, const json& env,
               const json& mounts) {
  json container = {{"name", name},
                    {"image", opts.image},
                    {"command", Command(spec)},
                    {"env", env},
                    {"resources", Resources(spec)},
                    {"terminationMessagePolicy", "FallbackToLogsOnError"}};
  if (!opts.image_pull_policy.empty()) container["imagePullPolicy"] = opts.image_pull_policy;
  if (!spec.working_dir.empty()) container["workingDir"] = spec.working_dir;
  if (!mounts.empty()) container["volumeMounts"] = mounts;
  return container;
}

Status AddPodOptions(const KubernetesOptions& opts, json* pod_spec) {
  TUNE_ASSIGN_OR_RETURN(json tolerations, ParseArray(opts.tolerations_json, "tolerations"));
  TUNE_ASSIGN_OR_RETURN(json volumes, ParseArray(opts.volumes_json, "volumes"));
  if (!opts.service_account.empty()) (*pod_spec)["serviceAccountName"] = opts.service_account;
  if (!opts.node_selector.empty()) {
    json sel = json::object();
    for (const auto& [k, v] : opts.node_selector) sel[k] = v;
    (*pod_spec)["nodeSelector"] = sel;
  }
  if (!tolerations.empty()) (*pod_spec)["tolerations"] = tolerations;
  if (!volumes.empty()) (*pod_spec)["volumes"] = volumes;
  return Status::Ok();
}

std::string ListText(json items) {
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
  return DumpJson(list, 2);
}

}  // namespace tune::render_internal
