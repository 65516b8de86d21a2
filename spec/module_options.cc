#include "spec/module_options.h"

namespace tune {

TpeSamplerOptions TpeSamplerOptionsFrom(const ExperimentSpec& spec) {
  const TpeOptions& t = spec.search.tpe;
  TpeSamplerOptions o;
  o.n_startup_trials = t.n_startup_trials;
  o.n_ei_candidates = t.n_ei_candidates;
  o.n_ei_candidates_numerical = t.n_ei_candidates_numerical;
  o.gamma = t.gamma;
  o.prior_weight = t.prior_weight;
  o.consider_prior = t.consider_prior;
  o.consider_magic_clip = t.consider_magic_clip;
  o.consider_endpoints = t.consider_endpoints;
  o.multivariate = t.multivariate;
  o.independent_choices = t.independent_choices;
  o.constant_liar = t.constant_liar;
  o.parzen_rules = t.parzen_rules == "optuna3" ? ParzenRules::kOptuna3 : ParzenRules::kOptuna5;
  o.maximize = spec.objective.mode == Mode::kMax;
  if (IsMultiObjective(spec)) {
    for (const ObjectiveSpec& obj : spec.objectives) o.objectives_maximize.push_back(obj.mode == Mode::kMax);
  }
  o.seed = spec.search.seed;
  return o;
}

Nsga2SamplerOptions Nsga2SamplerOptionsFrom(const ExperimentSpec& spec) {
  const Nsga2Options& n = spec.search.nsga2;
  Nsga2SamplerOptions o;
  o.population_size = n.population_size;
  o.mutation_prob = n.mutation_prob;
  o.crossover_prob = n.crossover_prob;
  o.swapping_prob = n.swapping_prob;
  for (const ObjectiveSpec& obj : spec.objectives) o.maximize.push_back(obj.mode == Mode::kMax);
  o.seed = spec.search.seed;
  return o;
}

GpSamplerOptions GpSamplerOptionsFrom(const ExperimentSpec& spec) {
  GpSamplerOptions o;
  o.n_startup_trials = spec.search.gp.n_startup_trials;
  o.deterministic_objective = spec.search.gp.deterministic_objective;
  o.maximize = spec.objective.mode == Mode::kMax;
  o.seed = spec.search.seed;
  return o;
}

AshaOptions AshaOptionsFrom(const ExperimentSpec& spec, uint64_t seed) {
  const SchedulerSpec& s = spec.scheduler;
  AshaOptions o;
  o.time_attr = s.time_attr;
  o.max_t = s.max_t;
  o.grace_period = s.grace_period;
  o.reduction_factor = s.reduction_factor;
  o.brackets = s.brackets;
  o.maximize = spec.objective.mode == Mode::kMax;
  o.seed = seed;
  return o;
}

MedianOptions MedianOptionsFrom(const ExperimentSpec& spec) {
  const SchedulerSpec& s = spec.scheduler;
  MedianOptions o;
  o.time_attr = s.time_attr;
  o.grace_period = static_cast<double>(s.grace_period);
  o.min_samples_required = s.min_samples_required;
  o.maximize = spec.objective.mode == Mode::kMax;
  o.hard_stop = s.hard_stop;
  return o;
}

PbtOptions PbtOptionsFrom(const ExperimentSpec& spec, uint64_t seed) {
  const SchedulerSpec& s = spec.scheduler;
  PbtOptions o;
  o.time_attr = s.time_attr;
  o.perturbation_interval = s.perturbation_interval;
  o.burn_in_period = s.burn_in_period;
  o.quantile_fraction = s.quantile_fraction;
  o.resample_probability = s.resample_probability;
  o.perturbation_factors = s.perturbation_factors;
  o.hyperparam_mutations = s.hyperparam_mutations;
  o.synch = s.synch;
  o.max_t = s.max_t;
  o.population = spec.limits.max_trials;
  o.maximize = spec.objective.mode == Mode::kMax;
  o.seed = seed;
  return o;
}

}  // namespace tune
