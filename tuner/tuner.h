// Tuner: the control loop of `tune run`. The only place that combines the
// modules (as Optuna's Trial._suggest): it asks the sampler for parameters,
// the backend to run attempts, the scheduler for decisions, and records
// every state change in storage as it happens.
//
// Crash safety: every state change is written before the next action, so a
// killed tuner loses no finished trial. On resume, trials found `running`
// were interrupted: they go back to pending and are run again (their
// reports of the interrupted attempt are kept but no longer count), unless
// the backend adopted their attempt (TunerOptions::adopted).
//
// Checkpoints (docs/architecture.md, "Checkpoints"): a trial that ran
// before (retried, interrupted, paused) continues from the newest
// checkpoint-<step> folder of its trial directory; its new attempt starts
// with the reports up to that step. A kPause decision stops the trial's
// process; once it is gone the trial is paused (no process, no slot) and,
// for PBT's exploit, gets a copy of the donor's newest checkpoint and its
// new parameters. Paused trials take free slots once every trial of
// limits.max_trials exists, the lowest last step first.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "schedulers/scheduler.h"
#include "search/sampler.h"
#include "spec/experiment_spec.h"
#include "storage/storage.h"
#include "tracking/tracking_sink.h"
#include "trial_runner/trial_backend.h"
#include "tuner/progress.h"

namespace tune {

struct TunerOptions {
  bool resume = false;
  std::optional<int> max_concurrent;  // overrides limits.max_concurrent_trials
  // Root of the trial directories: <runs_dir>/<experiment>/trial_<number>.
  std::string runs_dir = "tune_runs";
  // How long a stopped trial gets between SIGTERM and SIGKILL.
  std::chrono::milliseconds kill_grace = std::chrono::seconds(5);
  // Longest wait for backend events before the loop looks at timers again.
  std::chrono::milliseconds tick = std::chrono::milliseconds(200);
  // Resume: trials found running whose attempt the backend has adopted
  // (Kubernetes: its Job still exists, KubernetesBackend::AdoptOrClean).
  // They stay in that attempt (not a new one): its stored reports become
  // excluded ("read again on resume") and the backend reports them again
  // from the start of its log. Every other trial found running is retried.
  std::set<TrialId> adopted;
  // Resume: the stored reason of a trial found running that is run again
  // (empty: "interrupted: the tuner stopped while it ran").
  std::string rerun_reason;
};

enum class RunOutcome { kCompleted, kFailed, kInterrupted };

struct RunSummary {
  RunOutcome outcome = RunOutcome::kCompleted;
  std::string message;  // why it ended: "max_trials reached", "goal reached", ...
  int completed = 0, pruned = 0, failed = 0, stopped = 0;
  std::optional<int> best_number;
  std::optional<double> best_value;
  ParamMap best_params;  // the best trial's; empty without one
  // What the tracking sinks could not deliver, a line each.
  std::vector<std::string> undelivered;
};

// Components the tuner drives. Ownership stays with the caller; all must
// outlive Run().
struct TunerParts {
  Storage* storage = nullptr;
  TrialBackend* backend = nullptr;
  Sampler* sampler = nullptr;
  Scheduler* scheduler = nullptr;
  ProgressSink* progress = nullptr;  // may be null
  tracking::TrackingSink* tracking = nullptr;  // may be null
};

class Tuner {
 public:
  Tuner(ExperimentSpec spec, TunerParts parts, TunerOptions options);

  // Runs the experiment to its end: max_trials done, goal reached, time
  // budget spent, max_failed_trials reached, or `*stop` set (Ctrl-C).
  // Non-OK only for infrastructure errors (database, backend preflight, an
  // existing experiment without --resume); a failed experiment is a
  // RunSummary with outcome kFailed. Never throws: an exception from a part
  // (a sink, the sampler, a library) is kInternal naming it. After an error
  // once the experiment is in storage, its running trials are killed and
  // stored as pending, and the experiment as stopped, so that
  // `tune run --resume` continues it.
  Result<RunSummary> Run(const std::atomic<bool>* stop);

 private:
  struct Impl;
  Result<RunSummary> RunLoop(Impl& run, const std::atomic<bool>* stop);
  ExperimentSpec spec_;
  TunerParts parts_;
  TunerOptions options_;
};

// The LaunchSpec of trial `t`'s current attempt: command and env with every
// placeholder substituted, the environment of docs/architecture.md, section 4.2, resources.
// `resume_from`: the checkpoint folder the attempt continues from
// (TUNE_RESUME_FROM, ${resume_from}); empty for none (the variable is then
// not set and the placeholder is empty).
LaunchSpec MakeLaunchSpec(const ExperimentSpec& spec, const Trial& t, const std::string& trial_dir,
                          const std::string& resume_from = "");

// Replaces ${name} in `arg` by values: parameters, trial_id, experiment,
// trial_dir. Unknown names are left as they are (the spec parser rejects
// them up front).
std::string SubstitutePlaceholders(const std::string& arg,
                                   const std::map<std::string, std::string>& values);

// TUNE_PARAM_<NAME> for a parameter name: upper case, every character not in
// [A-Z0-9_] replaced by '_'.
std::string ParamEnvName(const std::string& name);

}  // namespace tune
