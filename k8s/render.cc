#include "k8s/render.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "k8s/render_kubeflow.h"
#include "k8s/render_parts.h"

namespace tune {
namespace {

using nlohmann::json;
using namespace render_internal;

// The torchrun variables the backend sets itself; a user's env of the same
// name is overridden.
const std::set<std::string> kDistributedEnv = {"RANK",       "WORLD_SIZE",       "LOCAL_RANK",
                                               "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};

std::string Hash6(const std::string& s) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%06x", h & 0xffffffu);
  return buf;
}

bool IsDns1035Label(const std::string& s) {
  static const std::regex kRe("^[a-z]([-a-z0-9]*[a-z0-9])?$");
  return s.size() <= 63 && std::regex_match(s, kRe);
}

// The offset of the first byte of `s` from `from` on that does not belong
// to a UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF), or npos if the rest of `s` is UTF-8.
size_t FirstNonUtf8(const std::string& s, size_t from = 0) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = from; i < n;) {
    const unsigned char c = p[i];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::string::npos;
}

// `s` for a message: every byte that is not UTF-8 written as \xNN.
std::string ShowBytes(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t bad = FirstNonUtf8(s, i);
    if (bad == std::string::npos) return out + s.substr(i);
    out += s.substr(i, bad - i);
    char hex[8];
    std::snprintf(hex, sizeof(hex), "\\x%02X", static_cast<unsigned char>(s[bad]));
    out += hex;
    i = bad + 1;
  }
  return out;
}

// Kubernetes CPU quantity: whole cores as "2", fractions in millicores.
std::string CpuQuantity(double cpu) {
  long long m = std::llround(cpu * 1000);
  if (m % 1000 == 0) return std::to_string(m / 1000);
  return std::to_string(m) + "m";
}

}  // namespace

namespace render_internal {

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

}  // namespace render_internal

Status CheckManifestText(const LaunchSpec& spec) {
  auto check = [&](const std::string& field, const std::string& text) -> Status {
    const size_t bad = FirstNonUtf8(text);
    if (bad == std::string::npos) return Status::Ok();
    char byte[8];
    std::snprintf(byte, sizeof(byte), "\\x%02X", static_cast<unsigned char>(text[bad]));
    std::string why = std::string("byte ") + byte + " is not UTF-8";
    if (!spec.trial_dir.empty() && text.find(spec.trial_dir) != std::string::npos) {
      why += "; it holds the trial's directory, which lies beside the results database: give the database a "
             "path that is UTF-8 (--db or storage.path)";
    }
    return Status::InvalidArgument(field + ": expected UTF-8 text for a Kubernetes manifest, got \"" +
                                   ShowBytes(text) + "\" (" + why + ")");
  };
  for (size_t i = 0; i < spec.argv.size(); ++i) {
    TUNE_RETURN_IF_ERROR(check("trial.command[" + std::to_string(i) + "]", spec.argv[i]));
  }
  for (const auto& [name, value] : spec.env) {
    TUNE_RETURN_IF_ERROR(check(name.rfind("TUNE_", 0) == 0 ? name : "trial.env." + name, value));
  }
  TUNE_RETURN_IF_ERROR(check("trial.working_dir", spec.working_dir));
  return check("name", spec.experiment);
}

std::string EscapeForKubernetesExpansion(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

std::string ExperimentLabelValue(const std::string& experiment) {
  std::string out;
  for (char c : experiment) {
    char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok) out += l;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty() || !(out[0] >= 'a' && out[0] <= 'z')) out = "e-" + out;
  while (!out.empty() && out.back() == '-') out.pop_back();
  const size_t kMax = 30;  // leaves room for "-t<number>-a<attempt>" and "-<index>"
  if (out != experiment || out.size() > kMax) {
    if (out.size() > kMax - 7) out.resize(kMax - 7);
    while (!out.empty() && out.back() == '-') out.pop_back();
    out += "-" + Hash6(experiment);
  }
  return out;
}

std::string KubernetesObjectName(const std::string& experiment, int trial_number, int attempt) {
  return ExperimentLabelValue(experiment) + "-t" + std::to_string(trial_number) + "-a" +
         std::to_string(attempt);
}

Result<std::string> RenderTrialManifests(const KubernetesOptions& opts, const LaunchSpec& spec,
                                         const std::string& object_name) {
  if (opts.job_kind == "pytorchjob") return RenderPyTorchJob(opts, spec, object_name);
  if (opts.job_kind == "trainjob") return RenderTrainJob(opts, spec, object_name);
  if (opts.job_kind != "job") {
    return Status::InvalidArgument("backend.job_kind: expected job, pytorchjob or trainjob, got \"" +
                                   opts.job_kind + "\"");
  }
  TUNE_RETURN_IF_ERROR(CheckCommon(opts, spec, object_name));
  TUNE_ASSIGN_OR_RETURN(json mounts, ParseArray(opts.volume_mounts_json, "volume_mounts"));

  const std::string& name = object_name;
  json labels = Labels(opts, spec);
  json annotations = Annotations(opts, spec);

  // --- the headless Service: DNS records for the Job's pods -------------
  json service = {
      {"apiVersion", "v1"},
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

  // --- the container ------------------------------------------------------
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

  json container = {{"name", "trial"},
                    {"image", opts.image},
                    {"command", Command(spec)},
                    {"env", env},
                    {"ports", json::array({{{"name", "rendezvous"}, {"containerPort", kMasterPort}}})},
                    {"resources", Resources(spec)},
                    // A failed container's last log lines reach its status
                    // (the trial's failure message quotes the last one).
                    {"terminationMessagePolicy", "FallbackToLogsOnError"}};
  if (!opts.image_pull_policy.empty()) container["imagePullPolicy"] = opts.image_pull_policy;
  if (!spec.working_dir.empty()) container["workingDir"] = spec.working_dir;
  if (!mounts.empty()) container["volumeMounts"] = mounts;

  json pod_spec = {{"restartPolicy", "Never"},
                   {"subdomain", name},
                   {"containers", json::array({container})}};
  TUNE_RETURN_IF_ERROR(AddPodOptions(opts, &pod_spec));

  // --- the Indexed Job -----------------------------------------------------
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

  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array({service, job})}};
  return DumpJson(list, 2);
}

}  // namespace tune
