#include "tuner/export_mlflow.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "tracking/mlflow_uri.h"
#include "tuner/report.h"

namespace tune {
namespace {

using tracking::MlflowClient;
using tracking::MlflowMetric;
using tracking::MlflowRun;
using tracking::MlflowRuns;
using tracking::MlflowTags;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Sent {
  int runs_created = 0, points = 0, params = 0, tags = 0, statuses = 0;
  std::set<std::pair<std::string, std::string>> refused;  // (kind, key) named on stderr
};

// The items of `want` that `have` lacks or holds with another value.
MlflowTags Missing(const MlflowTags& want, const std::map<std::string, std::string>& have) {
  MlflowTags out;
  for (const auto& [k, v] : want) {
    auto it = have.find(k);
    if (it == have.end() || it->second != v) out.emplace_back(k, v);
  }
  return out;
}

// The points of `points` that the run's histories lack, by (key, step, timestamp).
Result<std::vector<MlflowMetric>> MissingPoints(MlflowClient& client, const MlflowRun& run,
                                                const std::vector<MlflowMetric>& points) {
  std::set<std::string> keys;
  for (const MlflowMetric& m : points) keys.insert(m.key);
  std::set<std::tuple<std::string, int64_t, int64_t>> have;
  for (const std::string& key : keys) {
    if (!run.latest_metrics.count(key)) continue;  // no history at all
    TUNE_ASSIGN_OR_RETURN(std::vector<MlflowMetric> history, client.GetMetricHistory(run.run_id, key));
    for (const MlflowMetric& m : history) have.insert({key, m.step, m.timestamp_ms});
  }
  std::vector<MlflowMetric> out;
  for (const MlflowMetric& m : points)
    if (!have.count({m.key, m.step, m.timestamp_ms})) out.push_back(m);
  return out;
}

// Brings one run up to `params`, `points`, `tags`, `status` (empty: leave it).
Status SyncRun(MlflowClient& client, const std::string& run_id, const MlflowTags& params,
               const std::vector<MlflowMetric>& points, const MlflowTags& tags, const std::string& status,
               std::optional<int64_t> end_time_ms, Sent* sent) {
  TUNE_ASSIGN_OR_RETURN(MlflowRun run, client.GetRun(run_id));
  MlflowTags new_params = Missing(params, run.params);
  MlflowTags new_tags = Missing(tags, run.tags);
  TUNE_ASSIGN_OR_RETURN(std::vector<MlflowMetric> new_points, MissingPoints(client, run, points));
  if (!new_params.empty() || !new_tags.empty() || !new_points.empty()) {
    std::vector<tracking::RefusedKey> refused;
    TUNE_RETURN_IF_ERROR(client.LogBatch(run_id, new_points, new_params, new_tags, &refused));
    for (const tracking::RefusedKey& r : refused) {
      if (!sent->refused.insert({r.kind, r.key}).second) continue;
      std::string quoted;
      for (char c : r.key) quoted += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
      std::cerr << "tune: MLflow at " << client.connection().tracking_uri << " does not take the " << r.kind
                << " key \"" << quoted << "\" (" << r.why << "); it is left out of every run, the database keeps it\n";
    }
    auto kept = [&](const char* kind, const std::string& key) { return !sent->refused.count({kind, key}); };
    new_params.erase(std::remove_if(new_params.begin(), new_params.end(),
                                    [&](const auto& kv) { return !kept("param", kv.first); }),
                     new_params.end());
    new_tags.erase(std::remove_if(new_tags.begin(), new_tags.end(), [&](const auto& kv) { return !kept("tag", kv.first); }),
                   new_tags.end());
    new_points.erase(std::remove_if(new_points.begin(), new_points.end(),
                                    [&](const MlflowMetric& m) { return !kept("metric", m.key); }),
                     new_points.end());
  }
  sent->params += static_cast<int>(new_params.size());
  sent->tags += static_cast<int>(new_tags.size());
  sent->points += static_cast<int>(new_points.size());
  const bool ended = status != "RUNNING";
  if (!status.empty() && (run.status != status || (ended && end_time_ms && run.end_time_ms != end_time_ms))) {
    TUNE_RETURN_IF_ERROR(client.UpdateRun(run_id, status, ended ? end_time_ms : std::nullopt));
    ++sent->statuses;
  }
  return Status::Ok();
}

}  // namespace

std::string SpecJsonWithoutCredentials(const std::string& text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) return text;
  auto t = doc.find("tracking");
  if (t == doc.end() || !t->is_object()) return text;
  auto m = t->find("mlflow");
  if (m == t->end() || !m->is_object()) return text;
  auto u = m->find("tracking_uri");
  if (u == m->end() || !u->is_string()) return text;
  const std::string uri = u->get<std::string>();
  Result<tracking::MlflowUri> parsed = tracking::ParseMlflowUri(uri);
  if (!parsed.ok() || !parsed->has_userinfo) return text;
  const std::string clean = parsed->WithoutCredentials();
  const std::string quoted = DumpJson(uri);
  const size_t at = text.find(quoted);
  if (at != std::string::npos && text.find(quoted, at + 1) == std::string::npos) {
    return text.substr(0, at) + DumpJson(clean) + text.substr(at + quoted.size());
  }
  *u = clean;
  return DumpJson(doc, 2) + "\n";
}

tracking::FinalMetricNames FinalMetricNamesOf(const ExperimentSpec& spec) {
  tracking::FinalMetricNames names;
  if (IsMultiObjective(spec)) {
    for (const ObjectiveSpec& o : spec.objectives) names.objectives.push_back(o.metric);
  }
  for (const ConstraintSpec& c : spec.constraints) names.constraints.push_back(c.metric);
  return names;
}

Result<tracking::MlflowTarget> MlflowTargetOf(const ExperimentSpec& spec, const std::string& tracking_uri) {
  const TrackingSpec::Mlflow m = spec.tracking.mlflow.value_or(TrackingSpec::Mlflow{});
  TUNE_ASSIGN_OR_RETURN(tracking::MlflowConnection c,
                        tracking::MlflowConnection::FromEnvironment(tracking_uri.empty() ? m.tracking_uri : tracking_uri));
  tracking::MlflowTarget t;
  t.connection = std::move(c);
  t.experiment_name = m.experiment_name;
  t.tags = m.tags;
  t.tune_experiment = spec.name;
  t.objective_metric = spec.objective.metric;
  t.maximize = spec.objective.mode == Mode::kMax;
  t.final_metrics = FinalMetricNamesOf(spec);
  return t;
}

Status ExportMlflow(Storage& storage, const std::string& experiment, const std::string& tracking_uri,
                    std::ostream& out) {
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, ResolveExperiment(storage, experiment));
  auto spec = ParseExperimentSpec(e.spec_json, "experiment '" + e.name + "' (as stored)");
  if (!spec.ok()) return Status::FailedPrecondition(spec.status().message());
  TUNE_ASSIGN_OR_RETURN(tracking::MlflowTarget target, MlflowTargetOf(*spec, tracking_uri));
  target.experiment_id = e.id;
  MlflowClient client(target.connection);
  const std::string uri = client.connection().tracking_uri;  // without credentials
  if (std::string w = client.connection().PlainHttpWarning(); !w.empty()) std::cerr << w << "\n";
  MlflowRuns runs(&client, &storage, target);
  TUNE_RETURN_IF_ERROR(runs.Connect());
  Sent sent;
  bool created = false;
  TUNE_ASSIGN_OR_RETURN(std::string parent, runs.ParentRun(e.created_at, &created));
  sent.runs_created += created;

  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage.ListTrialRecords(e.id));
  int trials = 0;
  for (const TrialRecord& rec : records) {
    if (!rec.started_at) continue;
    ++trials;
    TUNE_ASSIGN_OR_RETURN(std::string run, runs.TrialRun(rec.trial.number, *rec.started_at, &created));
    sent.runs_created += created;
    TUNE_ASSIGN_OR_RETURN(std::vector<StoredReport> reports, storage.ListTrialReports(rec.trial.id));
    std::vector<MlflowMetric> points;
    for (const StoredReport& r : reports) {
      // What the live sink gets: every counted report of every attempt.
      if (!r.excluded.empty()) continue;
      for (const MlflowMetric& m : MlflowRuns::Metrics(r.report)) points.push_back(m);
    }
    if (rec.ended_at) {
      for (MlflowMetric& m : MlflowRuns::FinalValues(target.final_metrics, rec.trial, rec.last_step.value_or(0),
                                                     *rec.ended_at))
        points.push_back(std::move(m));
    }
    const bool finished = IsFinished(rec.trial.state);
    MlflowTags tags = finished ? MlflowRuns::EndTags(rec) : MlflowRuns::StartTags(rec.trial);
    // A trial that did not finish: RUNNING while its experiment runs, else
    // KILLED (the run was interrupted; a resume sets it RUNNING again).
    std::string status = finished ? MlflowRuns::RunStatus(rec.trial.state)
                         : e.state == ExperimentState::kRunning ? "" : "KILLED";
    std::optional<int64_t> end;
    if (rec.ended_at) end = MlflowRuns::Millis(*rec.ended_at);
    else if (e.ended_at) end = MlflowRuns::Millis(*e.ended_at);
    TUNE_RETURN_IF_ERROR(SyncRun(client, run, MlflowRuns::Params(rec.trial), points, tags, status, end, &sent));
  }
  TUNE_ASSIGN_OR_RETURN(MlflowRuns::ParentEnd pe, runs.ParentEndFromStorage(e.ended_at.value_or(Now())));
  // A running experiment's parent stays RUNNING.
  TUNE_RETURN_IF_ERROR(SyncRun(client, parent, {}, pe.metrics, pe.tags,
                               e.state == ExperimentState::kRunning ? "" : pe.status, pe.end_time_ms, &sent));

  out << "tune: exported experiment '" << e.name << "' (" << trials << " trial" << (trials == 1 ? "" : "s")
      << ") to MLflow experiment '" << runs.mlflow_experiment_name() << "' (id " << runs.mlflow_experiment_id()
      << ") at " << uri << ": " << sent.runs_created << " run" << (sent.runs_created == 1 ? "" : "s")
      << " created, " << sent.points << " metric point" << (sent.points == 1 ? "" : "s") << ", " << sent.params
      << " param" << (sent.params == 1 ? "" : "s") << ", " << sent.tags << " tag" << (sent.tags == 1 ? "" : "s")
      << " and " << sent.statuses << " status" << (sent.statuses == 1 ? "" : "es") << " sent"
      << (sent.runs_created + sent.points + sent.params + sent.tags + sent.statuses == 0 ? " (it was all there)" : "")
      << "\n";
  return Status::Ok();
}

}  // namespace tune
