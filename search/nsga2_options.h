// Nsga2SamplerOptions: the settings of Nsga2Sampler (search/nsga2_sampler.h),
// with Optuna 5.0's NSGAIISampler defaults (optuna/samplers/nsgaii/
// _sampler.py), in a header of its own so that spec/ can fill it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tune {

struct Nsga2SamplerOptions {
  int population_size = 50;
  // Unset: 1 / (number of parameters), as Optuna.
  std::optional<double> mutation_prob;
  double crossover_prob = 0.9;
  double swapping_prob = 0.5;  // uniform crossover's per-parameter swap
  // One per objective, in objective order (Trial::values): true = maximise.
  std::vector<bool> maximize;
  uint64_t seed = 0;
};

}  // namespace tune
