#include "dashboard/dashboard_data.h"

#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "schedulers/asha_scheduler.h"
#include "search/ped_anova.h"
#include "tuner/experiment_spec.h"
#include "tuner/core/json_text.h"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

const TrialState kStates[] = {TrialState::kPending, TrialState::kRunning,   TrialState::kCompleted,
                              TrialState::kPruned,  TrialState::kFailed,    TrialState::kStopped};

Json Num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
Json Opt(const std::optional<double>& v) { return v ? Num(*v) : Json(nullptr); }
Json Opt(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); }

Json ParamJson(const ParamValue& v) {
  return std::visit([](const auto& x) { return Json(x); }, v);
}

Json ParamsJson(const ParamMap& params) {
  Json out = Json::object();
  for (const auto& [name, value] : params) out[name] = ParamJson(value);
  return out;
}

// The stored spec, parsed; nullopt when it does not parse here (written by
// another version): the objective then falls back to the defaults.
std::optional<ExperimentSpec> SpecOf(const ExperimentRecord& e) {
  auto spec = ParseExperimentSpec(e.spec_json, "experiment '" + e.name + "'");
  if (!spec.ok()) return std::nullopt;
  return *spec;
}

bool Better(double a, double b, Mode mode) { return mode == Mode::kMin ? a < b : a > b; }

// TallyTrials' answer for records already read (one snapshot, so the
// experiment document's counts always match its rows).
TrialTally TallyRecords(const std::vector<TrialRecord>& records, Mode mode) {
  TrialTally tally;
  for (const TrialRecord& r : records) {
    ++tally.counts[r.trial.state];
    ++tally.total;
    if (r.trial.state != TrialState::kCompleted || !r.trial.value || !std::isfinite(*r.trial.value)) continue;
    if (!tally.best || Better(*r.trial.value, tally.best->second, mode))
      tally.best = std::make_pair(r.trial.number, *r.trial.value);
  }
  return tally;
}

// The objective the stored spec names (the defaults if it does not parse).
ObjectiveSpec ObjectiveOf(const std::optional<ExperimentSpec>& spec) {
  return spec ? spec->objective : ObjectiveSpec{};
}

// Fields shared by the experiments list and the experiment document.
Json Summary(const ExperimentRecord& e, const std::optional<ExperimentSpec>& spec, const TrialTally& tally) {
  ObjectiveSpec objective = ObjectiveOf(spec);
  Json j;
  j["name"] = e.name;
  j["state"] = ExperimentStateName(e.state);
  j["message"] = e.message;
  j["created_at"] = Num(e.created_at);
  j["ended_at"] = Opt(e.ended_at);
  j["run_seconds"] = Num(e.run_seconds);
  j["metric"] = objective.metric;
  j["mode"] = objective.mode == Mode::kMin ? "min" : "max";
  Json counts = Json::object();
  for (TrialState s : kStates) {
    auto it = tally.counts.find(s);
    counts[TrialStateName(s)] = it == tally.counts.end() ? 0 : it->second;
  }
  j["counts"] = counts;
  j["trials"] = tally.total;
  j["best"] = tally.best ? Json{{"number", tally.best->first}, {"value", tally.best->second}} : Json(nullptr);
  return j;
}

Json TrialRow(const TrialRecord& r) {
  Json j;
  j["number"] = r.trial.number;
  j["state"] = TrialStateName(r.trial.state);
  j["value"] = Opt(r.trial.value);
  j["params"] = ParamsJson(r.trial.params);
  j["attempts"] = r.started_at ? r.trial.attempt + 1 : 0;
  j["last_step"] = Opt(r.last_step);
  j["pruned_rung"] = Opt(r.pruned_rung);
  j["started_at"] = Opt(r.started_at);
  j["ended_at"] = Opt(r.ended_at);
  j["location"] = r.location;
  j["message"] = r.message;
  return j;
}

Json ParametersJson(const SearchSpace& space) {
  Json out = Json::array();
  for (const auto& [name, dist] : space) {
    Json p;
    p["name"] = name;
    if (const auto* f = std::get_if<FloatDistribution>(&dist)) {
      p["type"] = "float";
      p["low"] = f->low;
      p["high"] = f->high;
      p["log"] = f->log;
    } else if (const auto* i = std::get_if<IntDistribution>(&dist)) {
      p["type"] = "int";
      p["low"] = i->low;
      p["high"] = i->high;
      p["log"] = i->log;
    } else {
      const auto& c = std::get<CategoricalDistribution>(dist);
      p["type"] = "choice";
      p["choices"] = Json::array();
      for (const ParamValue& v : c.choices) p["choices"].push_back(ParamJson(v));
    }
    out.push_back(p);
  }
  return out;
}

Json SchedulerJson(const SchedulerSpec& s, Mode mode) {
  Json j;
  j["type"] = s.type;
  j["time_attr"] = s.time_attr;
  if (s.type != "asha") return j;
  j["max_t"] = s.max_t;
  j["grace_period"] = s.grace_period;
  j["reduction_factor"] = s.reduction_factor;
  j["brackets"] = s.brackets;
  AshaOptions options;
  options.max_t = s.max_t;
  options.grace_period = s.grace_period;
  options.reduction_factor = s.reduction_factor;
  options.brackets = s.brackets;
  options.maximize = mode == Mode::kMax;
  Json milestones = Json::array();
  if (ValidateAshaOptions(options).ok()) {
    AshaScheduler asha(options);
    for (int b = 0; b < asha.num_brackets(); ++b) milestones.push_back(asha.Milestones(b));
  }
  j["milestones"] = milestones;
  return j;
}

Json ImportanceJson(const std::optional<ExperimentSpec>& spec, const std::vector<TrialRecord>& records) {
  if (!spec) return Json{{"error", "the stored experiment.json does not parse with this tune"}};
  History trials;
  trials.reserve(records.size());
  for (const TrialRecord& r : records) trials.push_back(r.trial);
  auto result = PedAnovaImportances(spec->parameters, trials, spec->objective.mode == Mode::kMax);
  if (!result.ok()) return Json{{"error", result.status().message()}};
  Json j;
  j["method"] = "ped-anova";
  j["trials"] = result->trials;
  j["top_trials"] = result->top_trials;
  j["importances"] = Json::array();
  for (const ParamImportance& p : result->importances) {
    j["importances"].push_back({{"parameter", p.name}, {"importance", p.importance}});
  }
  return j;
}

// The last `n` lines of a file (read as a whole: logs of one trial), and
// whether lines were left out; nullopt if it cannot be read.
std::optional<std::pair<std::vector<std::string>, bool>> Tail(const fs::path& path, int n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::deque<std::string> lines;
  bool dropped = false;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(std::move(line));
    if (static_cast<int>(lines.size()) > n) {
      lines.pop_front();
      dropped = true;
    }
  }
  return std::make_pair(std::vector<std::string>(lines.begin(), lines.end()), dropped);
}

// JSON text for the page. Invalid UTF-8 (a log line cut mid-character, a
// binary byte) becomes U+FFFD instead of failing the whole document.
std::string Dump(const Json& j) { return DumpJson(j); }

// One trial's document: its row, every report, its log tails.
Result<Json> TrialDoc(Storage& storage, const std::string& runs_dir, const ExperimentRecord& e,
                      const std::optional<ExperimentSpec>& spec, const TrialRecord& record, int log_lines) {
  TUNE_ASSIGN_OR_RETURN(std::vector<StoredReport> reports, storage.ListTrialReports(record.trial.id));
  Json j = TrialRow(record);
  j["experiment"] = e.name;
  j["metric"] = spec ? spec->objective.metric : ObjectiveSpec{}.metric;
  j["current_attempt"] = record.trial.attempt;
  Json rows = Json::array();
  for (const StoredReport& s : reports) {
    Json metrics = Json::object();
    for (const auto& [name, value] : s.report.values) metrics[name] = Num(value);
    rows.push_back({{"seq", s.seq},
                    {"attempt", s.attempt},
                    {"step", s.report.step},
                    {"time", Num(s.report.time)},
                    {"excluded", s.excluded.empty() ? Json(nullptr) : Json(s.excluded)},
                    {"metrics", metrics}});
  }
  j["reports"] = rows;
  // Logs: only the directory `tune run` gave this trial, ranks 0 .. workers - 1.
  // A name with a path separator (possible only in a hand-edited file)
  // reads no log.
  Json logs = Json::array();
  const bool safe_name = e.name.find('/') == std::string::npos && e.name != "." && e.name != "..";
  const int workers = !safe_name ? 0 : spec ? spec->trial.workers : 1;
  char dir[32];
  std::snprintf(dir, sizeof dir, "trial_%04d", record.trial.number);
  for (int rank = 0; rank < workers; ++rank) {
    const std::string file = "rank_" + std::to_string(rank) + ".log";
    auto tail = Tail(fs::path(runs_dir) / e.name / dir / file, log_lines);
    Json log{{"rank", rank}, {"file", std::string(dir) + "/" + file}};
    if (tail) {
      log["lines"] = tail->first;
      log["truncated"] = tail->second;
    } else {
      log["lines"] = Json::array();
      log["missing"] = true;
    }
    logs.push_back(log);
  }
  j["logs"] = logs;
  return j;
}

}  // namespace

std::string RunsDirFor(const std::string& db_path) {
  fs::path dir = fs::path(db_path).parent_path();
  return (dir.empty() ? fs::path("tune_runs") : dir / "tune_runs").string();
}

DashboardData::DashboardData(Storage& storage, std::string runs_dir)
    : storage_(storage), runs_dir_(std::move(runs_dir)) {}

Result<std::string> DashboardData::Experiments() {
  TUNE_ASSIGN_OR_RETURN(std::vector<ExperimentRecord> experiments, storage_.ListExperiments());
  Json out = Json::array();
  for (const ExperimentRecord& e : experiments) {
    std::optional<ExperimentSpec> spec = SpecOf(e);
    TUNE_ASSIGN_OR_RETURN(TrialTally tally, storage_.TallyTrials(e.id, ObjectiveOf(spec).mode == Mode::kMax));
    out.push_back(Summary(e, spec, tally));
  }
  return Dump(out);
}

Result<std::string> DashboardData::Experiment(const std::string& name) {
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, storage_.FindExperiment(name));
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage_.ListTrialRecords(e.id));
  std::optional<ExperimentSpec> spec = SpecOf(e);
  Json j = Summary(e, spec, TallyRecords(records, ObjectiveOf(spec).mode));
  j["parameters"] = spec ? ParametersJson(spec->parameters) : Json::array();
  j["scheduler"] = spec ? SchedulerJson(spec->scheduler, spec->objective.mode) : Json{{"type", "unknown"}};
  Json rows = Json::array();
  Json curves = Json::object();
  // Appended to the object's vector directly: ordered_json's operator[]
  // looks a key up linearly, which made 10,000 curves a quadratic number
  // of string compares. Trial numbers are unique, so no lookup is needed.
  Json::object_t& curve_of = curves.get_ref<Json::object_t&>();
  curve_of.reserve(records.size());
  for (const TrialRecord& r : records) {
    rows.push_back(TrialRow(r));
    if (r.trial.intermediate.empty()) continue;
    Json curve = Json::array();
    for (const auto& [step, value] : r.trial.intermediate) curve.push_back({step, Num(value)});
    curve_of.emplace_back(std::to_string(r.trial.number), std::move(curve));
  }
  j["trial_rows"] = rows;
  j["curves"] = curves;
  j["importance"] = ImportanceJson(spec, records);
  return Dump(j);
}

Result<std::string> DashboardData::TrialDetail(const std::string& experiment, int number, int log_lines) {
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, storage_.FindExperiment(experiment));
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage_.ListTrialSummaries(e.id));
  for (const TrialRecord& r : records) {
    if (r.trial.number != number) continue;
    TUNE_ASSIGN_OR_RETURN(Json j, TrialDoc(storage_, runs_dir_, e, SpecOf(e), r, log_lines));
    return Dump(j);
  }
  return Status::NotFound("experiment '" + experiment + "' has no trial " + std::to_string(number));
}

Result<std::string> DashboardData::AllTrialDetails(const std::string& experiment, int log_lines) {
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, storage_.FindExperiment(experiment));
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage_.ListTrialRecords(e.id));
  const std::optional<ExperimentSpec> spec = SpecOf(e);
  Json all = Json::object();
  Json::object_t& detail_of = all.get_ref<Json::object_t&>();  // appended as in Experiment()
  detail_of.reserve(records.size());
  for (const TrialRecord& r : records) {
    TUNE_ASSIGN_OR_RETURN(Json j, TrialDoc(storage_, runs_dir_, e, spec, r, log_lines));
    detail_of.emplace_back(std::to_string(r.trial.number), std::move(j));
  }
  return Dump(all);
}

}  // namespace tune
