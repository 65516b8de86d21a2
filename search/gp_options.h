// GpSamplerOptions: the settings of GpSampler (search/gp_sampler.h), with
// Optuna 5.0's GPSampler defaults (optuna/samplers/_gp/sampler.py,
// GPSampler.__init__).
#pragma once

#include <cstdint>

namespace tune {

struct GpSamplerOptions {
  // Completed trials drawn at random before the Gaussian process takes over.
  int n_startup_trials = 10;
  // Fix the noise variance at its minimum (Optuna's deterministic_objective).
  bool deterministic_objective = false;
  bool maximize = false;  // the objective's direction (Trial::value is raw)
  uint64_t seed = 0;
  // Acquisition optimisation (GPSampler's private controls): scrambled Sobol
  // candidates, local searches started from the best of them, and the
  // tolerance of those searches.
  int n_preliminary_samples = 2048;
  int n_local_search = 10;
  double tol = 1e-4;
};

}  // namespace tune
