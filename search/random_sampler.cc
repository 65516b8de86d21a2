#include "search/random_sampler.h"

#include <algorithm>
#include <cmath>

namespace tune {

ParamValue SampleUniform(const Distribution& dist, std::mt19937_64& rng) {
  if (auto* f = std::get_if<FloatDistribution>(&dist)) {
    if (f->step) {
      // Uniform over the grid points, in log space for qloguniform.
      if (f->log) {
        std::uniform_real_distribution<double> u(std::log(f->low), std::log(f->high));
        return FromInternal(dist, std::exp(u(rng)));
      }
      int64_t n = *Cardinality(dist);
      std::uniform_int_distribution<int64_t> u(0, n - 1);
      return NthValue(dist, u(rng));
    }
    if (f->log) {
      std::uniform_real_distribution<double> u(std::log(f->low), std::log(f->high));
      return std::clamp(std::exp(u(rng)), f->low, f->high);
    }
    std::uniform_real_distribution<double> u(f->low, f->high);
    return u(rng);
  }
  if (auto* i = std::get_if<IntDistribution>(&dist)) {
    if (i->log) {
      // Log-uniform over [low, high + 1), floored (Ray's lograndint).
      std::uniform_real_distribution<double> u(std::log(static_cast<double>(i->low)),
                                                std::log(static_cast<double>(i->high) + 1.0));
      double v = std::floor(std::exp(u(rng)));
      return FromInternal(dist, std::clamp(v, static_cast<double>(i->low), static_cast<double>(i->high)));
    }
    std::uniform_int_distribution<int64_t> u(0, *Cardinality(dist) - 1);
    return NthValue(dist, u(rng));
  }
  const auto& c = std::get<CategoricalDistribution>(dist);
  std::uniform_int_distribution<size_t> u(0, c.choices.size() - 1);
  return c.choices[u(rng)];
}

ParamValue RandomSampler::SampleIndependent(const std::string& name, const Distribution& dist,
                                            const History& history) {
  (void)name; (void)history;
  return SampleUniform(dist, rng_);
}

}  // namespace tune
