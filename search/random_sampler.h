// RandomSampler: independent uniform draws (in log space for log domains).
#pragma once

#include <random>

#include "search/sampler.h"

namespace tune {

class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(uint64_t seed) : rng_(seed) {}
  ParamValue SampleIndependent(const std::string& name, const Distribution& dist,
                               const History& history) override;
  void Reseed(uint64_t seed) override { rng_.seed(seed); }

 private:
  std::mt19937_64 rng_;
};

// A single uniform draw from `dist` with `rng`; shared by samplers that fall
// back to random (TPE's startup phase).
ParamValue SampleUniform(const Distribution& dist, std::mt19937_64& rng);

}  // namespace tune
