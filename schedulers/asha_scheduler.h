// AshaScheduler: asynchronous successive halving (Li et al., "A System for
// Massively Parallel Hyperparameter Tuning", MLSys 2020), deciding exactly as
// Ray Tune's AsyncHyperBandScheduler.
//
// Bracket s has rungs at milestones grace_period * reduction_factor^(k+s),
// k = 0 .. int(log(max_t/grace_period)/log(reduction_factor) - s + 1) - 1.
// A report at time t is checked at the highest milestone <= t at which the
// trial has no recorded reward yet (so a trial reporting every 7 steps fills
// rung 1 late, at t=21, as Ray does); it is stopped if its reward
// (sign-flipped for min mode, so larger is better) is below
// np.nanpercentile(recorded rewards at that rung, (1 - 1/rf) * 100); an empty
// rung passes. The reward is recorded either way. A report at t >= max_t
// stops the trial (stop_last_trials). Ray then calls on_trial_complete with
// trial.last_result, which records that report once more at the next free
// milestone <= t: we do the same at once for a trial we stop, and in
// OnTrialComplete for a trial that ended on its own (then a no-op for a
// trial we stopped), so the state does not depend on when the tuner sees
// the stopped process exit.
//
// Decisions:
//   kStop with `rung`:    pruned at that milestone (below the cutoff).
//   kStop without `rung`: the trial reached max_t; it used its whole budget
//                         and should be recorded as completed, not pruned.
//
// Differs from Ray only where Ray is not deterministic: a new trial's bracket
// is drawn with Ray's softmax probabilities (exp(rungs_s - max rungs),
// normalized) but from a hash of (seed, trial.number) instead of NumPy's
// global RNG, so it does not depend on the order of OnTrialAdd calls.
//
// Ray returns CONTINUE without looking at a result that lacks time_attr or
// the metric. Here the tuner calls OnTrialResult only for reports with the
// objective; a report without time_attr gets the count of reports so far
// as its step (docs/architecture.md, section 4.4), where Ray would skip it.
//
// Replay: the state is a function of the event sequence; replaying the same
// events gives the same decisions. Reports of a trial after it was stopped
// are ignored (Ray drops results that arrive after a STOP).
//
// Not thread-safe (see Scheduler).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "schedulers/asha_options.h"
#include "schedulers/scheduler.h"

namespace tune {

class AshaScheduler : public Scheduler {
 public:
  // `options` must be valid (ValidateAshaOptions); invalid ones abort.
  explicit AshaScheduler(AshaOptions options);

  void OnTrialAdd(const Trial& trial) override;
  Decision OnTrialResult(const Trial& trial, int64_t step, double objective) override;
  void OnTrialComplete(const Trial& trial) override;

  // Introspection, for tests, logs and `tune status`.
  int num_brackets() const { return static_cast<int>(brackets_.size()); }
  // Milestones of bracket `s`, ascending.
  std::vector<double> Milestones(int s) const;
  // The softmax probabilities with which a new trial joins each bracket.
  std::vector<double> BracketProbabilities() const;
  // Every bracket's milestones with its probability.
  std::vector<RungBracket> Brackets() const override;
  // Bracket of a trial added before, or nullopt.
  std::optional<int> BracketOf(TrialId id) const;
  // Current cutoff (sign-flipped reward space) of bracket `s` at `milestone`,
  // nullopt for an empty rung.
  std::optional<double> Cutoff(int s, double milestone) const;

 private:
  struct Rung {
    double milestone;
    std::map<TrialId, double> recorded;  // sign-flipped rewards
    std::vector<double> sorted;          // the non-NaN ones, ascending
  };
  struct Bracket {
    std::vector<Rung> rungs;  // descending milestones, as Ray keeps them
  };
  struct TrialInfo {
    int bracket = 0;
    bool stopped = false;    // later reports are ignored
    bool completed = false;  // OnTrialComplete seen
    std::optional<int64_t> stopped_rung;
    std::optional<std::pair<int64_t, double>> last_report;  // step, raw objective
  };

  int DrawBracket(const Trial& trial) const;
  TrialInfo& InfoFor(const Trial& trial);
  // Ray's _Bracket.on_result; fills `decision` on a stop.
  bool BracketOnResult(int s, TrialId id, int64_t step, double reward, Decision* decision);
  double CutoffOf(const Rung& rung) const;

  AshaOptions options_;
  double sign_;  // +1 for max, -1 for min (Ray's metric_op)
  std::vector<Bracket> brackets_;
  std::map<TrialId, TrialInfo> trials_;
};

}  // namespace tune
