// PbtOptions: what configures PbtScheduler (schedulers/pbt_scheduler.h), in
// a header of its own so that spec/ can fill it from experiment.json
// without the scheduler (docs/architecture.md, section 1.3).
//
// Names and defaults are Ray Tune's PopulationBasedTraining
// (python/ray/tune/schedulers/pbt.py, PopulationBasedTraining.__init__),
// except perturbation_interval (Ray: 60 units of time_total_s; here 20
// time_attr steps) and max_t, which Ray leaves to a stopper.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "search/search_space.h"

namespace tune {

struct PbtOptions {
  std::string time_attr = "step";  // only used in messages; the tuner resolves it
  // A trial is checked each time its time_attr value has grown by this much
  // since its last check (or since the checkpoint it was cloned from).
  int64_t perturbation_interval = 20;
  // No check before time_attr reaches this value.
  int64_t burn_in_period = 0;
  // Bottom and top share of the population, each ceil(n*q) trials capped
  // at floor(n/2); in [0, 0.5].
  double quantile_fraction = 0.25;
  // Per mutated parameter: resample from its distribution with this
  // probability, else perturb it. In [0, 1].
  double resample_probability = 0.25;
  // A continuous or integer parameter is multiplied by one of these, drawn
  // uniformly. Non-empty, every factor finite and above 0.
  std::vector<double> perturbation_factors = {1.2, 0.8};
  // The parameters that explore changes, each with the distribution it is
  // resampled from and clamped into. Non-empty. Parameters not named here
  // are copied from the donor unchanged.
  SearchSpace hyperparam_mutations;
  // Synchronous PBT (Jaderberg et al. 2017, appendix A.1): the population
  // waits at each interval and is perturbed at once.
  bool synch = false;
  // A report at or past max_t stops the trial (completed). At least 1.
  int64_t max_t = 0;
  // The population: limits.max_trials. In synch mode the barrier also waits
  // for trials not created yet; 0 waits only for the trials added so far.
  int population = 0;
  bool maximize = false;
  // Draws (donor, explore) are a hash of (seed, trial number, step, the
  // trial's exploits so far), never a shared stream: replaying the same
  // events gives the same decisions.
  uint64_t seed = 0;
};

// InvalidArgument naming the field ("scheduler.quantile_fraction: expected
// a number between 0 and 0.5") for what Ray rejects in __init__
// (quantile_fraction outside [0, 0.5], perturbation_interval <= 0, no
// hyperparam_mutations) and for what Ray leaves unchecked (max_t,
// burn_in_period, resample_probability, perturbation_factors).
Status ValidatePbtOptions(const PbtOptions& options);

}  // namespace tune
