// PbtScheduler: Population Based Training (Jaderberg et al. 2017), deciding
// as Ray Tune's PopulationBasedTraining (python/ray/tune/schedulers/pbt.py)
// with the fixes of schedulers/pbt_rule.h.
//
// Per trial, as Ray's _PBTTrialState: the score and time_attr value of its
// last check (last_score, last_train_time), and the value at which it was
// last checked (last_perturbation_time, 0 at first).
//
// OnTrialResult (Ray's on_trial_result):
//   - a report at or past max_t stops the trial (kStop without rung:
//     completed), before anything else, as a stopper does in Ray;
//   - before burn_in_period, or less than perturbation_interval after the
//     trial's last check: kContinue. So only the trial that just reached
//     its interval is checked;
//   - else its score and step are recorded. Asynchronous mode: its
//     last_perturbation_time becomes the step, the quantiles are computed
//     (pbt::Quantiles over the trials with a score that are not finished),
//     and a trial of the bottom quantile exploits a donor drawn uniformly
//     from the top: kPause with the exploit (Ray's _checkpoint_or_exploit
//     and _exploit pause the trial and restore it from the donor). Any
//     other trial goes on, or pauses when other trials wait for a slot
//     (Ray pauses when another trial is PENDING or PAUSED);
//   - synchronous mode: the trial pauses until every live trial (and every
//     trial of the population not created yet) has reached the barrier
//     (Ray's _next_perturbation_sync); the last one to arrive perturbs the
//     whole population at once: its own exploit in its decision, those of
//     paused trials through TakeExploits. The barrier then moves on by
//     perturbation_interval (or to the furthest trial). A trial at its
//     interval but short of the barrier goes on (Ray pauses it and resumes
//     it at once; here a pause costs a restart from a checkpoint).
//
// Exploit: the new parameters are the donor's (current ones), explored
// (pbt::Explore) over hyperparam_mutations. OnTrialExploited copies the
// donor's last_perturbation_time to the recipient, as Ray's _exploit, and
// sets its last_train_time to the step of the checkpoint it continues from.
// Where Ray uses the checkpoint the donor saved at its last check (and
// skips the exploit when the donor was not in the top then), the tuner
// uses the donor's newest checkpoint-<step> folder; without one,
// OnExploitSkipped returns what the trial would have got without an
// exploit.
//
// Fixes to Ray (ray#12122, ray#23424): a trial that fails or finishes
// leaves the barrier (Ray counts only live trials, but re-checks only when
// a result arrives, so the paused population waited forever): the barrier
// is checked again in OnTrialError and OnTrialComplete, and released when
// every remaining live trial has reached it. A failed trial that is retried
// counts again from its next report.
//
// A retried or resumed trial reports again steps it reported before: its
// state is not reset (Ray's restore), so a step below its last check plus
// the interval continues, and the check happens once the interval is
// reached again.
//
// Replay: every draw comes from pbt::DrawKey(seed, trial number, step,
// exploits of the trial so far); the state is a function of the events
// (OnTrialAdd, OnTrialResult, OnTrialExploited, OnTrialComplete,
// OnTrialError) in order. SetWaitingTrials only changes decisions (pause or
// continue), never the state.
//
// Not thread-safe (see Scheduler).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedulers/pbt_options.h"
#include "schedulers/pbt_rule.h"
#include "schedulers/scheduler.h"

namespace tune {

class PbtScheduler : public Scheduler {
 public:
  // `options` must be valid (ValidatePbtOptions); invalid ones abort.
  explicit PbtScheduler(PbtOptions options);

  void OnTrialAdd(const Trial& trial) override;
  Decision OnTrialResult(const Trial& trial, int64_t step, double objective) override;
  void OnTrialComplete(const Trial& trial) override;
  void OnTrialError(const Trial& trial) override;

  bool UsesCheckpoints() const override { return true; }
  void SetWaitingTrials(int waiting) override { waiting_ = waiting; }
  void OnTrialExploited(const Trial& recipient, const Trial& donor, int64_t donor_step) override;
  Action OnExploitSkipped(const Trial& trial) override;
  bool MayResume(const Trial& paused) override;
  std::vector<std::pair<TrialId, Exploit>> TakeExploits() override;

  // Introspection, for tests and logs.
  // The time_attr value the synchronous barrier waits for.
  int64_t NextPerturbationSync() const { return next_sync_; }
  // A trial's last check: (last_train_time, last_perturbation_time).
  std::optional<std::pair<int64_t, int64_t>> CheckTimes(TrialId id) const;
  // The current quantiles (pbt::Quantiles over the trials that count).
  pbt::QuantileSplit CurrentQuantiles() const;

 private:
  struct TrialState {
    int number = 0;
    ParamMap params;  // current ones
    std::optional<double> last_score;  // sign-flipped
    int64_t last_train_time = 0;
    int64_t last_perturbation_time = 0;
    bool completed = false;  // ended: never counts again
    bool errored = false;    // failed attempt: counts again from its next report
    int exploits = 0;        // OnTrialExploited so far
    Action without_exploit = Action::kContinue;  // OnExploitSkipped's answer
  };

  TrialState& StateFor(const Trial& trial);
  bool Live(const TrialState& s) const { return !s.completed && !s.errored; }
  // Ray's _checkpoint_or_exploit for a trial of the bottom quantile: the
  // exploit of a donor drawn from `upper`, or nullopt if not in `lower`.
  std::optional<Exploit> ExploitFor(TrialId id, const pbt::QuantileSplit& q, std::string* reason);
  // True while a live trial, or one not created yet, is short of the barrier
  // (`except`: the trial reporting now).
  bool BarrierHolds(std::optional<TrialId> except) const;
  // Synchronous perturbation of the population at `time`. Returns the
  // exploit of `reporter` (others go to pending_).
  std::optional<Exploit> SyncPopulation(int64_t time, std::optional<TrialId> reporter, std::string* reason);
  // Releases the barrier if a failed or finished trial was the last holding it.
  void MaybeReleaseBarrier();

  PbtOptions options_;
  double sign_;  // +1 for max, -1 for min (Ray's metric_op)
  std::vector<TrialId> order_;  // add order (Ray's _trial_state dict order)
  std::map<TrialId, TrialState> trials_;
  int waiting_ = 0;
  int64_t next_sync_ = 0;
  std::map<TrialId, Exploit> pending_;  // synch: exploits for paused trials
};

}  // namespace tune
