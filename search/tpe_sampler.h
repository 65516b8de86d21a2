// TpeSampler: the Tree-structured Parzen Estimator (Bergstra et al. 2011),
// with Optuna's TPESampler semantics and defaults.
//
// After `n_startup_trials` completed or pruned trials (random draws until
// then), the trials are split into the gamma(n) best ("below", l(x)) and the
// rest ("above", g(x)); `n_ei_candidates` points are drawn from l(x) and the
// one maximising log l(x) - log g(x) is suggested. Pruned trials rank after
// completed ones, by (last step reached, value at that step); with
// `constant_liar`, running trials count as the worst. Failed and stopped
// trials are ignored. Trials that break a constraint (Trial::constraints)
// rank after the pruned ones, by total violation. With several objectives
// (options.objectives_maximize), completed trials rank by non-dominated
// sorting with a hypervolume tie-break and l(x) weighs its trials equally,
// as Optuna 5.0's multi-objective TPE. The split is search/tpe_split.h.
//
// Multivariate mode (the default, as in Optuna 5.0) models all parameters
// jointly through RelativeSpace/SampleRelative; univariate mode
// (`multivariate` false) models each on its own through SampleIndependent.
// With several objectives Optuna 5.0 defaults to univariate
// (TPESampler._is_multivariate); here `multivariate` is what the options
// say, whatever the number of objectives. In a discrete space a suggestion
// never repeats the full parameter set of a trial in the history (running
// or finished) while an alternative exists.
//
// All randomness comes from the rng set by Reseed, so the same history and
// seed give the same suggestion (resume-safe). Call Reseed before each trial
// (the tuner does): per-trial work (the ranking of the history) is cached
// until the next Reseed or a different history. Per-parameter values are
// cached across trials by trial id, so the cost per suggestion grows
// linearly with the history. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "search/parzen_estimator.h"
#include "search/sampler.h"
#include "search/tpe_options.h"
#include "search/tpe_split.h"  // DefaultGamma

namespace tune {

// Optuna's default_weights: n ones, or for n > 25 a ramp from 1/n to 1 over
// the n - 25 oldest trials followed by 25 ones (oldest first).
std::vector<double> DefaultWeights(int n);
// The weights of l(x)'s n trials (oldest first): DefaultWeights(n) with one
// objective, n ones with several (Optuna 5.0's _build_parzen_estimator).
std::vector<double> BelowWeights(int n, bool multi_objective);

class TpeSampler : public Sampler {
 public:
  explicit TpeSampler(const TpeSamplerOptions& options);

  // All of `space` when multivariate (its numerical parameters with
  // independent_choices), else nothing. Remembers `space` so
  // that univariate sampling can avoid dead ends in a discrete space.
  SearchSpace RelativeSpace(const SearchSpace& space, const History& history) override;
  // Joint TPE over `relative`; {} during the startup phase.
  ParamMap SampleRelative(const SearchSpace& relative, const History& history) override;
  // Univariate TPE for one parameter (random during the startup phase).
  ParamValue SampleIndependent(const std::string& name, const Distribution& dist,
                               const History& history) override;
  void Reseed(uint64_t seed) override;

  const TpeSamplerOptions& options() const { return options_; }

 private:
  // The history, as TPE sees it for one set of parameters.
  struct Split {
    int d = 0;
    // Rows of estimator coordinates, oldest trial first.
    std::vector<double> below, above;
    std::vector<double> below_weights, above_weights;
    // Internal values of every trial in the history that has all parameters
    // (any state): a suggestion equal to one of these is a duplicate.
    std::vector<double> taken;
    // Per parameter, the above rows ordered by value (ties by row) where
    // the estimator sorts them (neighbour-gap bandwidths), else empty.
    std::vector<std::vector<int>> above_orders;
  };

  // Fills `split` from `history` for the parameters `names`; false while in
  // the startup phase.
  // `want_taken`: also collect every trial's values (duplicate checks).
  bool BuildSplit(const std::vector<std::string>& names, const std::vector<const Distribution*>& dists,
                  const History& history, Split* split, bool want_taken);
  struct Ranking;
  // The below/above membership of every trial (independent of the
  // parameters), cached for the SampleIndependent calls of one trial.
  const Ranking& RankTrials(const History& history);
  // Internal values of parameter `name` for every trial of `history` (NaN
  // where missing or outside `dist`), cached across calls.
  struct Column;
  // Drops cached values past the first position whose trial id changed.
  void SyncHistory(const History& history);
  Column& InternalColumn(const std::string& name, const Distribution& dist, const History& history);
  // How many candidates to draw for the parameters `dists`.
  int CandidateCount(const std::vector<const Distribution*>& dists) const;
  // TPE over the parameters of `split`: candidates ranked best first, each a
  // row of internal values (Distribution's internal representation).
  std::vector<std::vector<double>> RankedCandidates(const std::vector<const Distribution*>& dists,
                                                    const Split& split, int n_candidates);
  // Univariate bookkeeping for duplicate avoidance within one trial.
  bool LeavesFreeCompletion(const std::string& name, const ParamValue& value,
                            const History& history);
  void Remember(const std::string& name, const ParamValue& value, bool discrete,
                const History& history);
  void ResetPending();

  // Per-parameter cache of internal values, by history position; valid for
  // the prefix of the history whose trial ids are unchanged (SyncHistory).
  struct Column {
    std::optional<Distribution> domain;  // the distribution the values were computed for
    std::vector<double> values;  // internal values, NaN if missing
    std::vector<double> coords;  // estimator coordinates (log for log domains)
    std::vector<int> sorted;     // positions with a value, by (coord, position)
  };
  struct Ranking {
    const Trial* data = nullptr;
    size_t size = 0;
    uint64_t generation = ~uint64_t{0};
    TpeGroups groups;
  };
  Ranking ranking_;
  std::vector<TrialId> ids_;  // trial ids of the history the columns describe
  const Trial* synced_data_ = nullptr;
  size_t synced_size_ = 0;
  uint64_t synced_generation_ = ~uint64_t{0};
  uint64_t generation_ = 0;  // bumped by Reseed

  TpeSamplerOptions options_;
  std::mt19937_64 rng_;
  std::map<std::string, Column> columns_;
  TpeSplitter splitter_;
  // Scratch buffers reused across suggestions.
  Split split_;
  ParzenEstimator below_model_, above_model_;  // l(x) and g(x), refitted per suggestion
  std::vector<int> above_index_;
  // The space of the trial being sampled (from RelativeSpace), the values
  // chosen so far for it (univariate mode), and the history trials that
  // share all of them.
  SearchSpace space_;
  ParamMap pending_;
  bool pending_discrete_ = true;  // every pending value is of a discrete domain
  bool matches_valid_ = false;    // prefix_matches_ is computed
  std::vector<int> prefix_matches_;
  size_t pending_history_size_ = 0;
};

}  // namespace tune
