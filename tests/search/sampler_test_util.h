// Helpers shared by the sampler tests: a sequential optimisation loop as the
// tuner runs it (Reseed(TrialSeed(seed, number)), SampleTrial, record).
#pragma once

#include <functional>
#include <limits>

#include "search/sampler.h"

namespace tune {
namespace testing {

inline Trial MakeTrial(int number, TrialState state, ParamMap params,
                       std::optional<double> value = std::nullopt) {
  Trial t;
  t.id = number + 1;
  t.number = number;
  t.state = state;
  t.params = std::move(params);
  t.value = value;
  return t;
}

inline double Num(const ParamValue& v) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::numeric_limits<double>::quiet_NaN();
}

// Runs `n` trials one after another, each completed with objective(params).
inline History RunSequential(Sampler& sampler, const SearchSpace& space, uint64_t seed, int n,
                             const std::function<double(const ParamMap&)>& objective,
                             History history = {}) {
  for (int i = 0; i < n; ++i) {
    int number = static_cast<int>(history.size());
    sampler.Reseed(TrialSeed(seed, number));
    ParamMap p = SampleTrial(sampler, space, history);
    double v = objective(p);
    history.push_back(MakeTrial(number, TrialState::kCompleted, std::move(p), v));
  }
  return history;
}

}  // namespace testing
}  // namespace tune
