// Scheduler: decides, report by report, whether a running trial goes on
// (Ray Tune's TrialScheduler; Optuna's pruner).
//
// Driven by events from the tuner, in the order they happened. A scheduler
// sees trial snapshots only, never a backend or storage: it returns a
// decision and the tuner carries it out. Its state must be rebuildable by
// replaying the same events in the same order (that is how --resume restores
// it: OnTrialAdd for every trial by number, with its first parameters, then
// every stored report in the order it was recorded, each recorded exploit
// through OnTrialExploited right after the report stored before it, with
// OnTrialComplete where a trial ended; decisions made during the replay are
// not carried out).
//
// Not thread-safe: the tuner calls it from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "core/param.h"
#include "core/trial.h"

namespace tune {

// kPause: the trial's process is stopped after this report and the trial
// waits, holding no process and no slot, until the tuner continues it from
// its newest checkpoint (docs/architecture.md, "Checkpoints").
enum class Action { kContinue, kPause, kStop };

// Population Based Training's exploit: the recipient continues from the
// donor's newest checkpoint (copied into its own trial directory) with
// `params` as its parameters from then on.
struct Exploit {
  TrialId donor = 0;
  ParamMap params;
  // The donor's step whose state the scheduler ranked (PBT: its last
  // check): the tuner copies the donor's newest checkpoint at or before it,
  // as Ray copies the checkpoint saved at that check. nullopt: at or before
  // the donor's last report the tuner has seen.
  std::optional<int64_t> donor_step;
};

struct Decision {
  Action action = Action::kContinue;
  // For kStop: the milestone (time_attr value) of the rung the trial was
  // stopped at, recorded in the database and shown by `tune trials`.
  std::optional<int64_t> rung;
  std::string reason;  // one line for logs, e.g. "below rung 9 cutoff 2.31"
  // With kPause only: continue from the donor's checkpoint (PBT). The tuner
  // first checks that the donor has one; if not, it calls OnExploitSkipped
  // instead and nothing is copied.
  std::optional<Exploit> exploit;

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
  // called again; the retry reports from the step of the checkpoint it
  // continues from, or from the beginning without one).
  virtual void OnTrialError(const Trial& trial) { (void)trial; }

  // --- Checkpoint-aware scheduling (PBT); the defaults suit schedulers that
  // only continue or stop trials.

  // True if the scheduler pauses trials or exploits checkpoints: the tuner
  // then refuses backends whose trial directories it cannot read.
  virtual bool UsesCheckpoints() const { return false; }
  // How many trials wait for a slot (pending, paused, or still to be
  // created under limits.max_trials). The tuner sets it before every
  // OnTrialResult; PBT pauses a trial at its interval while others wait.
  virtual void SetWaitingTrials(int waiting) { (void)waiting; }
  // The tuner carried out Decision::exploit: `recipient` (already holding
  // the new parameters) continues from the donor's checkpoint at
  // `donor_step`. Also called on --resume, for every recorded exploit, right
  // after the report that was recorded before it.
  virtual void OnTrialExploited(const Trial& recipient, const Trial& donor, int64_t donor_step) {
    (void)recipient, (void)donor, (void)donor_step;
  }
  // The donor of Decision::exploit had no checkpoint: nothing was copied.
  // Returns what happens to the trial instead (kContinue or kPause).
  virtual Action OnExploitSkipped(const Trial& trial) { (void)trial; return Action::kContinue; }
  // A paused trial, offered a free slot (paused trials are offered in order
  // of their lowest last step, as Ray's choose_trial_to_run): false keeps it
  // waiting (PBT's synch barrier).
  virtual bool MayResume(const Trial& paused) { (void)paused; return true; }
  // Exploits decided for trials that are paused now (PBT with synch: the
  // last trial to reach an interval decides for the whole population),
  // taken once. The tuner carries them out as Decision::exploit.
  virtual std::vector<std::pair<TrialId, Exploit>> TakeExploits() { return {}; }
  // Where this scheduler stops trials early, for `tune validate`: its
  // brackets; empty for a scheduler without rungs.
  virtual std::vector<RungBracket> Brackets() const { return {}; }
};

}  // namespace tune
