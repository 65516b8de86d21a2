// spec.trialTemplate: the primary container of a Job or PyTorchJob trial as
// experiment.json's `trial` and `backend`.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "import/katib_yaml.h"

namespace tune {
namespace katib_internal {

namespace {

// The environment the tuner (or, for PyTorchJob, the training operator)
// sets itself; experiment.json refuses them in trial.env (docs/architecture.md, section 4.2).
bool TunerSetsVariable(const std::string& name) {
  static const std::set<std::string> kSet = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                             "MASTER_ADDR", "MASTER_PORT"};
  return kSet.count(name) > 0 || name.rfind("TUNE_", 0) == 0;
}

bool EnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// What each ${trialParameters.<name>} becomes.
using Substitutions = std::map<std::string, std::string>;

// Replaces every ${trialParameters.<name>} in the string at `n`.
Status Substitute(const Ctx& ctx, const YAML::Node& n, const std::string& path, const Substitutions& subs,
                  std::string* out) {
  std::string s;
  TUNE_RETURN_IF_ERROR(ctx.String(n, path, &s));
  static const std::string kOpen = "${trialParameters.";
  out->clear();
  size_t pos = 0;
  for (size_t at; (at = s.find(kOpen, pos)) != std::string::npos;) {
    size_t close = s.find('}', at);
    if (close == std::string::npos) return ctx.FailNode(n, path, "a closed ${trialParameters.<name>} placeholder");
    std::string name = s.substr(at + kOpen.size(), close - at - kOpen.size());
    auto it = subs.find(name);
    if (it == subs.end()) {
      std::string known;
      for (const auto& [k, v] : subs) known += (known.empty() ? "" : ", ") + Word(k);
      return ctx.FailNode(n, path, "${trialParameters.<name>} to name one of trialTemplate.trialParameters (" +
                                       known + ")");
    }
    *out += s.substr(pos, at - pos) + it->second;
    pos = close + 1;
  }
  *out += s.substr(pos);
  return Status::Ok();
}

// trialTemplate.trialParameters: name -> what replaces its placeholder.
Status TrialParameters(Ctx& ctx, const YAML::Node& tt, const std::string& path,
                       const std::map<std::string, std::string>& params, const std::string& namespace_,
                       const std::string& kind, const std::string& api_version, Substitutions* subs) {
  YAML::Node list = Get(tt, "trialParameters");
  if (!Present(list)) return Status::Ok();
  std::string lp = Child(path, "trialParameters");
  TUNE_RETURN_IF_ERROR(ctx.Seq(list, lp));
  // Katib's trial metadata references; the trial's name is ours.
  const std::map<std::string, std::string> kMeta = {{"${trialSpec.Name}", "${experiment}-${trial_id}"},
                                                    {"${trialSpec.Namespace}", namespace_},
                                                    {"${trialSpec.Kind}", kind},
                                                    {"${trialSpec.APIVersion}", api_version}};
  for (size_t i = 0; i < list.size(); ++i) {
    std::string ip = Index(lp, i), name, reference;
    TUNE_RETURN_IF_ERROR(ctx.Map(list[i], ip));
    if (!Present(Get(list[i], "name"))) return ctx.Missing(list[i], Child(ip, "name"), "the trial parameter's name");
    TUNE_RETURN_IF_ERROR(ctx.String(Get(list[i], "name"), Child(ip, "name"), &name));
    YAML::Node ref = Get(list[i], "reference");
    if (!Present(ref)) return ctx.Missing(list[i], Child(ip, "reference"), "the name of a parameter");
    TUNE_RETURN_IF_ERROR(ctx.String(ref, Child(ip, "reference"), &reference));
    if (auto p = params.find(reference); p != params.end()) {
      (*subs)[name] = "${" + p->second + "}";
    } else if (auto m = kMeta.find(reference); m != kMeta.end()) {
      (*subs)[name] = m->second;
    } else {
      std::string known;
      for (const auto& [k, v] : params) known += Word(k) + ", ";
      return ctx.FailNode(ref, Child(ip, "reference"),
                          "the name of a parameter (" + known +
                              "or ${trialSpec.Name}, ${trialSpec.Namespace}, ${trialSpec.Kind}, "
                              "${trialSpec.APIVersion})");
    }
    ctx.NoteOthers(list[i], ip, {"name", "reference", "description"});
  }
  return Status::Ok();
}

// A Kubernetes CPU quantity ("500m", "2", "0.5") in cores.
bool CpuCores(const std::string& q, double* out) {
  std::string s = q;
  double scale = 1;
  if (!s.empty() && s.back() == 'm') {
    s.pop_back();
    scale = 1e-3;
  }
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) return false;
  *out = v * scale;
  return true;
}

Status Resources(Ctx& ctx, const YAML::Node& r, const std::string& path, Json* out) {
  TUNE_RETURN_IF_ERROR(ctx.Map(r, path));
  YAML::Node requests = Get(r, "requests"), limits = Get(r, "limits");
  if (Present(requests)) TUNE_RETURN_IF_ERROR(ctx.Map(requests, Child(path, "requests")));
  if (Present(limits)) TUNE_RETURN_IF_ERROR(ctx.Map(limits, Child(path, "limits")));
  ctx.NoteOthers(r, path, {"requests", "limits"});
  std::set<std::string> names;
  for (const YAML::Node& m : {requests, limits}) {
    if (Present(m)) {
      for (const auto& kv : m) names.insert(kv.first.Scalar());
    }
  }
  *out = Json::object();
  for (const std::string& name : names) {
    YAML::Node req = Get(requests, name), lim = Get(limits, name);
    // As Kubernetes does: a limit without a request is also the request.
    YAML::Node v = Present(req) ? req : lim;
    std::string vp = Child(Child(path, Present(req) ? "requests" : "limits"), name), text;
    TUNE_RETURN_IF_ERROR(ctx.String(v, vp, &text));
    if (name == "cpu") {
      double cores = 0;
      if (!CpuCores(text, &cores)) return ctx.FailNode(v, vp, "a CPU quantity (\"500m\", \"2\")");
      (*out)["cpu"] = cores;
      if (Present(lim)) {
        ctx.Note(Child(Child(path, "limits"), "cpu"),
                 Present(req) ? "not carried over (tune requests CPU and sets no CPU limit)"
                              : "carried over as the CPU request (tune sets no CPU limit)");
      }
    } else if (name == "memory") {
      (*out)["memory"] = text;
      if (Present(req) && Present(lim) && req.Scalar() != lim.Scalar()) {
        ctx.Note(Child(Child(path, "limits"), "memory"),
                 "not carried over (tune's memory is both the request and the limit: the request)");
      }
    } else if (name == "nvidia.com/gpu") {
      int64_t gpus = 0;
      TUNE_RETURN_IF_ERROR(ctx.Integer(v, vp, &gpus));
      (*out)["gpu"] = gpus;
    } else {
      ctx.Note(Child(Child(path, Present(req) ? "requests" : "limits"), name),
               "not carried over (tune requests cpu, memory and nvidia.com/gpu)");
    }
  }
  return Status::Ok();
}

Status Container(Ctx& ctx, const YAML::Node& c, const std::string& path, const Substitutions& subs,
                 bool pytorchjob, Json* trial, Json* backend) {
  YAML::Node command = Get(c, "command"), args = Get(c, "args");
  if (!Present(command)) {
    return ctx.Missing(c, Child(path, "command"),
                       "the training command (tune runs an argv and does not know the image's entrypoint)");
  }
  Json argv = Json::array();
  for (const auto& [key, node] : {std::pair{std::string("command"), command}, std::pair{std::string("args"), args}}) {
    if (!Present(node)) continue;
    std::string kp = Child(path, key);
    TUNE_RETURN_IF_ERROR(ctx.Seq(node, kp));
    for (size_t i = 0; i < node.size(); ++i) {
      std::string item;
      TUNE_RETURN_IF_ERROR(Substitute(ctx, node[i], Index(kp, i), subs, &item));
      argv.push_back(item);
    }
  }
  (*trial)["command"] = argv;

  if (YAML::Node image = Get(c, "image"); Present(image)) {
    std::string s;
    TUNE_RETURN_IF_ERROR(ctx.String(image, Child(path, "image"), &s));
    if (s.find("${") != std::string::npos) {
      return ctx.FailNode(image, Child(path, "image"), "one image for every trial (tune does not vary it by parameter)");
    }
    (*backend)["image"] = s;
  } else {
    return ctx.Missing(c, Child(path, "image"), "the trial's container image");
  }
  if (YAML::Node policy = Get(c, "imagePullPolicy"); Present(policy)) {
    std::string s;
    TUNE_RETURN_IF_ERROR(ctx.String(policy, Child(path, "imagePullPolicy"), &s));
    (*backend)["image_pull_policy"] = s;
  }
  if (YAML::Node env = Get(c, "env"); Present(env)) {
    std::string ep = Child(path, "env");
    TUNE_RETURN_IF_ERROR(ctx.Seq(env, ep));
    Json vars = Json::object();
    for (size_t i = 0; i < env.size(); ++i) {
      std::string ip = Index(ep, i), name, value;
      TUNE_RETURN_IF_ERROR(ctx.Map(env[i], ip));
      TUNE_RETURN_IF_ERROR(ctx.String(Get(env[i], "name"), Child(ip, "name"), &name));
      if (Present(Get(env[i], "valueFrom"))) {
        ctx.Note(ip, Word(name) + " not carried over (tune's trial.env holds plain values, not valueFrom)");
        continue;
      }
      if (TunerSetsVariable(name) || (pytorchjob && name.rfind("PET_", 0) == 0)) {
        ctx.Note(ip, Word(name) + " not carried over (tune" + std::string(pytorchjob ? " or the training operator" : "") +
                         " sets it for every worker)");
        continue;
      }
      if (!EnvName(name)) {
        ctx.Note(ip, Word(name) + " not carried over (tune's variable names are letters, digits and _)");
        continue;
      }
      if (Present(Get(env[i], "value"))) TUNE_RETURN_IF_ERROR(Substitute(ctx, Get(env[i], "value"), Child(ip, "value"), subs, &value));
      vars[name] = value;
    }
    if (!vars.empty()) (*trial)["env"] = vars;
  }
  if (YAML::Node r = Get(c, "resources"); Present(r)) {
    Json res;
    TUNE_RETURN_IF_ERROR(Resources(ctx, r, Child(path, "resources"), &res));
    if (!res.empty()) (*trial)["resources_per_worker"] = res;
  }
  if (YAML::Node mounts = Get(c, "volumeMounts"); Present(mounts)) {
    TUNE_RETURN_IF_ERROR(ctx.Seq(mounts, Child(path, "volumeMounts")));
    (*backend)["volume_mounts"] = Ctx::ToJson(mounts);
  }
  ctx.NoteOthers(c, path, {"name", "image", "imagePullPolicy", "command", "args", "env", "resources", "volumeMounts"},
                 {{"ports", pytorchjob ? "not carried over (tune names the master's port pytorchjob-port, as the "
                                         "training operator expects)"
                                       : "not carried over (tune gives MASTER_PORT to distributed trials)"},
                  {"workingDir", "not carried over (the trial runs in the image's working directory)"}});
  return Status::Ok();
}

Status PodTemplate(Ctx& ctx, const YAML::Node& tmpl, const std::string& path, const std::string& primary,
                   const Substitutions& subs, bool pytorchjob, Json* trial, Json* backend) {
  if (!Present(tmpl)) return ctx.Missing(tmpl, path, "the pod template");
  TUNE_RETURN_IF_ERROR(ctx.Map(tmpl, path));
  ctx.NoteOthers(tmpl, path, {"spec"},
                 {{"metadata", "not carried over (backend.labels and backend.annotations label every object)"}});
  std::string sp = Child(path, "spec");
  YAML::Node pod = Get(tmpl, "spec");
  if (!Present(pod)) return ctx.Missing(tmpl, sp, "the pod spec");
  TUNE_RETURN_IF_ERROR(ctx.Map(pod, sp));
  YAML::Node containers = Get(pod, "containers");
  std::string cp = Child(sp, "containers");
  if (!Present(containers)) return ctx.Missing(pod, cp, "the pod's containers");
  TUNE_RETURN_IF_ERROR(ctx.Seq(containers, cp));
  bool found = false;
  for (size_t i = 0; i < containers.size(); ++i) {
    std::string name;
    TUNE_RETURN_IF_ERROR(ctx.Map(containers[i], Index(cp, i)));
    if (Present(Get(containers[i], "name"))) name = Get(containers[i], "name").Scalar();
    if (name == primary && !found) {
      found = true;
      TUNE_RETURN_IF_ERROR(Container(ctx, containers[i], Index(cp, i), subs, pytorchjob, trial, backend));
    } else {
      ctx.Note(Index(cp, i), "container " + Word(name) + " not carried over (tune runs one container per worker)");
    }
  }
  if (!found) {
    return ctx.Fail(containers, cp, "a container named \"" + primary + "\" (trialTemplate.primaryContainerName)",
                    "none");
  }
  if (YAML::Node sa = Get(pod, "serviceAccountName"); Present(sa)) {
    std::string s;
    TUNE_RETURN_IF_ERROR(ctx.String(sa, Child(sp, "serviceAccountName"), &s));
    (*backend)["service_account"] = s;
  }
  if (YAML::Node ns = Get(pod, "nodeSelector"); Present(ns)) {
    TUNE_RETURN_IF_ERROR(ctx.Map(ns, Child(sp, "nodeSelector")));
    Json sel = Json::object();
    for (const auto& kv : ns) sel[kv.first.Scalar()] = kv.second.Scalar();
    (*backend)["node_selector"] = sel;
  }
  for (const auto& [key, ours] : {std::pair{"tolerations", "tolerations"}, std::pair{"volumes", "volumes"}}) {
    if (YAML::Node n = Get(pod, key); Present(n)) {
      TUNE_RETURN_IF_ERROR(ctx.Seq(n, Child(sp, key)));
      (*backend)[ours] = Ctx::ToJson(n);
    }
  }
  ctx.NoteOthers(pod, sp, {"containers", "serviceAccountName", "nodeSelector", "tolerations", "volumes"},
                 {{"restartPolicy", "not carried over (tune retries a failed trial itself: trial.max_retries)"}});
  return Status::Ok();
}

// Job's and PyTorchJob runPolicy's shared fields.
Status RunPolicy(Ctx& ctx, const YAML::Node& m, const std::string& path, Json* trial, Json* backend) {
  if (YAML::Node n = Get(m, "activeDeadlineSeconds"); Present(n)) {
    int64_t v = 0;
    TUNE_RETURN_IF_ERROR(ctx.Integer(n, Child(path, "activeDeadlineSeconds"), &v));
    (*trial)["timeout_s"] = v;
  }
  if (YAML::Node n = Get(m, "backoffLimit"); Present(n)) {
    int64_t v = 0;
    TUNE_RETURN_IF_ERROR(ctx.Integer(n, Child(path, "backoffLimit"), &v));
    (*backend)["backoff_limit"] = v;
  }
  if (YAML::Node n = Get(m, "ttlSecondsAfterFinished"); Present(n)) {
    int64_t v = 0;
    TUNE_RETURN_IF_ERROR(ctx.Integer(n, Child(path, "ttlSecondsAfterFinished"), &v));
    (*backend)["ttl_seconds_after_finished"] = v;
  }
  return Status::Ok();
}

Status Replicas(Ctx& ctx, const YAML::Node& r, const std::string& path, int64_t* out) {
  *out = 1;  // the training operator's default
  if (YAML::Node n = Get(r, "replicas"); Present(n)) TUNE_RETURN_IF_ERROR(ctx.Integer(n, Child(path, "replicas"), out));
  if (*out < 0) return ctx.FailNode(Get(r, "replicas"), Child(path, "replicas"), "a number of replicas of at least 0");
  return Status::Ok();
}

}  // namespace

Status ConvertTrialTemplate(Ctx& ctx, const YAML::Node& tt, const std::string& path,
                            const std::map<std::string, std::string>& params, const std::string& namespace_,
                            Json* trial, Json* backend) {
  TUNE_RETURN_IF_ERROR(ctx.Map(tt, path));
  std::string tp = Child(path, "trialSpec");
  YAML::Node ts = Get(tt, "trialSpec");
  if (!Present(ts)) {
    if (Present(Get(tt, "configMap"))) {
      return ctx.Fail(Get(tt, "configMap"), Child(path, "configMap"),
                      "the trial template inline as trialSpec (tune does not read ConfigMaps)", "a configMap");
    }
    return ctx.Missing(tt, tp, "the trial's Job or PyTorchJob");
  }
  TUNE_RETURN_IF_ERROR(ctx.Map(ts, tp));
  std::string api_version, kind;
  TUNE_RETURN_IF_ERROR(ctx.String(Get(ts, "apiVersion"), Child(tp, "apiVersion"), &api_version));
  TUNE_RETURN_IF_ERROR(ctx.String(Get(ts, "kind"), Child(tp, "kind"), &kind));
  bool job = api_version == "batch/v1" && kind == "Job";
  bool pytorchjob = api_version == "kubeflow.org/v1" && kind == "PyTorchJob";
  if (!job && !pytorchjob) {
    return ctx.Fail(ts, Child(tp, "kind"), "Job (batch/v1) or PyTorchJob (kubeflow.org/v1)",
                    Word(kind) + " (" + Word(api_version) + ")");
  }
  (*backend)["job_kind"] = job ? "job" : "pytorchjob";

  std::string primary = pytorchjob ? "pytorch" : "";
  if (YAML::Node n = Get(tt, "primaryContainerName"); Present(n)) {
    TUNE_RETURN_IF_ERROR(ctx.String(n, Child(path, "primaryContainerName"), &primary));
  } else if (job) {
    return ctx.Missing(tt, Child(path, "primaryContainerName"), "the name of the training container");
  }
  Substitutions subs;
  TUNE_RETURN_IF_ERROR(TrialParameters(ctx, tt, path, params, namespace_, kind, api_version, &subs));
  ctx.NoteOthers(tt, path, {"trialSpec", "primaryContainerName", "trialParameters"},
                 {{"retain", "not carried over (tune deletes a trial's objects when it ends)"},
                  {"successCondition", "not carried over (tune reads the job's own conditions)"},
                  {"failureCondition", "not carried over (tune reads the job's own conditions)"},
                  {"primaryPodLabels", "not carried over (tune reads metrics from rank 0's log)"}});
  ctx.NoteOthers(ts, tp, {"apiVersion", "kind", "spec"},
                 {{"metadata", "not carried over (backend.labels and backend.annotations label every object)"}});

  std::string sp = Child(tp, "spec");
  YAML::Node spec = Get(ts, "spec");
  if (!Present(spec)) return ctx.Missing(ts, sp, "the " + kind + "'s spec");
  TUNE_RETURN_IF_ERROR(ctx.Map(spec, sp));
  if (job) {
    TUNE_RETURN_IF_ERROR(PodTemplate(ctx, Get(spec, "template"), Child(sp, "template"), primary, subs, false, trial,
                                     backend));
    TUNE_RETURN_IF_ERROR(RunPolicy(ctx, spec, sp, trial, backend));
    ctx.NoteOthers(spec, sp, {"template", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"},
                   {{"parallelism", "not carried over (trial.workers sets the Indexed Job's parallelism)"},
                    {"completions", "not carried over (trial.workers sets the Indexed Job's completions)"}});
    return Status::Ok();
  }

  std::string rp = Child(sp, "pytorchReplicaSpecs");
  YAML::Node replicas = Get(spec, "pytorchReplicaSpecs");
  if (!Present(replicas)) return ctx.Missing(spec, rp, "the Master and Worker replica specs");
  TUNE_RETURN_IF_ERROR(ctx.Map(replicas, rp));
  YAML::Node master = Get(replicas, "Master"), worker = Get(replicas, "Worker");
  if (!Present(master)) return ctx.Missing(replicas, Child(rp, "Master"), "the Master replica spec");
  TUNE_RETURN_IF_ERROR(ctx.Map(master, Child(rp, "Master")));
  int64_t masters = 1, workers = 0;
  TUNE_RETURN_IF_ERROR(Replicas(ctx, master, Child(rp, "Master"), &masters));
  if (masters != 1) {
    return ctx.FailNode(Get(master, "replicas"), Child(Child(rp, "Master"), "replicas"),
                        "1 (a PyTorchJob has exactly one Master)");
  }
  TUNE_RETURN_IF_ERROR(PodTemplate(ctx, Get(master, "template"), Child(Child(rp, "Master"), "template"), primary,
                                   subs, true, trial, backend));
  ctx.NoteOthers(master, Child(rp, "Master"), {"replicas", "template"},
                 {{"restartPolicy", "not carried over (tune retries a failed trial itself: trial.max_retries)"}});
  if (Present(worker)) {
    TUNE_RETURN_IF_ERROR(ctx.Map(worker, Child(rp, "Worker")));
    TUNE_RETURN_IF_ERROR(Replicas(ctx, worker, Child(rp, "Worker"), &workers));
    if (Ctx::ToJson(Get(worker, "template")) != Ctx::ToJson(Get(master, "template"))) {
      ctx.Note(Child(Child(rp, "Worker"), "template"),
               "not carried over (it differs from Master's; tune runs Master's pod template on every replica)");
    }
    ctx.NoteOthers(worker, Child(rp, "Worker"), {"replicas", "template"},
                   {{"restartPolicy", "not carried over (tune retries a failed trial itself: trial.max_retries)"}});
  }
  ctx.NoteOthers(replicas, rp, {"Master", "Worker"});
  (*trial)["workers"] = masters + workers;
  if (YAML::Node policy = Get(spec, "runPolicy"); Present(policy)) {
    TUNE_RETURN_IF_ERROR(ctx.Map(policy, Child(sp, "runPolicy")));
    TUNE_RETURN_IF_ERROR(RunPolicy(ctx, policy, Child(sp, "runPolicy"), trial, backend));
    ctx.NoteOthers(policy, Child(sp, "runPolicy"), {"activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"},
                   {{"cleanPodPolicy",
                     "not carried over (tune renders None and deletes the PyTorchJob itself once it has read rank "
                     "0's log)"}});
  }
  ctx.NoteOthers(spec, sp, {"pytorchReplicaSpecs", "runPolicy"});
  return Status::Ok();
}

}  // namespace katib_internal
}  // namespace tune
