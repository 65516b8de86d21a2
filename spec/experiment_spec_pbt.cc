// experiment.json `scheduler` of type "pbt" (docs/experiment.md, "Population
// Based Training"): the keys of Ray Tune's PopulationBasedTraining, the
// mutated parameters, and the refusal to mutate a LoRA rank.
#include <set>

#include "spec/experiment_spec_reader.h"

namespace tune {
namespace spec_internal {
namespace {

const char* KindOf(const Distribution& d) {
  if (std::holds_alternative<FloatDistribution>(d)) return "a float distribution (uniform, loguniform, quniform or qloguniform)";
  if (std::holds_alternative<IntDistribution>(d)) return "an integer distribution (randint, qrandint or lograndint)";
  return "a choice distribution (choice or grid)";
}

std::vector<std::string> Names(const SearchSpace& params) {
  std::vector<std::string> names;
  for (const auto& [name, dist] : params) names.push_back(name);
  return names;
}

}  // namespace

Status ParsePbtKeys(const ObjectReader& s, SchedulerSpec* out) {
  TUNE_RETURN_IF_ERROR(s.AllowOnly({"type", "time_attr", "metric", "max_t", "perturbation_interval",
                                    "burn_in_period", "quantile_fraction", "resample_probability",
                                    "perturbation_factors", "hyperparam_mutations", "synch"},
                                   "for type \"pbt\""));
  // Ray's PBT runs until a stopper ends it: here a trial runs to max_t.
  TUNE_RETURN_IF_ERROR(s.Int("max_t", &out->max_t, Need::kRequired));
  TUNE_RETURN_IF_ERROR(s.Expect(out->max_t >= 1, "max_t", "an integer of at least 1"));
  TUNE_RETURN_IF_ERROR(s.Int("perturbation_interval", &out->perturbation_interval));
  TUNE_RETURN_IF_ERROR(
      s.Expect(out->perturbation_interval >= 1, "perturbation_interval", "an integer of at least 1"));
  TUNE_RETURN_IF_ERROR(s.Int("burn_in_period", &out->burn_in_period));
  TUNE_RETURN_IF_ERROR(s.Expect(out->burn_in_period >= 0, "burn_in_period", "an integer of at least 0"));
  TUNE_RETURN_IF_ERROR(s.Double("quantile_fraction", &out->quantile_fraction));
  TUNE_RETURN_IF_ERROR(s.Expect(out->quantile_fraction >= 0 && out->quantile_fraction <= 0.5, "quantile_fraction",
                                "a number between 0 and 0.5"));
  TUNE_RETURN_IF_ERROR(s.Double("resample_probability", &out->resample_probability));
  TUNE_RETURN_IF_ERROR(s.Expect(out->resample_probability >= 0 && out->resample_probability <= 1,
                                "resample_probability", "a number between 0 and 1"));
  if (const Json* f = s.Find("perturbation_factors")) {
    const std::string path = s.PathOf("perturbation_factors");
    const std::string expected = "a non-empty array of numbers above 0, such as [1.2, 0.8]";
    if (!f->is_array() || f->empty()) return s.reader().FailValue(path, expected, *f);
    out->perturbation_factors.clear();
    for (size_t i = 0; i < f->size(); ++i) {
      auto d = AsDouble((*f)[i]);
      if (!d || !(*d > 0)) return s.reader().FailValue(IndexPath(path, i), "a number above 0", (*f)[i]);
      out->perturbation_factors.push_back(*d);
    }
  }
  return s.Bool("synch", &out->synch);
}

Status ParsePbtMutations(const Reader& r, const Json* scheduler, const SearchSpace& params, SchedulerSpec* out) {
  if (!scheduler || out->type != "pbt") return Status::Ok();
  const std::string path = "scheduler.hyperparam_mutations";
  const Json* v = scheduler->contains("hyperparam_mutations") ? &(*scheduler)["hyperparam_mutations"] : nullptr;
  out->hyperparam_mutations.clear();
  out->hyperparam_mutations_given = v != nullptr;
  if (!v) {
    out->hyperparam_mutations = params;  // every searched parameter, its own distribution
    return Status::Ok();
  }
  const std::string names = "names of parameters (" + OneOf(Names(params)) + ")";
  if (v->is_array()) {
    if (v->empty()) return r.FailValue(path, "a non-empty array of " + names, *v);
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& n = (*v)[i];
      const std::string at = IndexPath(path, i);
      if (!n.is_string() || !params.count(n.get<std::string>())) return r.FailValue(at, "one of the " + names, n);
      const std::string name = n.get<std::string>();
      if (out->hyperparam_mutations.count(name)) return r.FailValue(at, "a parameter not listed before", n);
      out->hyperparam_mutations[name] = params.at(name);
    }
    return Status::Ok();
  }
  const std::string expected =
      "an object mapping parameter names to true or a distribution, or an array of parameter names";
  if (!v->is_object() || v->empty()) return r.FailValue(path, expected, *v);
  for (const auto& [name, value] : v->items()) {
    const std::string at = JoinPath(path, name);
    auto it = params.find(name);
    if (it == params.end()) return r.Fail(at, "one of the " + names, Quote(name));
    if (value.is_boolean()) {
      if (!value.get<bool>()) {
        return r.FailValue(at, "true (mutate it within its search distribution) or a distribution object; leave "
                               "the parameter out to keep it fixed", value);
      }
      out->hyperparam_mutations[name] = it->second;
      continue;
    }
    Distribution d;
    TUNE_RETURN_IF_ERROR(ParseDistribution(r, value, at, &d));
    if (d.index() != it->second.index()) {
      return r.Fail(at, std::string(KindOf(it->second)) + ", as parameters." + name + " is", Describe(d));
    }
    out->hyperparam_mutations[name] = std::move(d);
  }
  return Status::Ok();
}

Status CheckPbtLoraRank(const Reader& r, const ExperimentSpec& spec) {
  if (spec.scheduler.type != "pbt") return Status::Ok();
  const std::vector<std::string>& cmd = spec.trial.command;
  for (const auto& [name, dist] : spec.scheduler.hyperparam_mutations) {
    const std::string placeholder = "${" + name + "}";
    bool passed = false;
    for (size_t i = 0; i < cmd.size() && !passed; ++i) {
      if (cmd[i] == "--lora-r" && i + 1 < cmd.size() && cmd[i + 1].find(placeholder) != std::string::npos) passed = true;
      if (cmd[i].find("--lora-r=" + placeholder) != std::string::npos) passed = true;
      if (cmd[i].find("--lora-r " + placeholder) != std::string::npos) passed = true;  // a shell line
    }
    if (!passed) continue;
    const std::string path = spec.scheduler.hyperparam_mutations_given ? JoinPath("scheduler.hyperparam_mutations", name)
                                                                       : "scheduler.hyperparam_mutations";
    return r.Fail(path,
                  "parameters other than " + Quote(name) +
                      ", which trial.command passes as --lora-r: a trial cannot continue from a checkpoint with "
                      "another LoRA rank" +
                      (spec.scheduler.hyperparam_mutations_given ? "" : " (list the parameters to mutate without it)"),
                  Quote(name));
  }
  return Status::Ok();
}

}  // namespace spec_internal
}  // namespace tune
