#include "schedulers/replay_scheduler.h"

#include <string>

namespace tune {

Decision ReplayScheduler::OnTrialResult(const Trial& trial, int64_t step, double objective) {
  (void)objective;
  // Ray's on_trial_result: change once the trial's step reaches the next
  // change's step (python/ray/tune/schedulers/pbt.py, PopulationBasedTrainingReplay).
  if (waiting_ || next_ >= changes_.size() || step < changes_[next_].step) return Decision::Continue();
  waiting_ = true;
  Decision d;
  d.action = Action::kPause;
  // Its own checkpoint at or before the report it paused on.
  d.exploit = Exploit{trial.id, changes_[next_].params, std::nullopt};
  d.reason = "replay: the parameters of step " + std::to_string(changes_[next_].step);
  return d;
}

void ReplayScheduler::OnTrialExploited(const Trial& recipient, const Trial& donor, int64_t donor_step) {
  (void)recipient, (void)donor, (void)donor_step;
  if (next_ < changes_.size()) ++next_;
  waiting_ = false;
}

Action ReplayScheduler::OnExploitSkipped(const Trial& trial) {
  (void)trial;
  if (next_ < changes_.size()) ++next_;
  waiting_ = false;
  return Action::kContinue;
}

}  // namespace tune
