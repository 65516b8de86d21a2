// The rule of Population Based Training (Jaderberg et al., "Population
// Based Training of Neural Networks", 2017) as Ray Tune decides it
// (python/ray/tune/schedulers/pbt.py): which trials are the bottom and the
// top of the population (PopulationBasedTraining._quantiles), and how a
// donor's parameters are explored (_explore). Pure functions over values,
// for PbtScheduler and its tests.
//
// Where this differs from Ray (docs/experiment.md, "Population Based
// Training"):
//   - an integer is rounded after a factor, not truncated by int()
//     (ray#65747: int() lets integers only ratchet down, and 0 absorbs);
//   - every value is clamped into its declared bounds, and a quantised one
//     snapped onto its grid (ray#11936: Ray's values leave the space);
//   - `choice` (and `grid`) always moves to an adjacent value in declared
//     order; Ray does this for a Python list only and multiplies the value
//     of a tune.choice domain;
//   - a current value outside the domain (or of the wrong type) is
//     resampled, as Ray does for a list only;
//   - a NaN score sorts below every other score (Python's sort leaves its
//     place to the algorithm).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/param.h"
#include "core/trial.h"
#include "search/distribution.h"
#include "search/search_space.h"

namespace tune {
namespace pbt {

// A trial that counts for the quantiles: it has a score (it reached a
// perturbation point) and is not finished. `score` is sign-flipped, larger
// is better (Ray's metric_op * metric).
struct Scored {
  TrialId id = 0;
  double score = 0;
};

struct QuantileSplit {
  std::vector<TrialId> lower;  // worst first
  std::vector<TrialId> upper;  // ascending score: the best is last
};

// The size of each quantile for n scored trials: 0 for n <= 1, else
// ceil(n*q), lowered to floor(n/2) when above n/2 (Ray's _quantiles, with
// the same double arithmetic: 25*0.28 is 7.000000000000001, so 8).
size_t QuantileSize(size_t n, double quantile_fraction);

// Ray's _quantiles: `scored` in the order the trials were added, sorted
// stably by score (ties keep that order), then the first and the last
// QuantileSize trials. As in Ray, a size of 0 with n >= 2 (q = 0) gives an
// empty lower and an upper of everyone (Python's trials[-0:]); with no
// lower trial nothing is exploited.
QuantileSplit Quantiles(const std::vector<Scored>& scored, double quantile_fraction);

// The key of one decision's draws: a hash of (seed, trial number, step,
// the trial's exploits so far), so that a replay of the same events draws
// the same values, whatever other trials did in between.
uint64_t DrawKey(uint64_t seed, int trial_number, int64_t step, int exploits);

// Uniform draws from a key (a 64-bit Mersenne twister seeded with it).
class Draws {
 public:
  explicit Draws(uint64_t key) : engine_(key) {}
  // In [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // In [0, n), n >= 1 (Python's random.choice over n items).
  size_t Index(size_t n);
  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
};

// `current` multiplied by `factor`, then, for integers, rounded half away
// from zero; clamped into [low, high] and, for quantised domains, snapped
// to the nearest grid point low + k*step. Only for FloatDistribution and
// IntDistribution; `current` must be a number.
ParamValue Perturb(const Distribution& d, const ParamValue& current, double factor);

// The choice `shift` (-1 or +1) places from `current` in declared order,
// staying at the first or last value when the move would leave the list
// (Ray's "shift left (noop)"). `current` must be one of the choices.
ParamValue Shift(const CategoricalDistribution& c, const ParamValue& current, int shift);

struct Explored {
  ParamValue value;
  // What was done, as Ray's _explore names it: "resample", "* 1.2",
  // "shift left", "shift right (noop)".
  std::string operation;
};

// One parameter explored as Ray's _explore does, with the fixes above:
//   choice: resample (uniform over the choices) if u < resample_probability
//           or `current` is not a choice, else shift by -1 or +1 (equally
//           likely);
//   number: resample (search/random_sampler.h's SampleUniform) if
//           u < resample_probability or `current` is not in the domain,
//           else Perturb by a factor drawn uniformly from `factors`.
// Draws in Ray's order: u first, then the choice or the shift.
Explored ExploreValue(const Distribution& d, const ParamValue& current, double resample_probability,
                      const std::vector<double>& factors, Draws& draws);

// Ray's _explore over a whole configuration: `donor` with every parameter
// of `mutations` (in name order) explored; the others copied. A mutated
// parameter missing from `donor` is resampled. `operations` (optional)
// receives "name: old -> new (operation)" per mutated parameter.
ParamMap Explore(const ParamMap& donor, const SearchSpace& mutations, double resample_probability,
                 const std::vector<double>& factors, Draws& draws, std::vector<std::string>* operations = nullptr);

}  // namespace pbt
}  // namespace tune
