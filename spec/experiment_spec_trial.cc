// experiment.json `trial` and `backend` (local and Kubernetes options).
#include <filesystem>
#include <set>

#include "spec/experiment_spec_reader.h"

namespace tune {
namespace spec_internal {
namespace {

namespace fs = std::filesystem;

// The largest GPU index backend.gpus may name (CUDA_VISIBLE_DEVICES takes ints).
constexpr int64_t kMaxGpuIndex = 65535;

// Placeholders usable in trial.command besides the parameter names.
const std::vector<std::string> kBuiltinPlaceholders = {"trial_id", "experiment", "trial_dir", "resume_from"};
// Variables the tuner sets for every worker (docs/architecture.md, section 4.2); TUNE_* too.
const std::vector<std::string> kTunerEnv = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                            "MASTER_ADDR", "MASTER_PORT"};

bool IsEnvName(const std::string& s) { return Matches(s, "[A-Za-z_][A-Za-z0-9_]*"); }

// Kubernetes names (RFC 1123 label and subdomain).
bool IsDnsLabel(const std::string& s) {
  return s.size() <= 63 && Matches(s, "[a-z0-9]([-a-z0-9]*[a-z0-9])?");
}
bool IsDnsSubdomain(const std::string& s) {
  return s.size() <= 253 &&
         Matches(s, "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
}
// A label value, or the name part of a label/annotation key.
bool IsLabelValue(const std::string& s) {
  return s.size() <= 63 && (s.empty() || Matches(s, "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"));
}
// [prefix/]name, the form of label and annotation keys.
bool IsQualifiedName(const std::string& key) {
  auto slash = key.find('/');
  std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  if (slash != std::string::npos && !IsDnsSubdomain(key.substr(0, slash))) return false;
  return !name.empty() && IsLabelValue(name);
}
// A Kubernetes resource quantity such as 4Gi, 500M or 1.5.
bool IsQuantity(const std::string& s) {
  return Matches(s, "([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?");
}

Status CheckPlaceholders(const Reader& r, const std::string& path, const std::string& arg,
                         const SearchSpace& params) {
  size_t pos = 0;
  while ((pos = arg.find("${", pos)) != std::string::npos) {
    size_t end = arg.find('}', pos + 2);
    if (end == std::string::npos) {
      return r.Fail(path, "every \"${\" closed by \"}\"", Quote(arg));
    }
    std::string name = arg.substr(pos + 2, end - pos - 2);
    bool known = params.count(name) > 0;
    for (const auto& b : kBuiltinPlaceholders) known = known || name == b;
    if (!known) {
      std::string names;
      for (const auto& [p, d] : params) names += p + ", ";
      return r.Fail(path,
                    "${...} to name a parameter (" + names + "or trial_id, experiment, trial_dir, resume_from)",
                    Quote("${" + name + "}"));
    }
    pos = end + 1;
  }
  return Status::Ok();
}

Status ParseCommand(const ObjectReader& t, const SearchSpace& params, std::vector<std::string>* out) {
  const Reader& r = t.reader();
  const std::string path = t.PathOf("command");
  const std::string what = "a non-empty array of strings (argv, no shell)";
  const Json* v = t.Find("command");
  if (!v) return r.Missing(path, what);
  if (!v->is_array() || v->empty()) return r.FailValue(path, what, *v);
  std::vector<std::string> argv;
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& item = (*v)[i];
    if (!item.is_string()) return r.FailValue(IndexPath(path, i), "a string", item);
    argv.push_back(item.get<std::string>());
    if (i == 0 && argv[0].empty()) return r.FailValue(IndexPath(path, 0), "a program name", item);
    TUNE_RETURN_IF_ERROR(CheckPlaceholders(r, IndexPath(path, i), argv.back(), params));
  }
  *out = std::move(argv);
  return Status::Ok();
}

Status ParseResources(const ObjectReader& t, ResourcesSpec* out) {
  const Json* v = t.Find("resources_per_worker");
  if (!v) return Status::Ok();
  TUNE_ASSIGN_OR_RETURN(ObjectReader res,
                        ObjectReader::Make(t.reader(), *v, t.PathOf("resources_per_worker")));
  TUNE_RETURN_IF_ERROR(res.AllowOnly({"cpu", "gpu", "memory"}));
  TUNE_RETURN_IF_ERROR(res.Double("cpu", &out->cpu));
  // Kubernetes counts CPUs in thousandths (500m); a million is beyond any node.
  TUNE_RETURN_IF_ERROR(res.Expect(out->cpu == 0 || (out->cpu >= 0.001 && out->cpu <= 1e6), "cpu",
                                  "a number of CPUs, 0 or from 0.001 to 1000000"));
  TUNE_RETURN_IF_ERROR(res.Int("gpu", &out->gpu));
  TUNE_RETURN_IF_ERROR(res.Expect(out->gpu >= 0, "gpu", "a number of GPUs of at least 0"));
  TUNE_RETURN_IF_ERROR(res.String("memory", &out->memory));
  if (res.Has("memory")) {
    TUNE_RETURN_IF_ERROR(res.Expect(IsQuantity(out->memory), "memory",
                                    "a Kubernetes quantity such as \"4Gi\" or \"512Mi\""));
  }
  return Status::Ok();
}

// A key of a Secret's data (Kubernetes' IsConfigMapKey).
bool IsSecretKey(const std::string& s) {
  return s.size() <= 253 && Matches(s, "[-._a-zA-Z0-9]+") && s != "." && s != ".." && s.rfind("..", 0) != 0;
}

// trial.env.NAME: {"secret": NAME, "key": KEY}.
Status ParseSecretRef(const Reader& r, const Json& v, const std::string& path, SecretKeyRef* out) {
  TUNE_ASSIGN_OR_RETURN(ObjectReader ref, ObjectReader::Make(r, v, path, "{\"secret\": NAME, \"key\": KEY}"));
  TUNE_RETURN_IF_ERROR(ref.AllowOnly({"secret", "key"}));
  TUNE_RETURN_IF_ERROR(ref.String("secret", &out->secret, Need::kRequired));
  TUNE_RETURN_IF_ERROR(ref.Expect(IsDnsSubdomain(out->secret), "secret",
                                  "the name of a Kubernetes Secret (at most 253 lowercase letters, digits, "
                                  "'-' and '.', starting and ending with a letter or digit)"));
  TUNE_RETURN_IF_ERROR(ref.String("key", &out->key, Need::kRequired));
  TUNE_RETURN_IF_ERROR(ref.Expect(IsSecretKey(out->key), "key",
                                  "a key of the Secret's data (at most 253 letters, digits, '-', '_' and '.', "
                                  "not starting with \"..\")"));
  return Status::Ok();
}

Status ParseEnv(const ObjectReader& t, const SearchSpace& params, std::map<std::string, std::string>* out,
                std::map<std::string, SecretKeyRef>* secrets) {
  const Json* env = t.Find("env");
  if (!env) return Status::Ok();
  const Reader& r = t.reader();
  if (!env->is_object()) {
    return r.FailValue(t.PathOf("env"), "an object of strings (or {\"secret\": NAME, \"key\": KEY} values)", *env);
  }
  std::map<std::string, std::string> values;
  std::map<std::string, SecretKeyRef> refs;
  for (const auto& [name, value] : env->items()) {
    std::string path = JoinPath(t.PathOf("env"), name);
    if (!value.is_string() && !value.is_object()) {
      return r.FailValue(path,
                         "a string, or {\"secret\": NAME, \"key\": KEY} for a value from a Kubernetes Secret",
                         value);
    }
    if (!IsEnvName(name)) {
      return r.Fail(path, "a variable name of letters, digits and '_'", Quote(name));
    }
    bool reserved = name.rfind("TUNE_", 0) == 0;
    for (const auto& e : kTunerEnv) reserved = reserved || name == e;
    if (reserved) {
      return r.Fail(path,
                    "a variable the tuner does not set itself (RANK, WORLD_SIZE, "
                    "LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TUNE_*)",
                    Quote(name));
    }
    if (value.is_object()) {
      TUNE_RETURN_IF_ERROR(ParseSecretRef(r, value, path, &refs[name]));
      continue;
    }
    // Values get the same ${...} substitution as the command.
    TUNE_RETURN_IF_ERROR(CheckPlaceholders(r, path, value.get<std::string>(), params));
    values[name] = value.get<std::string>();
  }
  *out = std::move(values);
  *secrets = std::move(refs);
  return Status::Ok();
}

// An array of JSON objects, kept as compact JSON text.
Status JsonObjectArray(const ObjectReader& b, const std::string& key, std::string* out,
                       std::vector<const Json*>* items) {
  const Json* v = b.Find(key);
  if (!v) return Status::Ok();
  if (!v->is_array()) return b.reader().FailValue(b.PathOf(key), "an array of objects", *v);
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_object()) {
      return b.reader().FailValue(IndexPath(b.PathOf(key), i), "an object", (*v)[i]);
    }
    items->push_back(&(*v)[i]);
  }
  *out = v->dump();
  return Status::Ok();
}

Status ParseVolumes(const ObjectReader& b, KubernetesOptions* k) {
  const Reader& r = b.reader();
  std::vector<const Json*> volumes, mounts;
  TUNE_RETURN_IF_ERROR(JsonObjectArray(b, "volumes", &k->volumes_json, &volumes));
  TUNE_RETURN_IF_ERROR(JsonObjectArray(b, "volume_mounts", &k->volume_mounts_json, &mounts));
  std::set<std::string> names;
  for (size_t i = 0; i < volumes.size(); ++i) {
    TUNE_ASSIGN_OR_RETURN(ObjectReader vol,
                          ObjectReader::Make(r, *volumes[i], IndexPath(b.PathOf("volumes"), i)));
    std::string name;
    TUNE_RETURN_IF_ERROR(vol.String("name", &name, Need::kRequired));
    TUNE_RETURN_IF_ERROR(vol.Expect(IsDnsLabel(name), "name", "a volume name (RFC 1123 label)"));
    TUNE_RETURN_IF_ERROR(vol.Expect(names.insert(name).second, "name", "a name no other volume has"));
  }
  for (size_t i = 0; i < mounts.size(); ++i) {
    TUNE_ASSIGN_OR_RETURN(ObjectReader m,
                          ObjectReader::Make(r, *mounts[i], IndexPath(b.PathOf("volume_mounts"), i)));
    std::string name, mount_path;
    TUNE_RETURN_IF_ERROR(m.String("name", &name, Need::kRequired));
    TUNE_RETURN_IF_ERROR(m.String("mountPath", &mount_path, Need::kRequired));
    TUNE_RETURN_IF_ERROR(m.Expect(names.count(name) > 0, "name", "the name of one of backend.volumes"));
    TUNE_RETURN_IF_ERROR(m.Expect(!mount_path.empty() && mount_path[0] == '/', "mountPath",
                                  "an absolute path"));
  }
  return Status::Ok();
}

// Labels, node selectors (values must be label values) and annotations.
Status ParseKeyValues(const ObjectReader& b, const std::string& key, bool label_values,
                      std::map<std::string, std::string>* out) {
  TUNE_RETURN_IF_ERROR(b.StringMap(key, out));
  for (const auto& [k, v] : *out) {
    std::string path = JoinPath(b.PathOf(key), k);
    if (!IsQualifiedName(k)) {
      return b.reader().Fail(path, "a key of the form [prefix/]name (Kubernetes qualified name)",
                             Quote(k));
    }
    if (key == "labels" && k.rfind("tune.io/", 0) == 0) {
      return b.reader().Fail(path, "a key outside tune.io/ (the tuner sets those labels)", Quote(k));
    }
    if (label_values && !IsLabelValue(v)) {
      return b.reader().Fail(path,
                             "a label value of at most 63 letters, digits, '-', '_' or '.', "
                             "starting and ending with a letter or digit",
                             Quote(v));
    }
  }
  return Status::Ok();
}

Status ParseKubernetes(const ObjectReader& b, KubernetesOptions* k) {
  TUNE_RETURN_IF_ERROR(b.String("namespace", &k->namespace_));
  TUNE_RETURN_IF_ERROR(b.Expect(IsDnsLabel(k->namespace_), "namespace",
                                "a namespace name (lowercase letters, digits and '-')"));
  TUNE_RETURN_IF_ERROR(b.String("image", &k->image));
  if (b.Has("image")) {
    TUNE_RETURN_IF_ERROR(b.Expect(Matches(k->image, "[^\\s]+"), "image",
                                  "a container image reference without spaces"));
  }
  TUNE_RETURN_IF_ERROR(
      b.Enum("image_pull_policy", {"Always", "IfNotPresent", "Never"}, &k->image_pull_policy));
  TUNE_RETURN_IF_ERROR(b.String("service_account", &k->service_account));
  if (b.Has("service_account")) {
    TUNE_RETURN_IF_ERROR(b.Expect(IsDnsSubdomain(k->service_account), "service_account",
                                  "a ServiceAccount name (RFC 1123 subdomain)"));
  }
  TUNE_RETURN_IF_ERROR(ParseKeyValues(b, "node_selector", true, &k->node_selector));
  TUNE_RETURN_IF_ERROR(ParseKeyValues(b, "labels", true, &k->labels));
  TUNE_RETURN_IF_ERROR(ParseKeyValues(b, "annotations", false, &k->annotations));
  std::vector<const Json*> tolerations;
  TUNE_RETURN_IF_ERROR(JsonObjectArray(b, "tolerations", &k->tolerations_json, &tolerations));
  TUNE_RETURN_IF_ERROR(ParseVolumes(b, k));
  if (b.Has("ttl_seconds_after_finished")) {
    int ttl = 0;
    TUNE_RETURN_IF_ERROR(b.Int("ttl_seconds_after_finished", &ttl));
    TUNE_RETURN_IF_ERROR(
        b.Expect(ttl >= 0, "ttl_seconds_after_finished", "a number of seconds of at least 0"));
    k->ttl_seconds_after_finished = ttl;
  }
  TUNE_RETURN_IF_ERROR(b.Int("backoff_limit", &k->backoff_limit));
  TUNE_RETURN_IF_ERROR(b.Expect(k->backoff_limit >= 0, "backoff_limit", "an integer of at least 0"));
  TUNE_RETURN_IF_ERROR(b.Seconds("pending_timeout_s", &k->pending_timeout_s));
  TUNE_RETURN_IF_ERROR(b.Seconds("api_backoff_initial_s", &k->api_backoff_initial_s));
  TUNE_RETURN_IF_ERROR(b.Seconds("api_backoff_max_s", &k->api_backoff_max_s));
  TUNE_RETURN_IF_ERROR(b.Seconds("api_call_timeout_s", &k->api_call_timeout_s));
  TUNE_RETURN_IF_ERROR(b.Seconds("api_deadline_s", &k->api_deadline_s));
  TUNE_RETURN_IF_ERROR(b.String("kubeconfig", &k->kubeconfig));
  if (b.Has("kubeconfig")) {
    TUNE_RETURN_IF_ERROR(b.Expect(!k->kubeconfig.empty(), "kubeconfig", "a file path"));
    // As kubectl's --kubeconfig: relative to the current directory, fixed now
    // so that kubectl may run anywhere.
    std::error_code ec;
    auto abs = fs::absolute(k->kubeconfig, ec);
    if (!ec) k->kubeconfig = abs.lexically_normal().string();
  }
  TUNE_RETURN_IF_ERROR(b.String("context", &k->context));
  TUNE_RETURN_IF_ERROR(b.Expect(!b.Has("context") || !k->context.empty(), "context",
                                "a kubeconfig context name"));
  TUNE_RETURN_IF_ERROR(b.String("kubectl", &k->kubectl));
  TUNE_RETURN_IF_ERROR(b.Expect(!k->kubectl.empty(), "kubectl", "a program name or path"));
  return Status::Ok();
}

Status ParseGpus(const ObjectReader& b, std::vector<std::string>* out) {
  const Json* v = b.Find("gpus");
  if (!v) return Status::Ok();
  const std::string what = "an array of GPU indices (integers from 0 to " + std::to_string(kMaxGpuIndex) + ")";
  if (!v->is_array()) return b.reader().FailValue(b.PathOf("gpus"), what, *v);
  std::vector<std::string> ids;
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& g = (*v)[i];
    std::string path = IndexPath(b.PathOf("gpus"), i);
    // The local backend hands them out as CUDA_VISIBLE_DEVICES indices (an
    // int each); a string of digits is read as the number it spells.
    std::optional<int64_t> n;
    if (!g.is_number_float()) n = AsInt64(g);
    if (g.is_string() && Matches(g.get<std::string>(), "[0-9]{1,18}")) n = std::stoll(g.get<std::string>());
    if (!n || *n < 0 || *n > kMaxGpuIndex) {
      return b.reader().FailValue(path, "a GPU index (an integer from 0 to " + std::to_string(kMaxGpuIndex) + ")", g);
    }
    std::string id = std::to_string(*n);
    for (const auto& seen : ids) {
      if (seen == id) return b.reader().FailValue(path, "distinct GPU ids", g);
    }
    ids.push_back(id);
  }
  *out = std::move(ids);
  return Status::Ok();
}

}  // namespace

Status ParseTrial(const Reader& r, const Json& v, const SearchSpace& params,
                  const std::string& base_dir, TrialTemplate* out) {
  TUNE_ASSIGN_OR_RETURN(ObjectReader t,
                        ObjectReader::Make(r, v, "trial", "an object with at least a command"));
  TUNE_RETURN_IF_ERROR(t.AllowOnly({"command", "workers", "resources_per_worker", "env",
                                    "max_retries", "timeout_s", "stop_grace_s", "working_dir",
                                    "resume_from_checkpoint"}));
  TUNE_RETURN_IF_ERROR(ParseCommand(t, params, &out->command));
  TUNE_RETURN_IF_ERROR(t.Int("workers", &out->workers));
  TUNE_RETURN_IF_ERROR(t.Expect(out->workers >= 1, "workers", "a number of processes of at least 1"));
  TUNE_RETURN_IF_ERROR(ParseResources(t, &out->resources_per_worker));
  TUNE_RETURN_IF_ERROR(ParseEnv(t, params, &out->env, &out->env_secrets));
  TUNE_RETURN_IF_ERROR(t.Int("max_retries", &out->max_retries));
  TUNE_RETURN_IF_ERROR(t.Expect(out->max_retries >= 0, "max_retries", "an integer of at least 0"));
  TUNE_RETURN_IF_ERROR(t.Seconds("timeout_s", &out->timeout_s, "leave the key out for no timeout"));
  TUNE_RETURN_IF_ERROR(t.Bool("resume_from_checkpoint", &out->resume_from_checkpoint));
  TUNE_RETURN_IF_ERROR(t.Seconds("stop_grace_s", &out->stop_grace_s));
  std::string dir;
  TUNE_RETURN_IF_ERROR(t.String("working_dir", &dir));
  TUNE_RETURN_IF_ERROR(t.Expect(!t.Has("working_dir") || !dir.empty(), "working_dir", "a directory"));
  out->working_dir_written = dir;
  // Relative to the experiment file's directory, like the default.
  if (dir.empty()) {
    out->working_dir = base_dir;
  } else {
    // fs::path's operator/ keeps an absolute `dir` as it is.
    out->working_dir = (fs::path(base_dir) / dir).lexically_normal().string();
    while (out->working_dir.size() > 1 && out->working_dir.back() == '/') out->working_dir.pop_back();
  }
  return Status::Ok();
}

Status ParseBackend(const Reader& r, const Json& v, const std::string& base_dir, BackendSpec* out) {
  (void)base_dir;
  TUNE_ASSIGN_OR_RETURN(ObjectReader b, ObjectReader::Make(r, v, "backend"));
  // Local and Kubernetes options may stand side by side, so that
  // `tune run --backend` can switch between them.
  TUNE_RETURN_IF_ERROR(b.AllowOnly(
      {"type", "job_kind", "cpus", "gpus", "namespace", "image", "image_pull_policy", "service_account",
       "node_selector", "tolerations", "volumes", "volume_mounts", "labels", "annotations",
       "ttl_seconds_after_finished", "backoff_limit", "pending_timeout_s", "api_backoff_initial_s",
       "api_backoff_max_s", "api_call_timeout_s", "api_deadline_s", "kubeconfig",
       "context", "kubectl", "runtime_ref"}));
  TUNE_RETURN_IF_ERROR(b.Enum("type", {"local", "kubernetes"}, &out->type));
  TUNE_RETURN_IF_ERROR(b.Enum("job_kind", {"job", "pytorchjob", "trainjob"}, &out->job_kind));
  out->kubernetes.job_kind = out->job_kind;
  TUNE_RETURN_IF_ERROR(b.String("runtime_ref", &out->kubernetes.runtime_ref));
  if (b.Has("runtime_ref")) {
    TUNE_RETURN_IF_ERROR(b.Expect(IsDnsSubdomain(out->kubernetes.runtime_ref), "runtime_ref",
                                  "the name of a ClusterTrainingRuntime (RFC 1123 subdomain)"));
    TUNE_RETURN_IF_ERROR(b.Expect(out->job_kind == "trainjob", "runtime_ref",
                                  "no runtime_ref unless job_kind is \"trainjob\""));
  }
  TUNE_RETURN_IF_ERROR(b.Double("cpus", &out->total_cpus));
  TUNE_RETURN_IF_ERROR(b.Expect(!b.Has("cpus") || out->total_cpus > 0, "cpus",
                                "a number of CPU slots above 0 (leave the key out for all cores)"));
  TUNE_RETURN_IF_ERROR(ParseGpus(b, &out->gpus));
  return ParseKubernetes(b, &out->kubernetes);
}

Status CheckBackendNeeds(const Reader& r, const ExperimentSpec& spec) {
  const BackendSpec& b = spec.backend;
  const TrialTemplate& t = spec.trial;
  if (b.type == "kubernetes" && b.kubernetes.image.empty()) {
    return r.Missing("backend.image", "a container image for the kubernetes backend");
  }
  // A pod's workingDir is a path in its container: one relative to the
  // experiment file's directory would publish a path of the tuner's machine.
  if (b.type == "kubernetes" && !t.working_dir_written.empty() && t.working_dir_written[0] != '/') {
    return r.Fail("trial.working_dir",
                  "an absolute path in the container for the kubernetes backend (leave the key out for the "
                  "image's WORKDIR; relative paths are the local backend's)",
                  Quote(t.working_dir_written));
  }
  if (b.type != "local") return Status::Ok();
  std::string workers = std::to_string(t.workers);
  if (b.total_cpus > 0 && t.resources_per_worker.cpu * t.workers > b.total_cpus) {
    return r.Fail("trial.resources_per_worker.cpu",
                  "at most backend.cpus (" + ParamToString(b.total_cpus) + ") / trial.workers (" +
                      workers + ") CPUs, or no trial could ever start",
                  ParamToString(t.resources_per_worker.cpu));
  }
  if (!b.gpus.empty() &&
      static_cast<size_t>(t.resources_per_worker.gpu) * t.workers > b.gpus.size()) {
    return r.Fail("trial.resources_per_worker.gpu",
                  "at most the " + std::to_string(b.gpus.size()) + " GPUs of backend.gpus / trial.workers (" +
                      workers + "), or no trial could ever start",
                  std::to_string(t.resources_per_worker.gpu));
  }
  return Status::Ok();
}

}  // namespace spec_internal
}  // namespace tune
