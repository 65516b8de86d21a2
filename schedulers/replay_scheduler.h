// ReplayScheduler: replays a schedule of parameters on one trial (`"type":
// "replay"`, what `tune replay` writes; Ray Tune's
// PopulationBasedTrainingReplay). When the trial reports a step at or past
// the next change's step, it pauses the trial with an exploit whose donor is
// the trial itself: the tuner continues it from its own newest checkpoint
// with the change's parameters (docs/experiment.md, "Replaying a trial's
// schedule").
#pragma once

#include <cstdint>
#include <vector>

#include "core/param.h"
#include "schedulers/scheduler.h"

namespace tune {

// From `step` on, the trial runs with `params`.
struct ReplayChange {
  int64_t step = 0;
  ParamMap params;
};

class ReplayScheduler : public Scheduler {
 public:
  // `changes` in increasing order of step (the spec parser checks it).
  explicit ReplayScheduler(std::vector<ReplayChange> changes) : changes_(std::move(changes)) {}

  Decision OnTrialResult(const Trial& trial, int64_t step, double objective) override;
  bool UsesCheckpoints() const override { return true; }
  // The change was carried out: the next one is due.
  void OnTrialExploited(const Trial& recipient, const Trial& donor, int64_t donor_step) override;
  // No checkpoint to continue from: the change is skipped (the trial keeps
  // its parameters), as Ray's replay cannot restore either.
  Action OnExploitSkipped(const Trial& trial) override;

  size_t applied() const { return next_; }

 private:
  std::vector<ReplayChange> changes_;
  size_t next_ = 0;       // the first change not carried out
  bool waiting_ = false;  // a decision for changes_[next_] is out
};

}  // namespace tune
