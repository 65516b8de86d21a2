// The mapping from an experiment.json onto the options of the modules it
// configures (docs/architecture.md, section 1.1): written once, used by the
// factories that build the parts of `tune run` (tuner/components.cc) and by
// the dashboard, which draws the ASHA rungs (dashboard/dashboard_data.cc).
//
// Plain field copies: nothing is validated here (ParseExperimentSpec has
// checked the spec; ValidateAshaOptions and ValidateMedianOptions check what
// the schedulers themselves refuse).
#pragma once

#include <cstdint>

#include "schedulers/asha_options.h"
#include "schedulers/median_stopping_options.h"
#include "schedulers/pbt_options.h"
#include "search/gp_options.h"
#include "search/nsga2_options.h"
#include "search/tpe_options.h"
#include "spec/experiment_spec.h"

namespace tune {

// search.tpe, the objective's direction (every objective's, when there are
// several) and search.seed.
TpeSamplerOptions TpeSamplerOptionsFrom(const ExperimentSpec& spec);

// search.nsga2 keys, every objective's direction and search.seed.
Nsga2SamplerOptions Nsga2SamplerOptionsFrom(const ExperimentSpec& spec);

// search.gp, the objective's direction and search.seed.
GpSamplerOptions GpSamplerOptionsFrom(const ExperimentSpec& spec);

// scheduler.{time_attr, max_t, grace_period, reduction_factor, brackets},
// the objective's direction, and `seed` (the experiment's, which draws each
// trial's bracket; the stored one on --resume).
AshaOptions AshaOptionsFrom(const ExperimentSpec& spec, uint64_t seed);

// scheduler.{time_attr, grace_period, min_samples_required, hard_stop} and
// the objective's direction.
MedianOptions MedianOptionsFrom(const ExperimentSpec& spec);

// scheduler.{time_attr, max_t, perturbation_interval, burn_in_period,
// quantile_fraction, resample_probability, perturbation_factors,
// hyperparam_mutations, synch}, limits.max_trials (the population), the
// objective's direction, and `seed` (the experiment's, which keys every
// draw; the stored one on --resume).
PbtOptions PbtOptionsFrom(const ExperimentSpec& spec, uint64_t seed);

}  // namespace tune
