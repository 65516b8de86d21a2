#include "tracking/mlflow_runs.h"

#include <cmath>
#include <cstdio>

#include "core/trial_dir_name.h"

namespace tune::tracking {
namespace {

constexpr int kParent = -1;
constexpr size_t kMaxTagValue = 5000;  // every MLflow store takes this much

std::string Cut(const std::string& s) { return s.size() <= kMaxTagValue ? s : s.substr(0, kMaxTagValue - 3) + "..."; }

// A single-quoted string of MLflow's search filter syntax.
std::string FilterString(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

}  // namespace

MlflowRuns::MlflowRuns(MlflowClient* client, Storage* storage, MlflowTarget target)
    : client_(client), storage_(storage), target_(std::move(target)) {
  name_ = target_.experiment_name.empty() ? target_.tune_experiment : target_.experiment_name;
}

int64_t MlflowRuns::Millis(double unix_seconds) { return static_cast<int64_t>(std::llround(unix_seconds * 1000.0)); }

std::string MlflowRuns::RunName(int number) {
  return TrialDirName(number);
}

Status MlflowRuns::Connect() {
  if (connected_) return Status::Ok();
  if (target_.experiment_id == 0) {
    TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, storage_->FindExperiment(target_.tune_experiment));
    target_.experiment_id = e.id;
  }
  TUNE_ASSIGN_OR_RETURN(experiment_id_, client_->EnsureExperiment(name_));
  storage_target_ = "mlflow " + client_->connection().tracking_uri + " experiment " + experiment_id_;
  TUNE_ASSIGN_OR_RETURN(runs_, storage_->ListTrackingRuns(target_.experiment_id, storage_target_));
  // Trials numbered from here on are made after this point: no earlier
  // process can have made their runs.
  TUNE_ASSIGN_OR_RETURN(TrialTally tally, storage_->TallyTrials(target_.experiment_id, target_.maximize));
  first_new_number_ = tally.total;
  connected_ = true;
  return Status::Ok();
}

Result<std::string> MlflowRuns::FindOrCreate(int number, const std::string& run_name, double start_time,
                                             bool* created) {
  if (created) *created = false;
  if (auto it = runs_.find(number); it != runs_.end()) return it->second;
  const std::string key = target_.tune_experiment + "/" + (number == kParent ? std::string("parent") : run_name);
  // The search finds a run made by an earlier process (or by a call of this
  // one whose answer was lost); a trial new to this process has none.
  std::vector<MlflowRun> found;
  if (number == kParent || number < first_new_number_ || create_failed_.count(number)) {
    TUNE_ASSIGN_OR_RETURN(found, client_->SearchRuns(experiment_id_, "tags.`tune.run_key` = " + FilterString(key)));
  }
  std::string run_id;
  if (!found.empty()) {
    run_id = found.front().run_id;
  } else {
    MlflowTags tags = {{"tune.run_key", key}, {"tune.experiment", target_.tune_experiment}};
    if (number == kParent) {
      for (const auto& [k, v] : target_.tags) tags.emplace_back(k, v);
    } else {
      TUNE_ASSIGN_OR_RETURN(std::string parent, ParentRun(start_time));
      tags.emplace_back("mlflow.parentRunId", parent);
      tags.emplace_back("tune.trial_number", std::to_string(number));
    }
    Result<std::string> made = client_->CreateRun(experiment_id_, run_name, Millis(start_time), tags);
    if (!made.ok()) {
      create_failed_.insert(number);
      return made.status();
    }
    run_id = *made;
    if (created) *created = true;
  }
  runs_[number] = run_id;
  // The database is the first place a resume looks; if this write fails the
  // tag search above still finds the run.
  (void)storage_->SetTrackingRun(target_.experiment_id, storage_target_, number, run_id);
  return run_id;
}

Result<std::string> MlflowRuns::ParentRun(double start_time, bool* created) {
  return FindOrCreate(kParent, target_.tune_experiment, start_time, created);
}

Result<std::string> MlflowRuns::TrialRun(int number, double start_time, bool* created) {
  return FindOrCreate(number, RunName(number), start_time, created);
}

void MlflowRuns::Forget(int number) { runs_.erase(number); }

MlflowTags MlflowRuns::Params(const Trial& t) {
  MlflowTags out;
  for (const auto& [name, v] : t.params) out.emplace_back(name, Cut(ParamToString(v)));
  return out;
}

MlflowTags MlflowRuns::StartTags(const Trial& t) {
  return {{"tune.state", "running"}, {"tune.attempt", std::to_string(t.attempt)}};
}

MlflowTags MlflowRuns::EndTags(const TrialRecord& r) {
  MlflowTags out = {{"tune.state", TrialStateName(r.trial.state)}, {"tune.attempt", std::to_string(r.trial.attempt)}};
  if (r.pruned_rung) out.emplace_back("tune.pruned_rung", std::to_string(*r.pruned_rung));
  if (r.trial.state == TrialState::kFailed && !r.message.empty()) out.emplace_back("tune.error", Cut(r.message));
  return out;
}

const char* MlflowRuns::RunStatus(TrialState s) {
  switch (s) {
    case TrialState::kCompleted:
      return "FINISHED";
    case TrialState::kFailed:
      return "FAILED";
    case TrialState::kPruned:
    case TrialState::kStopped:
      return "KILLED";
    default:
      return "RUNNING";
  }
}

std::vector<MlflowMetric> MlflowRuns::Metrics(const MetricReport& r) {
  std::vector<MlflowMetric> out;
  for (const auto& [name, v] : r.values) out.push_back({name, v, Millis(r.time), r.step});
  return out;
}

std::vector<MlflowMetric> MlflowRuns::FinalValues(const FinalMetricNames& names, const Trial& t, int64_t step,
                                                  double time) {
  std::vector<MlflowMetric> out;
  for (const auto& [key, v] : FinalMetrics(names, t)) out.push_back({key, v, Millis(time), step});
  return out;
}

Result<MlflowRuns::ParentEnd> MlflowRuns::ParentEndFromStorage(double now) {
  ParentEnd end;
  ExperimentState state = ExperimentState::kRunning;
  std::optional<double> ended_at;
  if (auto e = storage_->FindExperiment(target_.tune_experiment); e.ok() && e->id == target_.experiment_id) {
    state = e->state;
    ended_at = e->ended_at;
  }
  end.status = state == ExperimentState::kCompleted ? "FINISHED"
               : state == ExperimentState::kFailed  ? "FAILED"
                                                    : "KILLED";
  end.end_time_ms = Millis(ended_at.value_or(now));
  // Once per run: the trials without their learning curves.
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage_->ListTrialSummaries(target_.experiment_id));
  History trials;
  trials.reserve(records.size());
  for (TrialRecord& r : records) trials.push_back(std::move(r.trial));
  const Trial* best = nullptr;
  int finished = 0;
  for (const Trial& t : trials) {
    if (IsFinished(t.state)) ++finished;
    if (t.state != TrialState::kCompleted || !t.value || std::isnan(*t.value)) continue;
    if (!best || (target_.maximize ? *t.value > *best->value : *t.value < *best->value)) best = &t;
  }
  end.tags.emplace_back("tune.state", ExperimentStateName(state));
  end.tags.emplace_back("tune.finished_trials", std::to_string(finished));
  if (best) {
    end.metrics.push_back({"best_" + target_.objective_metric, *best->value, *end.end_time_ms, finished});
    end.tags.emplace_back("tune.best_trial", std::to_string(best->number));
    for (const auto& [name, v] : best->params) end.tags.emplace_back("best." + name, Cut(ParamToString(v)));
  }
  return end;
}

}  // namespace tune::tracking
