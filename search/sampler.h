// Sampler: suggests parameter values for a new trial (Optuna's BaseSampler).
//
// A sampler sees only immutable trial snapshots (History), never storage or
// processes. Its state must be rebuildable from History plus its seed: on
// --resume the tuner builds a fresh sampler with the same seed and the same
// history, and it must suggest what the uninterrupted run would have.
//
// Not thread-safe: the tuner calls it from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "core/trial.h"
#include "search/search_space.h"

namespace tune {

class Sampler {
 public:
  virtual ~Sampler() = default;

  // The subset of `space` this sampler draws jointly for the next trial.
  // Called once per trial, before SampleRelative. Default: nothing.
  virtual SearchSpace RelativeSpace(const SearchSpace& space, const History& history) {
    (void)space; (void)history;
    return {};
  }
  // Joint values for `relative` (as returned by RelativeSpace). May return
  // fewer parameters than asked; the rest go through SampleIndependent.
  // `history` includes running trials (state kRunning), so a sampler can
  // avoid or "lie about" them (constant liar).
  virtual ParamMap SampleRelative(const SearchSpace& relative, const History& history) {
    (void)relative; (void)history;
    return {};
  }
  // One value for `name` drawn from `dist`. The result must satisfy
  // Contains(dist, result).
  virtual ParamValue SampleIndependent(const std::string& name, const Distribution& dist,
                                       const History& history) = 0;

  // Called after a trial finishes (any terminal state). Default: nothing.
  virtual void AfterTrial(const Trial& trial) { (void)trial; }
  // The tuner calls Reseed(TrialSeed(seed, number)) before sampling trial
  // `number`, so suggestions never depend on how many draws came before.
  virtual void Reseed(uint64_t seed) = 0;
};

// The one orchestrator (Optuna's Trial._suggest): relative first, then
// independent for every parameter left. The result covers every parameter of
// `space`, each inside its distribution.
ParamMap SampleTrial(Sampler& sampler, const SearchSpace& space, const History& history);

}  // namespace tune

namespace tune {
// Seed for trial `number` of an experiment seeded with `seed` (splitmix64).
uint64_t TrialSeed(uint64_t seed, int number);
}  // namespace tune
