// Storage: the results database (docs/database.md).
//
// Contract (as Optuna's BaseStorage):
// - Thread-safe: any method may be called from any thread.
// - Every state change is one transaction: after a crash the database holds
//   each change entirely or not at all.
// - A finished trial is immutable: FinishTrial on a finished trial and
//   AppendReport to it fail with FailedPrecondition.
// - Returned snapshots are copies; later writes do not change them.
// - Everything --resume needs lives here.
// - A write fails (kInternal, one sentence naming the file) once the file
//   opened is gone: deleted, its directory deleted, or replaced.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/trial.h"

namespace tune {

enum class ExperimentState { kRunning, kCompleted, kFailed, kStopped };
const char* ExperimentStateName(ExperimentState s);  // "running", ...
std::optional<ExperimentState> ParseExperimentState(const std::string& name);

struct ExperimentRecord {
  ExperimentId id = 0;
  std::string name;
  std::string spec_json;  // experiment.json as given
  ExperimentState state = ExperimentState::kRunning;
  uint64_t seed = 0;       // the search seed actually used
  double created_at = 0;   // Unix seconds
  std::optional<double> ended_at;
  std::string message;     // why it failed or stopped
  double run_seconds = 0;  // time `tune run` has spent on it, all runs together
};

// A trial with everything `tune trials` shows.
struct TrialRecord {
  Trial trial;
  std::optional<double> started_at, ended_at;
  std::optional<int64_t> last_step;   // highest time_attr value reported
  std::optional<int64_t> pruned_rung; // milestone it was stopped at
  std::string location;               // where it ran: "local:pid 123", "k8s:job/x"
  std::string message;                // why it failed / was pruned
  int failed_attempts = 0;            // attempts that failed and were retried
};

// How many trials an experiment has in each state, and its best completed
// one: what an experiments list shows, without reading every trial.
struct TrialTally {
  std::map<TrialState, int> counts;  // states with at least one trial
  int total = 0;
  // The completed trial with the best finite value (lowest, or highest when
  // maximizing; the lower number among equals); none if there is none.
  std::optional<std::pair<int, double>> best;  // (number, value)
};

// One stored report, for replaying scheduler events on --resume.
struct StoredReport {
  int64_t seq = 0;  // global order of arrival
  TrialId trial_id = 0;
  int attempt = 0;
  MetricReport report;
  // Empty if the report counts; else why it does not (see
  // AppendExcludedReport). Only ListTrialReports returns such reports.
  std::string excluded;
};

// One exploit of Population Based Training (docs/database.md, `exploits`):
// trial `trial_id` continued from donor `donor_id`'s checkpoint at
// `donor_step` with `after` as its parameters.
struct StoredExploit {
  int64_t id = 0;
  // reports.id of the newest report stored before the exploit (0: none):
  // where --resume replays it among the reports.
  int64_t after_seq = 0;
  TrialId trial_id = 0;
  int trial_number = 0;
  int64_t step = 0;  // the recipient's last reported step when exploited
  TrialId donor_id = 0;
  int donor_number = 0;
  int64_t donor_step = 0;  // the step of the donor's checkpoint it copied
  ParamMap before, after;
  double time = 0;  // Unix seconds
};

class Storage {
 public:
  virtual ~Storage() = default;

  // Fails with FailedPrecondition if an experiment of that name exists.
  virtual Result<ExperimentId> CreateExperiment(const std::string& name, const std::string& spec_json,
                                                uint64_t seed) = 0;
  // NotFound if there is none.
  virtual Result<ExperimentRecord> FindExperiment(const std::string& name) = 0;
  virtual Result<std::vector<ExperimentRecord>> ListExperiments() = 0;
  virtual Status SetExperimentState(ExperimentId id, ExperimentState state,
                                    const std::string& message) = 0;
  // Replaces the stored experiment.json (a resume with changed limits).
  virtual Status SetExperimentSpec(ExperimentId id, const std::string& spec_json) = 0;
  // Records the time `tune run` has spent on the experiment so far.
  virtual Status SetExperimentRunSeconds(ExperimentId id, double seconds) = 0;

  // A new pending trial with the next free number of the experiment.
  virtual Result<Trial> CreateTrial(ExperimentId e, const ParamMap& params) = 0;
  // pending (or failed-and-retried) -> running, attempt `attempt`. The caller
  // numbers attempts (0 first, previous + 1 after RetryTrial); an attempt
  // below the stored one is FailedPrecondition.
  virtual Status StartTrial(TrialId t, int attempt, const std::string& location) = 0;
  // Records every value of `report`; `objective` is the objective metric's
  // value if the report carried it (it then joins Trial::intermediate).
  virtual Status AppendReport(TrialId t, int attempt, const MetricReport& report,
                              std::optional<double> objective) = 0;
  // Stores a report of a running trial that must not count, with `reason`
  // (non-empty; e.g. "after max_t"): kept for the record (ListTrialReports,
  // the observation_logs view) but never part of Trial::intermediate,
  // `value`, `last_step` or ListReports, so it changes neither the trial's
  // value nor what a sampler or scheduler sees, also after --resume.
  virtual Status AppendExcludedReport(TrialId t, int attempt, const MetricReport& report,
                                      std::optional<double> objective, const std::string& reason) = 0;
  // The attempt's rank 0 started over from scratch (Kubernetes: the Job
  // controller replaced its pod): every counted report of attempt `attempt`
  // so far becomes excluded with `reason` (non-empty; "replaced pod"), and
  // value and last_step are cleared, so what counts from now on is only what
  // the new process reports. The trial must be running that attempt.
  // With `from_step`, only the counted reports with step >= from_step
  // become excluded (the new rank 0 continued from a checkpoint and
  // reports from from_step on); value and last_step are then those of the
  // reports left.
  virtual Status ExcludeAttemptReports(TrialId t, int attempt, const std::string& reason,
                                       std::optional<int64_t> from_step = std::nullopt) = 0;
  // running -> paused (the scheduler paused it, or PBT exploits into it):
  // its process is gone and it waits to continue from its checkpoint. Its
  // reports keep counting. `message` says why.
  virtual Status PauseTrial(TrialId t, const std::string& message) = 0;
  // pending or paused -> running, attempt `attempt` (as StartTrial), for an
  // attempt that continues from a checkpoint at `through_step`: in the same
  // transaction the previous attempt's counted reports with step <=
  // through_step are copied into the new attempt (they count for it; the
  // previous attempt's rows stay as they were), so the trial's curve holds
  // what led to the checkpoint and what the new attempt reports after it.
  virtual Status ContinueTrial(TrialId t, int attempt, const std::string& location, int64_t through_step) = 0;
  // The trial (running or paused) takes `after` as its parameters from now
  // on (params_json, trial_params), and the exploit is recorded with the
  // parameters it had before.
  virtual Status RecordExploit(TrialId t, int64_t step, TrialId donor, int64_t donor_step,
                               const ParamMap& after) = 0;
  // Every exploit of the experiment, in the order recorded.
  virtual Result<std::vector<StoredExploit>> ListExploits(ExperimentId e) = 0;
  // As RetryTrial, for an attempt that failed: also counts it in
  // failed_attempts, which outlives --resume (trial.max_retries).
  virtual Status RetryFailedTrial(TrialId t, const std::string& message) = 0;
  // A failed attempt that will be retried: running -> pending, the attempt's
  // reports kept but no longer part of Trial::intermediate (nor ListReports);
  // value and last_step cleared. Trial::attempt stays the failed attempt's
  // number until the next StartTrial.
  virtual Status RetryTrial(TrialId t, const std::string& message) = 0;
  // Terminal transition. `value` is the trial's objective (scope applied);
  // NaN is stored as none (NULL); nullopt keeps the latest reported value.
  virtual Status FinishTrial(TrialId t, TrialState state, std::optional<double> value,
                             std::optional<int64_t> pruned_rung, const std::string& message) = 0;
  // FinishTrial that also stores Trial::values (every objective's value) and
  // Trial::constraints in the same transaction (table trial_values; NaN as
  // NULL, read back as NaN). Both empty: exactly FinishTrial. The default
  // implementation supports only that case.
  virtual Status FinishTrialWithValues(TrialId t, TrialState state, std::optional<double> value,
                                       const std::vector<double>& values, const std::vector<double>& constraints,
                                       std::optional<int64_t> pruned_rung, const std::string& message);

  // Snapshots ordered by number; intermediate holds the current attempt's
  // objective reports. Here and in every TrialRecord below, Trial::values
  // and Trial::constraints are filled from trial_values.
  virtual Result<History> ListTrials(ExperimentId e) = 0;
  virtual Result<std::vector<TrialRecord>> ListTrialRecords(ExperimentId e) = 0;
  // The same records with `trial.intermediate` left empty: one query over
  // the trials table, cheap at any number of reports (counts, best values,
  // one trial's row).
  virtual Result<std::vector<TrialRecord>> ListTrialSummaries(ExperimentId e) = 0;
  // One trial's record, as ListTrialSummaries has it (one row, whatever the
  // number of trials); NotFound if there is no such trial.
  virtual Result<TrialRecord> GetTrialSummary(TrialId t) = 0;
  // Counts by state and the best completed trial, from SQL aggregates.
  virtual Result<TrialTally> TallyTrials(ExperimentId e, bool maximize) = 0;
  // Every counted report of the experiment's current attempts, in arrival
  // order (excluded ones left out).
  virtual Result<std::vector<StoredReport>> ListReports(ExperimentId e) = 0;
  // All reports of one trial (every metric, every attempt, excluded ones
  // too, marked), in arrival order.
  virtual Result<std::vector<StoredReport>> ListTrialReports(TrialId t) = 0;

  // Runs an outside tracker holds for experiment `e` (tracking_runs):
  // `target` names the tracker and where (e.g. "mlflow http://host:5000
  // experiment 3"); trial_number -1 is the experiment's own run. Setting
  // one that exists replaces its run id.
  virtual Status SetTrackingRun(ExperimentId e, const std::string& target, int trial_number,
                                const std::string& run_id) = 0;
  // trial_number -> run id, for `target`.
  virtual Result<std::map<int, std::string>> ListTrackingRuns(ExperimentId e, const std::string& target) = 0;

  // A number that changes whenever another connection commits to the
  // database (SQLite's PRAGMA data_version): two equal answers from this
  // storage mean nothing was written in between by anyone else. Meaningful
  // only within one open storage.
  virtual Result<int64_t> DataVersion() = 0;
};

// Opens (creating if needed) the SQLite database at `path`: WAL mode,
// schema created or checked (a newer schema version is FailedPrecondition).
// With create_if_missing false (the query commands), a missing file is
// NotFound instead of a new empty database. With it true (`tune run`), the
// file is first read through (PRAGMA quick_check): a corrupt one is
// FailedPrecondition and left as it was. A write that fails for a full disk
// or a read-only file is FailedPrecondition, naming the cause. Schema: docs/database.md.
// With wal false the file gets a rollback journal instead (a network
// filesystem, where WAL's shared memory does not work: storage/open_storage.h).
Result<std::unique_ptr<Storage>> OpenSqliteStorage(const std::string& path,
                                                   bool create_if_missing = true, bool wal = true);

// Opens an existing database for reading only (the dashboard): SQLite's
// read-only mode, so nothing is ever written to it, and in WAL mode it
// never blocks `tune run`. Missing file: NotFound. A file that fails
// quick_check, is not SQLite, is not a tune database or has another schema
// version (this never upgrades one): FailedPrecondition, one sentence
// naming the file. Every write method of the result fails.
Result<std::unique_ptr<Storage>> OpenSqliteStorageReadOnly(const std::string& path);

}  // namespace tune
