// MlflowRuns: how a tune experiment maps onto MLflow, shared by the live
// MlflowSink and `tune export mlflow` (docs/experiment.md, `tracking`).
//
// - The tune experiment is a parent run (run name = the experiment's name,
//   the spec's tags, tune.experiment); each trial is a nested child run
//   (mlflow.parentRunId, run name trial_NNNN, tune.trial_number).
// - Every run carries tag tune.run_key ("<experiment>/parent",
//   "<experiment>/trial_0007"). A run is found by, in order: the run id
//   stored in the database (tracking_runs), a runs/search on that tag (a run
//   created by a call whose answer was lost, or whose id the database never
//   got), else it is created and its id stored. So a retried call, a
//   resumed `tune run` and `tune export mlflow` all reach the same runs.
//   The search is skipped for a trial made after Connect() whose run was
//   never tried: no one else can have made it.
// - Trial params: the trial's values (ParamToString). Metrics: every counted
//   report, with its step and time. Tags: tune.state, tune.attempt,
//   tune.pruned_rung, tune.error. Status: FINISHED (completed), FAILED,
//   KILLED (pruned or stopped). With several objectives or constraints, a
//   completed trial's final values at its last step (FinalMetrics,
//   tracking/final_metrics.h): each objective under its metric name,
//   tune.constraint.<metric>, tune.feasible.
// - The parent's end: metric best_<objective metric> (step = finished trials),
//   tags tune.best_trial and best.<param> (tags, not params: MLflow params
//   never change, and a resumed experiment may find a better trial).
// Not thread-safe: one per thread.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/trial.h"
#include "storage/storage.h"
#include "tracking/final_metrics.h"
#include "tracking/mlflow_client.h"

namespace tune::tracking {

struct MlflowTarget {
  MlflowConnection connection;
  std::string experiment_name;  // MLflow's; empty: the tune experiment's name
  std::map<std::string, std::string> tags;  // on the parent run
  std::string tune_experiment;  // tune's experiment name
  ExperimentId experiment_id = 0;  // 0: found by tune_experiment in the database
  std::string objective_metric;
  bool maximize = false;
  FinalMetricNames final_metrics;  // several objectives, constraints
};

class MlflowRuns {
 public:
  MlflowRuns(MlflowClient* client, Storage* storage, MlflowTarget target);

  // Finds or creates the MLflow experiment and reads the run ids stored for
  // it. Repeatable until it succeeds; then a no-op.
  Status Connect();
  bool connected() const { return connected_; }
  const std::string& mlflow_experiment_id() const { return experiment_id_; }
  const std::string& mlflow_experiment_name() const { return name_; }
  ExperimentId experiment_id() const { return target_.experiment_id; }  // tune's

  // The parent run's / trial `number`'s run id, found or created (see above).
  // `created` (if not null) says whether it was created now.
  Result<std::string> ParentRun(double start_time, bool* created = nullptr);
  Result<std::string> TrialRun(int number, double start_time, bool* created = nullptr);
  // Forgets a run id that turned out not to exist (deleted in MLflow).
  void Forget(int number);

  // What a trial's run carries.
  static MlflowTags Params(const Trial& t);
  static MlflowTags StartTags(const Trial& t);  // tune.state running, tune.attempt
  static MlflowTags EndTags(const TrialRecord& r);
  static const char* RunStatus(TrialState s);  // FINISHED, FAILED, KILLED; RUNNING otherwise
  static std::vector<MlflowMetric> Metrics(const MetricReport& r);
  // A finished trial's final values (FinalMetrics) at `step` (its last
  // step) and `time` (Unix s, its end); none for most trials.
  static std::vector<MlflowMetric> FinalValues(const FinalMetricNames& names, const Trial& t, int64_t step,
                                               double time);
  // The parent's end: best metric and tags, and its status from the
  // experiment's state (running counts as KILLED: the run was interrupted).
  struct ParentEnd {
    std::vector<MlflowMetric> metrics;
    MlflowTags tags;
    std::string status;
    std::optional<int64_t> end_time_ms;
  };
  Result<ParentEnd> ParentEndFromStorage(double now);

  static int64_t Millis(double unix_seconds);
  static std::string RunName(int number);  // trial_0007

 private:
  Result<std::string> FindOrCreate(int number, const std::string& run_name, double start_time, bool* created);

  MlflowClient* client_;
  Storage* storage_;
  MlflowTarget target_;
  bool connected_ = false;
  std::string name_, experiment_id_, storage_target_;
  std::map<int, std::string> runs_;  // trial number (-1: parent) -> run id
  // Trials numbered below this existed when Connect() ran; only their runs
  // (and those of failed runs/create calls) are searched for by tag.
  int first_new_number_ = 0;
  std::set<int> create_failed_;
};

}  // namespace tune::tracking
