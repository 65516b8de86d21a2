// Scheduler: decides, report by report, whether a running trial goes on
// (Ray Tune's TrialScheduler; Optuna's pruner).
//
// Driven by events from the tuner, in the order they happened. A scheduler
// sees trial snapshots only, never a backend or storage: it returns a
// decision and the tuner carries it out. Its state must be rebuildable by
// replaying the same events in the same order (that is how --resume restores
// it: OnTrialAdd for every trial by number, then every stored report in the
// order it was recorded, with OnTrialComplete where a trial ended).
//
// Not thread-safe: the tuner calls it from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/trial.h"

namespace tune {

enum class Action { kContinue, kPause, kStop };

struct Decision {
  Action action = Action::kContinue;
  // For kStop: the milestone (time_attr value) of the rung the trial was
  // stopped at, recorded in the database and shown by `tune trials`.
  std::optional<int64_t> rung;
  std::string reason;  // one line for logs, e.g. "below rung 9 cutoff 2.31"

  static Decision Continue() { return {}; }
};

// One bracket of a scheduler with rungs (ASHA): where it checks trials and
// the share of new trials it gets.
struct RungBracket {
  std::vector<double> milestones;  // time_attr values, ascending
  double probability = 1;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  // A trial was created (before it starts running).
  virtual void OnTrialAdd(const Trial& trial) { (void)trial; }
  // `trial` reported `objective` (raw, in the experiment's mode) at time_attr
  // value `step`. `trial.intermediate` already contains this report.
  virtual Decision OnTrialResult(const Trial& trial, int64_t step, double objective) = 0;
  // The trial finished on its own (completed), or was stopped by a decision.
  virtual void OnTrialComplete(const Trial& trial) { (void)trial; }
  // The trial's attempt failed; it may be retried (then OnTrialAdd is not
  // called again, reports restart from the beginning).
  virtual void OnTrialError(const Trial& trial) { (void)trial; }
  // Where this scheduler stops trials early, for `tune validate`: its
  // brackets; empty for a scheduler without rungs.
  virtual std::vector<RungBracket> Brackets() const { return {}; }
};

}  // namespace tune
