// Katib's `pbt` algorithm (pkg/suggestion/v1beta1/pbt/service.py, PbtService
// and PbtJobQueue) as tune's pbt scheduler (schedulers/pbt_scheduler.h).
//
// Katib's PBT is generational: every Katib trial trains one generation and
// ends; once n_population trials of a generation completed, the ones below
// np.quantile(scores, truncation_threshold) are replaced by a child that
// takes a top trial's parameters unchanged, and the others by a child with
// their own parameters perturbed (by 0.8 or 1.2 when resample_probability
// is unset, else resampled with that probability and kept otherwise); each
// child starts from its parent's checkpoint folder. tune's pbt keeps
// n_population trials running to max_t and perturbs them at every
// perturbation_interval (Ray Tune's rule): with synch true, the population
// waits at each interval, as a generation does. Every difference is a
// "warning:" note.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "import/katib_yaml.h"

namespace tune {
namespace katib_internal {
namespace {

// tune's pbt default perturbation_interval: the steps assumed for one
// Katib generation (a Katib trial's own length is in its command).
constexpr int64_t kStepsPerGeneration = 20;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Status ConvertPbt(Ctx& ctx, const YAML::Node& spec, Json* scheduler, Json* limits) {
  const std::string path = "spec.algorithm";
  YAML::Node a = Get(spec, "algorithm");
  if (YAML::Node e = Get(spec, "earlyStopping"); Present(e)) {
    return ctx.Fail(e, "spec.earlyStopping", "no early stopping with pbt (tune's pbt scheduler ends no trial early)",
                    "an earlyStopping section");
  }
  const std::string sp = Child(path, "algorithmSettings");
  int64_t population = -1;
  double truncation = -1;
  std::optional<double> resample;
  YAML::Node settings = Get(a, "algorithmSettings");
  if (Present(settings)) {
    TUNE_RETURN_IF_ERROR(ctx.Seq(settings, sp));
    for (size_t i = 0; i < settings.size(); ++i) {
      const std::string ip = Index(sp, i);
      std::string name;
      TUNE_RETURN_IF_ERROR(ctx.Map(settings[i], ip));
      TUNE_RETURN_IF_ERROR(ctx.String(Get(settings[i], "name"), Child(ip, "name"), &name));
      YAML::Node value = Get(settings[i], "value");
      const std::string vp = Child(ip, "value");
      if (!Present(value)) return ctx.Missing(settings[i], vp, "the setting's value");
      if (name == "n_population") {
        TUNE_RETURN_IF_ERROR(ctx.Integer(value, vp, &population));
        // Katib's ValidateAlgorithmSettings: n_population >= 5.
        if (population < 5) return ctx.FailNode(value, vp, "an integer of at least 5 (Katib's minimum)");
      } else if (name == "truncation_threshold") {
        TUNE_RETURN_IF_ERROR(ctx.Number(value, vp, &truncation));
        if (!(truncation >= 0 && truncation <= 1)) return ctx.FailNode(value, vp, "a number between 0 and 1");
      } else if (name == "resample_probability") {
        double p = 0;
        TUNE_RETURN_IF_ERROR(ctx.Number(value, vp, &p));
        if (!(p >= 0 && p <= 1)) return ctx.FailNode(value, vp, "a number between 0 and 1");
        resample = p;
      } else if (name == "suggestion_trial_dir") {
        ctx.Note(vp, "not carried over (a tune trial saves checkpoint-<step> folders in its own directory, "
                     "${trial_dir}, and continues from ${resume_from}: point the trial's checkpoint arguments there)");
      } else {
        return ctx.FailNode(Get(settings[i], "name"), Child(ip, "name"),
                            "a setting of pbt (n_population, truncation_threshold, resample_probability or "
                            "suggestion_trial_dir)");
      }
    }
  }
  if (population < 0) return ctx.Missing(Present(settings) ? settings : a, sp, "the setting n_population");
  if (truncation < 0) return ctx.Missing(Present(settings) ? settings : a, sp, "the setting truncation_threshold");

  // Generations: Katib's maxTrialCount counts the trials of all of them.
  int64_t generations = 1;
  if (YAML::Node n = Get(spec, "maxTrialCount"); Present(n)) {
    int64_t total = 0;
    TUNE_RETURN_IF_ERROR(ctx.Integer(n, "spec.maxTrialCount", &total));
    generations = std::max<int64_t>(1, (total + population - 1) / population);
    ctx.Note("spec.maxTrialCount",
             "counts Katib's trials of every generation (" + std::to_string(total) + " of " +
                 std::to_string(population) + " per generation: " + std::to_string(generations) +
                 "); tune's population is limits.max_trials " + std::to_string(population) +
                 " trials (n_population), each running to scheduler.max_t");
  }
  (*limits)["max_trials"] = population;

  const double quantile = std::min(truncation, 0.5);
  *scheduler = {{"type", "pbt"},
                {"time_attr", "step"},
                {"perturbation_interval", kStepsPerGeneration},
                {"max_t", kStepsPerGeneration * generations},
                {"quantile_fraction", quantile},
                {"resample_probability", resample.value_or(0.0)},
                {"synch", true}};
  ctx.Note(path, "warning: Katib's pbt is generational (each trial trains one generation, then a child trial "
                 "continues from its checkpoint); tune's pbt runs n_population trials to scheduler.max_t and "
                 "perturbs them every perturbation_interval steps, waiting for the population at each (synch "
                 "true). The converted experiment assumes " + std::to_string(kStepsPerGeneration) +
                 " steps per generation: set perturbation_interval to the steps one Katib trial trains and max_t "
                 "to the whole run's");
  ctx.Note(Child(sp, "truncation_threshold"),
           "warning: Katib replaces the trials below np.quantile(scores, " + Num(truncation) +
               ") by a top trial's parameters unchanged and perturbs the others; tune's bottom and top quantiles "
               "hold ceil(n * quantile_fraction) trials each, and a bottom trial takes a top trial's checkpoint "
               "and perturbs its parameters (Ray Tune's rule)" +
               (truncation > 0.5 ? "; quantile_fraction is at most 0.5, so it is 0.5" : std::string()));
  if (resample) {
    ctx.Note(Child(sp, "resample_probability"),
             "warning: Katib resamples a value with this probability and otherwise keeps it; tune otherwise "
             "multiplies it by 1.2 or 0.8 (scheduler.perturbation_factors)");
  } else {
    ctx.Note(Child(sp, "resample_probability"),
             "absent: Katib multiplies every value by 0.8 or 1.2 without resampling, as resample_probability 0 "
             "does");
  }
  return Status::Ok();
}

}  // namespace katib_internal
}  // namespace tune
