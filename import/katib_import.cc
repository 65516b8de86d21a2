// The Experiment as a whole: metadata, parameters, objective, algorithm,
// early stopping and limits. The trial template is katib_trial_template.cc.
#include "import/katib_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <yaml-cpp/depthguard.h>

#include "core/read_file.h"
#include "import/katib_yaml.h"

namespace tune {

using katib_internal::CheckText;
using katib_internal::Child;
using katib_internal::Ctx;
using katib_internal::Get;
using katib_internal::Index;
using katib_internal::Json;
using katib_internal::OneLine;
using katib_internal::Present;
using katib_internal::Quote;
using katib_internal::SecondDocumentLine;
using katib_internal::Word;

namespace {

// Katib's defaults (pkg/apis/controller/experiments/v1beta1 and the
// medianstop service).
constexpr int64_t kKatibParallelTrialCount = 3;
constexpr int64_t kMedianStartStep = 4;
constexpr int64_t kMedianMinTrialsRequired = 3;

// A Katib parameter name as an experiment.json one: letters, digits and
// `_`, not starting with a digit ("num-epochs" -> "num_epochs").
std::string ParamName(const std::string& katib) {
  std::string out;
  for (char c : katib) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "p_" + out;
  return out;
}

// A number read from the YAML as a JSON number: integral text ("32") stays
// an integer, anything else ("0.5", "1e-3") a float.
Json NumberJson(const std::string& text, double v) {
  if (text.find_first_of(".eE") == std::string::npos && std::fabs(v) < 9e15) return static_cast<int64_t>(v);
  return v;
}

Status ConvertParameter(Ctx& ctx, const YAML::Node& p, const std::string& path, std::string* name, Json* out) {
  TUNE_RETURN_IF_ERROR(ctx.Map(p, path));
  YAML::Node name_node = Get(p, "name"), type_node = Get(p, "parameterType"), fs = Get(p, "feasibleSpace");
  if (!Present(name_node)) return ctx.Missing(p, Child(path, "name"), "the parameter's name");
  TUNE_RETURN_IF_ERROR(ctx.String(name_node, Child(path, "name"), name));
  std::string type;
  if (!Present(type_node)) return ctx.Missing(p, Child(path, "parameterType"), "double, int, discrete or categorical");
  TUNE_RETURN_IF_ERROR(ctx.String(type_node, Child(path, "parameterType"), &type));
  std::string fs_path = Child(path, "feasibleSpace");
  if (!Present(fs)) return ctx.Missing(p, fs_path, "the parameter's feasibleSpace");
  TUNE_RETURN_IF_ERROR(ctx.Map(fs, fs_path));
  ctx.NoteOthers(p, path, {"name", "parameterType", "feasibleSpace"});

  std::string distribution = "uniform";
  YAML::Node dist_node = Get(fs, "distribution");
  if (Present(dist_node)) TUNE_RETURN_IF_ERROR(ctx.String(dist_node, Child(fs_path, "distribution"), &distribution));
  if (distribution != "uniform" && distribution != "logUniform") {
    return ctx.FailNode(dist_node, Child(fs_path, "distribution"),
                        "uniform or logUniform for parameter " + Quote(*name) + " (tune has no " + Word(distribution) +
                            " distribution; use logUniform or uniform bounds instead)");
  }
  bool log = distribution == "logUniform";

  if (type == "discrete" || type == "categorical") {
    YAML::Node list = Get(fs, "list");
    std::string list_path = Child(fs_path, "list");
    if (!Present(list)) return ctx.Missing(fs, list_path, "the " + type + " parameter's list of values");
    TUNE_RETURN_IF_ERROR(ctx.Seq(list, list_path));
    Json values = Json::array();
    for (size_t i = 0; i < list.size(); ++i) {
      std::string text;
      TUNE_RETURN_IF_ERROR(ctx.String(list[i], Index(list_path, i), &text));
      if (type == "categorical") {
        values.push_back(text);
        continue;
      }
      double v = 0;
      TUNE_RETURN_IF_ERROR(ctx.Number(list[i], Index(list_path, i), &v));
      values.push_back(NumberJson(text, v));
    }
    ctx.NoteOthers(fs, fs_path, {"list"},
                   {{"distribution", "not carried over (a list is chosen from uniformly)"}});
    *out = {{"type", "choice"}, {"values", values}};
    return Status::Ok();
  }
  if (type != "double" && type != "int") {
    return ctx.FailNode(type_node, Child(path, "parameterType"), "double, int, discrete or categorical");
  }

  YAML::Node min_node = Get(fs, "min"), max_node = Get(fs, "max"), step_node = Get(fs, "step");
  if (!Present(min_node)) return ctx.Missing(fs, Child(fs_path, "min"), "the lower bound of a " + type + " parameter");
  if (!Present(max_node)) return ctx.Missing(fs, Child(fs_path, "max"), "the upper bound of a " + type + " parameter");
  ctx.NoteOthers(fs, fs_path, {"min", "max", "step", "distribution"},
                 {{"list", "not carried over (a " + type + " parameter is a range; list is for discrete ones)"}});
  if (type == "double") {
    double lo = 0, hi = 0, step = 0;
    TUNE_RETURN_IF_ERROR(ctx.Number(min_node, Child(fs_path, "min"), &lo));
    TUNE_RETURN_IF_ERROR(ctx.Number(max_node, Child(fs_path, "max"), &hi));
    if (Present(step_node)) {
      TUNE_RETURN_IF_ERROR(ctx.Number(step_node, Child(fs_path, "step"), &step));
      if (step <= 0) return ctx.FailNode(step_node, Child(fs_path, "step"), "a step above 0");
    }
    if (step > 0) {
      *out = {{"type", log ? "qloguniform" : "quniform"}, {"low", lo}, {"high", hi}, {"q", step}};
    } else {
      *out = {{"type", log ? "loguniform" : "uniform"}, {"low", lo}, {"high", hi}};
    }
    return Status::Ok();
  }
  int64_t lo = 0, hi = 0, step = 1;
  TUNE_RETURN_IF_ERROR(ctx.Integer(min_node, Child(fs_path, "min"), &lo));
  TUNE_RETURN_IF_ERROR(ctx.Integer(max_node, Child(fs_path, "max"), &hi));
  if (Present(step_node)) {
    TUNE_RETURN_IF_ERROR(ctx.Integer(step_node, Child(fs_path, "step"), &step));
    if (step <= 0) return ctx.FailNode(step_node, Child(fs_path, "step"), "a step of at least 1");
  }
  if (hi == INT64_MAX) return ctx.FailNode(max_node, Child(fs_path, "max"), "an integer below 2^63-1");
  // Katib's max is inclusive; randint's and lograndint's high is not.
  if (log) {
    if (step > 1) {
      ctx.Note(Child(fs_path, "step"),
               "not carried over (tune has no quantised log-scale integers; lograndint draws every integer, "
               "as Katib's Optuna suggestion does with logUniform)");
    }
    *out = {{"type", "lograndint"}, {"low", lo}, {"high", hi + 1}};
  } else if (step > 1) {
    *out = {{"type", "qrandint"}, {"low", lo}, {"high", hi}, {"q", step}};
  } else {
    *out = {{"type", "randint"}, {"low", lo}, {"high", hi + 1}};
  }
  return Status::Ok();
}

Status ConvertObjective(Ctx& ctx, const YAML::Node& spec, Json* out) {
  const std::string path = "spec.objective";
  YAML::Node o = Get(spec, "objective");
  if (!Present(o)) return ctx.Missing(spec, path, "the objective (type and objectiveMetricName)");
  TUNE_RETURN_IF_ERROR(ctx.Map(o, path));
  std::string type, metric;
  YAML::Node type_node = Get(o, "type"), metric_node = Get(o, "objectiveMetricName");
  if (!Present(type_node)) return ctx.Missing(o, Child(path, "type"), "minimize or maximize");
  TUNE_RETURN_IF_ERROR(ctx.String(type_node, Child(path, "type"), &type));
  if (type != "minimize" && type != "maximize") return ctx.FailNode(type_node, Child(path, "type"), "minimize or maximize");
  if (!Present(metric_node)) return ctx.Missing(o, Child(path, "objectiveMetricName"), "the metric to optimise");
  TUNE_RETURN_IF_ERROR(ctx.String(metric_node, Child(path, "objectiveMetricName"), &metric));
  (*out)["metric"] = metric;
  (*out)["mode"] = type == "minimize" ? "min" : "max";
  if (YAML::Node goal = Get(o, "goal"); Present(goal)) {
    double g = 0;
    TUNE_RETURN_IF_ERROR(ctx.Number(goal, Child(path, "goal"), &g));
    (*out)["goal"] = g;
  }
  // Katib's default strategy for the objective is its type (min or max):
  // a trial's value is its best report.
  std::string scope = "best";
  if (YAML::Node strategies = Get(o, "metricStrategies"); Present(strategies)) {
    std::string sp = Child(path, "metricStrategies");
    TUNE_RETURN_IF_ERROR(ctx.Seq(strategies, sp));
    for (size_t i = 0; i < strategies.size(); ++i) {
      std::string ip = Index(sp, i), name, value;
      TUNE_RETURN_IF_ERROR(ctx.Map(strategies[i], ip));
      TUNE_RETURN_IF_ERROR(ctx.String(Get(strategies[i], "name"), Child(ip, "name"), &name));
      TUNE_RETURN_IF_ERROR(ctx.String(Get(strategies[i], "value"), Child(ip, "value"), &value));
      if (value != "min" && value != "max" && value != "latest") {
        return ctx.FailNode(Get(strategies[i], "value"), Child(ip, "value"), "min, max or latest");
      }
      if (name != metric) {
        ctx.Note(ip, "not carried over (tune records every report of " + Word(name) +
                         "; a strategy matters only for the objective)");
      } else if (value == "latest") {
        scope = "last";
      } else if ((value == "min") != (type == "minimize")) {
        ctx.Note(ip, "not carried over (tune's objective.scope is the last or the best report, not the " +
                         std::string(value == "min" ? "lowest" : "highest") + " one when the goal is to " + type +
                         "); the converted experiment uses the best report");
      }
    }
  }
  (*out)["scope"] = scope;
  if (YAML::Node extra = Get(o, "additionalMetricNames"); Present(extra)) {
    TUNE_RETURN_IF_ERROR(ctx.Seq(extra, Child(path, "additionalMetricNames")));
    std::string names;
    for (const auto& n : extra) names += (names.empty() ? "" : ", ") + Word(n.IsScalar() ? n.Scalar() : "");
    ctx.Note(Child(path, "additionalMetricNames"),
             "recorded without a key: tune stores every metric a trial reports (" + names + ")");
  }
  ctx.NoteOthers(o, path, {"type", "objectiveMetricName", "goal", "metricStrategies", "additionalMetricNames"});
  return Status::Ok();
}

// One of algorithmSettings: its name, value and the value's YAML path.
struct Setting {
  std::string name;
  YAML::Node value;
  std::string path;
};

// The algorithmSettings, in order, each checked against `allowed` (the
// settings Katib itself accepts for the algorithm).
Status Settings(Ctx& ctx, const YAML::Node& algo, const std::string& path, const std::string& algorithm,
                const std::vector<std::string>& allowed, std::vector<Setting>* out) {
  YAML::Node settings = Get(algo, "algorithmSettings");
  if (!Present(settings)) return Status::Ok();
  std::string sp = Child(path, "algorithmSettings");
  TUNE_RETURN_IF_ERROR(ctx.Seq(settings, sp));
  for (size_t i = 0; i < settings.size(); ++i) {
    std::string ip = Index(sp, i), name;
    TUNE_RETURN_IF_ERROR(ctx.Map(settings[i], ip));
    TUNE_RETURN_IF_ERROR(ctx.String(Get(settings[i], "name"), Child(ip, "name"), &name));
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string list;
      for (size_t k = 0; k < allowed.size(); ++k) {
        list += (k == 0 ? "" : k + 1 == allowed.size() ? " or " : ", ") + allowed[k];
      }
      return ctx.FailNode(Get(settings[i], "name"), Child(ip, "name"),
                          allowed.empty() ? "no settings for " + algorithm
                                          : "a setting of " + algorithm + " (" + list + ")");
    }
    YAML::Node value = Get(settings[i], "value");
    if (!Present(value)) return ctx.Missing(settings[i], Child(ip, "value"), "the setting's value");
    out->push_back({name, value, Child(ip, "value")});
  }
  return Status::Ok();
}

const char* const kAlgorithms = "random, tpe, multivariate-tpe, bayesianoptimization, grid or pbt";

// One algorithmSetting of bayesianoptimization (Katib's scikit-optimize
// service): base_estimator must be a Gaussian process, which is what tune's
// gp sampler is; acq_func and acq_optimizer are dropped with a note (tune's
// acquisition is log expected improvement, as Optuna's GPSampler).
// Returns true when the setting is handled here.
Result<bool> BayesianSetting(Ctx& ctx, const Setting& s) {
  if (s.name == "base_estimator") {
    std::string estimator;
    TUNE_RETURN_IF_ERROR(ctx.String(s.value, s.path, &estimator));
    if (estimator != "GP") {
      return ctx.FailNode(s.value, s.path,
                          "GP (tune's Bayesian optimisation is a Gaussian process; it has no " + estimator + ")");
    }
    return true;
  }
  if (s.name == "acq_func" || s.name == "acq_optimizer") {
    ctx.Note(s.path, "not carried over (tune's gp sampler maximises log expected improvement, as Optuna's "
                     "GPSampler)");
    return true;
  }
  return false;
}

Status ConvertAlgorithm(Ctx& ctx, const YAML::Node& spec, Json* out) {
  const std::string path = "spec.algorithm";
  YAML::Node a = Get(spec, "algorithm");
  if (!Present(a)) return ctx.Missing(spec, path, "the search algorithm (algorithmName)");
  TUNE_RETURN_IF_ERROR(ctx.Map(a, path));
  YAML::Node name_node = Get(a, "algorithmName");
  std::string name;
  if (!Present(name_node)) return ctx.Missing(a, Child(path, "algorithmName"), kAlgorithms);
  TUNE_RETURN_IF_ERROR(ctx.String(name_node, Child(path, "algorithmName"), &name));
  static const std::map<std::string, std::string> kInstead = {
      {"cmaes", "tpe with multivariate (multivariate-tpe), which also models parameters jointly"},
      {"hyperband", "random or tpe with tune's ASHA scheduler (\"scheduler\": {\"type\": \"asha\"}), the "
                    "asynchronous form of Hyperband"},
      {"sobol", "random, tune's space-filling start"},
      {"enas", "tune does no neural architecture search"},
      {"darts", "tune does no neural architecture search"},
  };
  std::vector<std::string> allowed;
  if (name == "random") {
    (*out)["algorithm"] = "random";
    allowed = {"random_state"};
  } else if (name == "tpe" || name == "multivariate-tpe") {
    (*out)["algorithm"] = "tpe";
    allowed = {"random_state", "n_startup_trials", "n_ei_candidates"};
  } else if (name == "bayesianoptimization") {
    (*out)["algorithm"] = "gp";
    allowed = {"random_state", "n_initial_points", "base_estimator", "acq_func", "acq_optimizer"};
  } else if (name == "grid") {
    (*out)["algorithm"] = "grid";
  } else if (name == "pbt") {
    // The first population is drawn at random (Katib's _seed_from_base);
    // the settings become the pbt scheduler (katib_pbt.cc).
    (*out)["algorithm"] = "random";
    ctx.NoteOthers(a, path, {"algorithmName", "algorithmSettings"});
    return Status::Ok();
  } else {
    auto it = kInstead.find(name);
    return ctx.FailNode(name_node, Child(path, "algorithmName"),
                        kAlgorithms +
                            (it != kInstead.end() ? " (instead of " + name + ": " + it->second + ")" : std::string()));
  }
  std::vector<Setting> settings;
  TUNE_RETURN_IF_ERROR(Settings(ctx, a, path, name, allowed, &settings));
  for (const Setting& s : settings) {
    if (name == "bayesianoptimization") {
      TUNE_ASSIGN_OR_RETURN(bool handled, BayesianSetting(ctx, s));
      if (handled) continue;
    }
    int64_t v = 0;
    TUNE_RETURN_IF_ERROR(ctx.Integer(s.value, s.path, &v));
    if (v < 0) return ctx.FailNode(s.value, s.path, "an integer of at least 0");
    if (s.name == "n_initial_points" && v < 1) return ctx.FailNode(s.value, s.path, "an integer of at least 1");
    (*out)[s.name == "random_state" ? "seed" : s.name == "n_initial_points" ? "n_startup_trials" : s.name] = v;
  }
  // Katib's tpe is Optuna's univariate TPESampler (its own algorithm name
  // for the joint one), while tune's TPE is multivariate by default.
  if (name == "tpe" || name == "multivariate-tpe") (*out)["multivariate"] = name == "multivariate-tpe";
  ctx.NoteOthers(a, path, {"algorithmName", "algorithmSettings"});
  return Status::Ok();
}

Status ConvertEarlyStopping(Ctx& ctx, const YAML::Node& spec, Json* out) {
  const std::string path = "spec.earlyStopping";
  YAML::Node e = Get(spec, "earlyStopping");
  if (!Present(e)) return Status::Ok();
  TUNE_RETURN_IF_ERROR(ctx.Map(e, path));
  YAML::Node name_node = Get(e, "algorithmName");
  std::string name;
  if (!Present(name_node)) return ctx.Missing(e, Child(path, "algorithmName"), "medianstop");
  TUNE_RETURN_IF_ERROR(ctx.String(name_node, Child(path, "algorithmName"), &name));
  if (name != "medianstop") {
    return ctx.FailNode(name_node, Child(path, "algorithmName"),
                        "medianstop (tune also offers ASHA: \"scheduler\": {\"type\": \"asha\"})");
  }
  std::vector<Setting> settings;
  TUNE_RETURN_IF_ERROR(Settings(ctx, e, path, name, {"min_trials_required", "start_step"}, &settings));
  int64_t start_step = kMedianStartStep, min_trials = kMedianMinTrialsRequired;
  for (const Setting& s : settings) {
    TUNE_RETURN_IF_ERROR(ctx.Integer(s.value, s.path, s.name == "start_step" ? &start_step : &min_trials));
  }
  *out = {{"type", "median"}, {"grace_period", start_step}, {"min_samples_required", min_trials}};
  ctx.NoteOthers(e, path, {"algorithmName", "algorithmSettings"});
  return Status::Ok();
}

Status ConvertLimits(Ctx& ctx, const YAML::Node& spec, Json* out) {
  int64_t parallel = kKatibParallelTrialCount;
  if (YAML::Node n = Get(spec, "parallelTrialCount"); Present(n)) {
    TUNE_RETURN_IF_ERROR(ctx.Integer(n, "spec.parallelTrialCount", &parallel));
  }
  if (YAML::Node n = Get(spec, "maxTrialCount"); Present(n)) {
    int64_t v = 0;
    TUNE_RETURN_IF_ERROR(ctx.Integer(n, "spec.maxTrialCount", &v));
    (*out)["max_trials"] = v;
  } else {
    ctx.Note("spec.maxTrialCount", "absent: Katib runs trials until the goal is reached, tune stops after "
                                   "limits.max_trials (10 unless set; with grid search, the grid's size)");
  }
  (*out)["max_concurrent_trials"] = parallel;
  if (YAML::Node n = Get(spec, "maxFailedTrialCount"); Present(n)) {
    int64_t v = 0;
    TUNE_RETURN_IF_ERROR(ctx.Integer(n, "spec.maxFailedTrialCount", &v));
    if (v < 0) return ctx.FailNode(n, "spec.maxFailedTrialCount", "an integer of at least 0");
    // Katib fails the experiment when more than maxFailedTrialCount trials
    // failed; tune when max_failed_trials have.
    (*out)["max_failed_trials"] = v + 1;
  }
  return Status::Ok();
}

Status Convert(Ctx& ctx, const YAML::Node& doc, Json* out) {
  TUNE_RETURN_IF_ERROR(ctx.Map(doc, "the document"));
  std::string api_version, kind;
  YAML::Node api_node = Get(doc, "apiVersion"), kind_node = Get(doc, "kind");
  if (!Present(api_node)) return ctx.Missing(doc, "apiVersion", "kubeflow.org/v1beta1");
  TUNE_RETURN_IF_ERROR(ctx.String(api_node, "apiVersion", &api_version));
  if (api_version != "kubeflow.org/v1beta1") return ctx.FailNode(api_node, "apiVersion", "kubeflow.org/v1beta1");
  if (!Present(kind_node)) return ctx.Missing(doc, "kind", "Experiment");
  TUNE_RETURN_IF_ERROR(ctx.String(kind_node, "kind", &kind));
  if (kind != "Experiment") return ctx.FailNode(kind_node, "kind", "Experiment");

  YAML::Node meta = Get(doc, "metadata"), spec = Get(doc, "spec");
  if (!Present(meta)) return ctx.Missing(doc, "metadata", "the Experiment's metadata with its name");
  TUNE_RETURN_IF_ERROR(ctx.Map(meta, "metadata"));
  std::string name, namespace_ = "default";
  if (!Present(Get(meta, "name"))) return ctx.Missing(meta, "metadata.name", "the Experiment's name");
  TUNE_RETURN_IF_ERROR(ctx.String(Get(meta, "name"), "metadata.name", &name));
  if (Present(Get(meta, "namespace"))) TUNE_RETURN_IF_ERROR(ctx.String(Get(meta, "namespace"), "metadata.namespace", &namespace_));
  const std::string kNoObject =
      "not carried over (tune creates no Experiment object; backend.labels and backend.annotations label every "
      "trial object)";
  ctx.NoteOthers(meta, "metadata", {"name", "namespace"}, {{"labels", kNoObject}, {"annotations", kNoObject}});
  ctx.NoteOthers(doc, "", {"apiVersion", "kind", "metadata", "spec"},
                 {{"status", "not carried over (the Experiment's status belongs to the cluster it ran on)"}});
  if (!Present(spec)) return ctx.Missing(doc, "spec", "the Experiment's spec");
  TUNE_RETURN_IF_ERROR(ctx.Map(spec, "spec"));
  if (YAML::Node nas = Get(spec, "nasConfig"); Present(nas)) {
    return ctx.Fail(nas, "spec.nasConfig", "parameters (tune does no neural architecture search)", "nasConfig");
  }

  Json objective = Json::object(), parameters = Json::object(), search = Json::object(), scheduler;
  Json limits = Json::object(), trial = Json::object();
  Json backend = {{"type", "kubernetes"}, {"job_kind", "job"}, {"namespace", namespace_}};
  TUNE_RETURN_IF_ERROR(ConvertObjective(ctx, spec, &objective));

  YAML::Node params = Get(spec, "parameters");
  if (!Present(params)) return ctx.Missing(spec, "spec.parameters", "a list of parameters");
  TUNE_RETURN_IF_ERROR(ctx.Seq(params, "spec.parameters"));
  std::map<std::string, std::string> names;  // Katib name -> ours
  for (size_t i = 0; i < params.size(); ++i) {
    std::string path = Index("spec.parameters", i), katib_name;
    Json p;
    TUNE_RETURN_IF_ERROR(ConvertParameter(ctx, params[i], path, &katib_name, &p));
    std::string ours = ParamName(katib_name);
    if (names.count(katib_name) || parameters.contains(ours)) {
      return ctx.Fail(params[i], Child(path, "name"),
                      "a name no other parameter has, also as tune writes it (" + ours + ")",
                      Quote(katib_name));
    }
    if (ours != katib_name) {
      ctx.Note(Child(path, "name"), Quote(katib_name) + " is parameter \"" + ours +
                                        "\" (tune's names are letters, digits and _)");
    }
    names[katib_name] = ours;
    parameters[ours] = std::move(p);
  }
  TUNE_RETURN_IF_ERROR(ConvertAlgorithm(ctx, spec, &search));
  TUNE_RETURN_IF_ERROR(ConvertEarlyStopping(ctx, spec, &scheduler));
  TUNE_RETURN_IF_ERROR(ConvertLimits(ctx, spec, &limits));
  if (YAML::Node a = Get(spec, "algorithm"); Present(Get(a, "algorithmName")) && Get(a, "algorithmName").IsScalar() &&
                                              Get(a, "algorithmName").Scalar() == "pbt") {
    TUNE_RETURN_IF_ERROR(katib_internal::ConvertPbt(ctx, spec, &scheduler, &limits));
  }

  YAML::Node tt = Get(spec, "trialTemplate");
  if (!Present(tt)) return ctx.Missing(spec, "spec.trialTemplate", "the trial template");
  TUNE_RETURN_IF_ERROR(katib_internal::ConvertTrialTemplate(ctx, tt, "spec.trialTemplate", names, namespace_, &trial,
                                                            &backend));

  if (YAML::Node mc = Get(spec, "metricsCollectorSpec"); Present(mc)) {
    TUNE_RETURN_IF_ERROR(ctx.Map(mc, "spec.metricsCollectorSpec"));
    std::string kind_name = "StdOut";
    YAML::Node collector = Get(mc, "collector");
    if (Present(collector)) {
      TUNE_RETURN_IF_ERROR(ctx.Map(collector, "spec.metricsCollectorSpec.collector"));
      if (Present(Get(collector, "kind"))) {
        TUNE_RETURN_IF_ERROR(ctx.String(Get(collector, "kind"), "spec.metricsCollectorSpec.collector.kind", &kind_name));
      }
      ctx.NoteOthers(collector, "spec.metricsCollectorSpec.collector", {"kind"});
    }
    if (kind_name != "StdOut" && kind_name != "None") {
      ctx.Note("spec.metricsCollectorSpec.collector.kind",
               "warning: the " + Word(kind_name) +
                   " collector is not carried over; tune reads metrics only from rank 0's stdout "
                   "(name=value or JSON lines), so the trial must print them there");
    }
    ctx.NoteOthers(mc, "spec.metricsCollectorSpec", {"collector"},
                   {{"source", "not carried over (tune reads name=value or JSON lines from stdout, "
                               "with Katib's default format)"}});
  }
  ctx.NoteOthers(spec, "spec",
                 {"objective", "parameters", "algorithm", "earlyStopping", "parallelTrialCount", "maxTrialCount",
                  "maxFailedTrialCount", "trialTemplate", "metricsCollectorSpec", "nasConfig"},
                 {{"resumePolicy", "not carried over (tune run --resume continues an experiment from its database)"}});

  (*out)["name"] = name;
  (*out)["objective"] = std::move(objective);
  (*out)["parameters"] = std::move(parameters);
  (*out)["search"] = std::move(search);
  if (!scheduler.is_null()) (*out)["scheduler"] = std::move(scheduler);
  (*out)["limits"] = std::move(limits);
  (*out)["trial"] = std::move(trial);
  (*out)["backend"] = std::move(backend);
  return Status::Ok();
}

}  // namespace

Result<KatibImport> ImportKatibExperiment(const std::string& yaml_text, const std::string& path) {
  if (yaml_text.size() > kKatibMaxYamlBytes) {
    return Status::InvalidArgument(path + ": expected at most " + ByteCount(kKatibMaxYamlBytes) + " of YAML, got " +
                                   std::to_string(yaml_text.size()) + " bytes");
  }
  if (Status st = CheckText(yaml_text, path); !st.ok()) return st;
  // YAML::Load reads the first document only: yaml-cpp 0.7's LoadAll can
  // loop forever, allocating, on some malformed input (fixed upstream after
  // 0.8). A second document is found by its marker instead.
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml_text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's parser stops at about 1000 levels, before its stack does.
    std::string where = e.mark.is_null() ? "" : "line " + std::to_string(e.mark.line + 1) + ": ";
    return Status::InvalidArgument(path + ": " + where + "expected at most " + std::to_string(kKatibMaxDepth) +
                                   " levels of nesting, got more");
  } catch (const YAML::ParserException& e) {
    std::string where = e.mark.is_null() ? "" : "line " + std::to_string(e.mark.line + 1) + ", column " +
                                                    std::to_string(e.mark.column + 1) + ": ";
    return Status::InvalidArgument(path + ": " + where + "expected valid YAML (" + OneLine(e.msg) + ")");
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ": expected valid YAML (" + OneLine(e.msg) + ")");
  }
  if (!Present(doc)) return Status::InvalidArgument(path + ": expected a Katib Experiment, got an empty document");
  if (int line = SecondDocumentLine(yaml_text); line > 0) {
    return Status::InvalidArgument(path + ": line " + std::to_string(line) +
                                   ": expected one YAML document (a Katib Experiment), got a second one");
  }
  Ctx ctx(path);
  Json out = Json::object();
  try {
    // Before anything else walks the tree: an alias may name a huge tree
    // or hold itself.
    TUNE_RETURN_IF_ERROR(katib_internal::CheckExpansion(doc, path));
    TUNE_RETURN_IF_ERROR(katib_internal::ExpandMerges(ctx, doc, ""));
    TUNE_RETURN_IF_ERROR(Convert(ctx, doc, &out));
  } catch (const YAML::Exception& e) {
    // Bad conversions are checked before they happen; this is a safety net
    // so that no yaml-cpp exception leaves the module.
    return Status::InvalidArgument(path + ": line " + std::to_string(e.mark.line + 1) + ": " + OneLine(e.msg));
  }
  KatibImport result;
  // As DumpJson does (CheckText has refused invalid UTF-8 already), but on
  // the ordered_json itself: DumpJson's nlohmann::json would sort the keys.
  result.experiment_json = out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  result.notes = ctx.TakeNotes();
  return result;
}

}  // namespace tune
