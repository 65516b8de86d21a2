#include "tuner/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/one_line.h"
#include "core/utf8.h"
#include "dashboard/pareto_view.h"
#include "dashboard/results_query.h"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

struct Objective {
  std::string metric = "loss";
  Mode mode = Mode::kMin;
};

const char* ModeName(Mode m) { return m == Mode::kMin ? "min" : "max"; }

// The stored experiment.json, parsed; nullopt when it does not parse here
// (written by hand, or by a future version).
std::optional<ExperimentSpec> StoredSpec(const ExperimentRecord& e) {
  auto spec = ParseExperimentSpec(e.spec_json, "experiment '" + e.name + "'");
  if (!spec.ok()) return std::nullopt;
  return std::move(spec).value();
}

// The objective as stored with the experiment (with several, the one early
// stopping ranks on: ExperimentSpec::objective). A spec that does not parse
// falls back to its "objective" object's fields, else the defaults.
Objective ObjectiveOf(const ExperimentRecord& e, const std::optional<ExperimentSpec>& spec,
                      std::optional<Mode> override_mode) {
  Objective o;
  if (spec) {
    o.metric = spec->objective.metric;
    o.mode = spec->objective.mode;
  } else {
    try {
      Json spec = Json::parse(e.spec_json);
      if (spec.is_object() && spec.contains("objective") && spec["objective"].is_object()) {
        const Json& obj = spec["objective"];
        if (obj.contains("metric") && obj["metric"].is_string()) o.metric = obj["metric"];
        if (obj.contains("mode") && obj["mode"] == "max") o.mode = Mode::kMax;
      }
    } catch (const Json::exception&) {
    }
  }
  if (override_mode) o.mode = *override_mode;
  return o;
}
Objective ObjectiveOf(const ExperimentRecord& e, std::optional<Mode> override_mode) {
  return ObjectiveOf(e, StoredSpec(e), override_mode);
}

double Now() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

bool HasValue(const Trial& t) { return t.value.has_value() && !std::isnan(*t.value); }

Json OptJson(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}
Json OptJson(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); }

// Full precision (shortest round-trip) for csv and the best trial; empty
// for a missing value.
std::string Exact(const std::optional<double>& v) {
  return v ? ParamToString(ParamValue(*v)) : "";
}
std::string Exact(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : ""; }

// Six significant digits for tables; "-" for a missing value.
std::string Short(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", *v);
  return buf;
}
std::string Short(const ParamValue& v) {
  if (auto* d = std::get_if<double>(&v)) return Short(std::optional<double>(*d));
  return ParamToString(v);
}

std::optional<double> Duration(const TrialRecord& r, double now) {
  if (!r.started_at) return std::nullopt;
  if (r.ended_at) return *r.ended_at - *r.started_at;
  if (r.trial.state == TrialState::kRunning) return now - *r.started_at;
  return std::nullopt;
}

// Columns padded to their widest cell, separated by two spaces; UTF-8
// (a trial's bytes that are not show as U+FFFD, as in JSON).
void PrintTable(std::vector<std::vector<std::string>> rows, std::ostream& out) {
  for (auto& row : rows) {
    for (std::string& cell : row) cell = ValidUtf8(cell);
  }
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

std::vector<std::string> ParamNames(const std::vector<TrialRecord>& records) {
  std::vector<std::string> names;
  for (const TrialRecord& r : records) {
    for (const auto& [name, v] : r.trial.params) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// A trial's object in `tune trials --format json` and `tune trials --trial N
// --format json`.
Json TrialJson(const TrialRecord& r, const std::vector<ScheduleEntry>& schedule, double now) {
  Json j;
  j["number"] = r.trial.number;
  j["trial_id"] = r.trial.id;
  j["state"] = TrialStateName(r.trial.state);
  j["value"] = OptJson(r.trial.value);
  j["last_step"] = OptJson(r.last_step);
  j["pruned_rung"] = OptJson(r.pruned_rung);
  j["attempts"] = AttemptsOf(r);
  j["failed_attempts"] = r.failed_attempts;
  j["duration_s"] = OptJson(Duration(r, now));
  j["started_at"] = OptJson(r.started_at);
  j["ended_at"] = OptJson(r.ended_at);
  j["location"] = r.location;
  j["message"] = r.message;
  j["params"] = ParamsJson(r.trial.params);
  j["schedule"] = ScheduleJson(schedule);
  // Several objectives or constraints: each one's value, in the spec's
  // order (null until the trial completed; NaN as null).
  if (!r.trial.values.empty() || !r.trial.constraints.empty()) {
    Json values = Json::array(), constraints = Json::array();
    for (double v : r.trial.values) values.push_back(OptJson(std::optional<double>(v)));
    for (double c : r.trial.constraints) constraints.push_back(OptJson(std::optional<double>(c)));
    if (!r.trial.values.empty()) j["values"] = values;
    if (!r.trial.constraints.empty()) {
      j["constraints"] = constraints;
      j["feasible"] = IsFeasible(r.trial);
    }
  }
  return j;
}

// `tune best` of a multi-objective experiment: the Pareto front
// (ComputeParetoView), sorted by the first objective.
Status PrintFront(const ExperimentRecord& e, const ExperimentSpec& spec, const std::vector<TrialRecord>& records,
                  const std::string& format, std::ostream& out) {
  const ParetoView view = ComputeParetoView(spec, records);
  if (view.front.empty()) {
    std::string why = std::to_string(records.size()) + " trials so far";
    if (!view.infeasible.empty()) why += "; " + std::to_string(view.infeasible.size()) + " broke a constraint";
    return Status::FailedPrecondition("experiment '" + e.name + "' has no feasible completed trial yet (" + why + ")");
  }
  std::ostringstream text;
  if (format == "json") {
    Json arr = Json::array();
    for (size_t i : view.front) {
      const Trial& t = records[i].trial;
      Json j;
      j["number"] = t.number;
      Json values = Json::array();
      for (double v : t.values) values.push_back(OptJson(std::optional<double>(v)));
      j["values"] = values;
      j["params"] = ParamsJson(t.params);
      arr.push_back(j);
    }
    text << DumpJson(arr, 2) << "\n";
    out << text.str();
    return Status::Ok();
  }
  text << "experiment '" << e.name << "': the Pareto front, " << view.front.size() << " of " << view.feasible.size()
       << " feasible completed trials";
  if (!view.infeasible.empty()) text << " (" << view.infeasible.size() << " more broke a constraint)";
  text << "\n";
  std::vector<std::string> names = ParamNames(records);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"#"};
  for (const ObjectiveSpec& o : spec.objectives) header.push_back(o.metric + " (" + ModeName(o.mode) + ")");
  header.insert(header.end(), names.begin(), names.end());
  rows.push_back(header);
  for (size_t i : view.front) {
    const Trial& t = records[i].trial;
    std::vector<std::string> row = {std::to_string(t.number)};
    for (double v : t.values) row.push_back(Short(std::optional<double>(v)));
    for (const std::string& n : names) {
      auto it = t.params.find(n);
      row.push_back(it == t.params.end() ? "-" : Short(it->second));
    }
    rows.push_back(std::move(row));
  }
  PrintTable(rows, text);
  text << "hypervolume " << Short(std::optional<double>(view.hypervolume)) << ", " << DescribeReference(spec, view)
       << "\n";
  out << text.str();
  return Status::Ok();
}

}  // namespace

std::string ScheduleText(const std::vector<ScheduleEntry>& schedule, const std::string& indent) {
  std::string text;
  for (const ScheduleEntry& s : schedule) {
    text += indent + "from step " + std::to_string(s.step) + ":";
    bool first = true;
    for (const auto& [name, value] : s.params) {
      text += (first ? " " : ", ") + name + "=" + Short(value);
      first = false;
    }
    if (s.donor) {
      text += " (from trial " + std::to_string(*s.donor) + "'s checkpoint-" +
              std::to_string(s.donor_step.value_or(s.step)) + ")";
    }
    text += "\n";
  }
  return ValidUtf8(text);
}

Result<ExperimentRecord> ResolveExperiment(Storage& storage, const std::string& name) {
  if (!name.empty()) return storage.FindExperiment(name);
  TUNE_ASSIGN_OR_RETURN(std::vector<ExperimentRecord> all, storage.ListExperiments());
  if (all.empty()) {
    return Status::FailedPrecondition(
        "the database has no experiments yet; run 'tune run EXPERIMENT.json' first");
  }
  // ListExperiments is in creation order: the last one is the newest.
  return all.back();
}

std::string FormatDuration(double seconds) {
  char buf[32];
  if (seconds < 0) seconds = 0;
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else if (seconds < 3600) {
    int s = static_cast<int>(seconds);
    std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
  } else if (seconds < 86400) {
    int m = static_cast<int>(seconds / 60);
    std::snprintf(buf, sizeof buf, "%dh%02dm", m / 60, m % 60);
  } else {
    int h = static_cast<int>(seconds / 3600);
    std::snprintf(buf, sizeof buf, "%dd%02dh", h / 24, h % 24);
  }
  return buf;
}

std::string CsvRecord(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    const std::string f = ValidUtf8(fields[i]);
    if (f.find_first_of(",\"\r\n") == std::string::npos) {
      out += f;
      continue;
    }
    out += '"';
    for (char c : f) {
      if (c == '"') out += '"';
      out += c;
    }
    out += '"';
  }
  return out + "\r\n";
}

Status PrintBest(Storage& storage, const std::string& experiment, const std::string& format,
                 std::ostream& out, std::optional<Mode> mode) {
  if (format != "table" && format != "json") {
    return Status::InvalidArgument("unknown format '" + format + "' for best: use table or json");
  }
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, ResolveExperiment(storage, experiment));
  const std::optional<ExperimentSpec> spec = StoredSpec(e);
  Objective obj = ObjectiveOf(e, spec, mode);
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage.ListTrialRecords(e.id));
  if (spec && IsMultiObjective(*spec)) return PrintFront(e, *spec, records, format, out);
  if (spec && !spec->constraints.empty()) {
    // The best of the trials that kept every constraint.
    const size_t all = records.size();
    std::erase_if(records, [](const TrialRecord& r) { return !IsFeasible(r.trial); });
    if (BestTrial(records, obj.mode) == nullptr) {
      return Status::FailedPrecondition("experiment '" + e.name + "' has no feasible completed trial yet (" +
                                        std::to_string(all) + " trials so far; " +
                                        std::to_string(all - records.size()) + " broke a constraint)");
    }
  }
  const TrialRecord* best = BestTrial(records, obj.mode);
  if (best == nullptr) {
    return Status::FailedPrecondition("experiment '" + e.name + "' has no completed trial yet (" +
                                      std::to_string(records.size()) + " trials so far)");
  }
  const Trial& t = best->trial;
  TUNE_ASSIGN_OR_RETURN(std::vector<StoredExploit> exploits, storage.ListExploits(e.id));
  const std::vector<ScheduleEntry> schedule = TrialScheduleOf(t, exploits);
  if (format == "json") {
    Json j;
    j["experiment"] = e.name;
    j["trial_id"] = t.id;
    j["number"] = t.number;
    j["value"] = *t.value;
    j["metric"] = obj.metric;
    j["mode"] = ModeName(obj.mode);
    j["params"] = ParamsJson(t.params);
    j["schedule"] = ScheduleJson(schedule);
    out << DumpJson(j, 2) << "\n";
    return Status::Ok();
  }
  std::vector<std::vector<std::string>> rows = {
      {"experiment", e.name},
      {"trial", std::to_string(t.number) + " (id " + std::to_string(t.id) + ")"},
      {obj.metric, Exact(t.value) + " (" + ModeName(obj.mode) + ")"},
  };
  if (best->last_step) rows.push_back({"step", std::to_string(*best->last_step)});
  if (!t.params.empty()) rows.push_back({"params"});
  for (const auto& [name, value] : t.params) {
    rows.push_back({"  " + name, ParamToString(value)});
  }
  std::ostringstream text;
  PrintTable(rows, text);
  // Population Based Training changed its parameters on the way: the final
  // ones alone would not reproduce it (ray#9178).
  if (schedule.size() > 1) text << "schedule\n" << ScheduleText(schedule, "  ");
  out << text.str();
  return Status::Ok();
}

namespace {

// Orders `records` best first (see TrialListing::best_first); a NaN value
// counts as none.
void SortBestFirst(std::vector<TrialRecord>& records, Mode mode) {
  auto rank = [](const TrialRecord& r) {
    if (!HasValue(r.trial)) return 2;
    return r.trial.state == TrialState::kCompleted ? 0 : 1;
  };
  std::stable_sort(records.begin(), records.end(), [&](const TrialRecord& a, const TrialRecord& b) {
    const int ra = rank(a), rb = rank(b);
    if (ra != rb) return ra < rb;
    if (ra < 2 && *a.trial.value != *b.trial.value)
      return mode == Mode::kMin ? *a.trial.value < *b.trial.value : *a.trial.value > *b.trial.value;
    return a.trial.number < b.trial.number;
  });
}

}  // namespace

Status PrintTrials(Storage& storage, const std::string& experiment, const TrialListing& listing,
                   const std::string& format, std::ostream& out) {
  if (format != "table" && format != "csv" && format != "json") {
    return Status::InvalidArgument("unknown format '" + format +
                                   "' for trials: use table, csv or json");
  }
  if (listing.limit < 0) {
    return Status::InvalidArgument("--limit: expected a number of trials of at least 0 (0: all), got " +
                                   std::to_string(listing.limit));
  }
  const std::optional<TrialState>& state = listing.state;
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, ResolveExperiment(storage, experiment));
  const std::optional<ExperimentSpec> spec = StoredSpec(e);
  Objective obj = ObjectiveOf(e, spec, std::nullopt);
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> all, storage.ListTrialRecords(e.id));
  std::vector<TrialRecord> records;
  for (TrialRecord& r : all) {
    if (!state || r.trial.state == *state) records.push_back(std::move(r));
  }
  const bool multi = spec && IsMultiObjective(*spec);
  const bool constrained = spec && !spec->constraints.empty();
  bool best_first = listing.best_first;
  if (!listing.sort_objective.empty()) {
    std::string names;
    size_t index = 0;
    bool found = false;
    std::vector<ObjectiveSpec> objectives = spec ? spec->objectives : std::vector<ObjectiveSpec>(1);
    if (!spec) objectives[0].metric = obj.metric, objectives[0].mode = obj.mode;
    for (size_t i = 0; i < objectives.size(); ++i) {
      names += (i ? ", " : "") + objectives[i].metric;
      if (objectives[i].metric == listing.sort_objective) index = i, found = true;
    }
    if (!found) {
      return Status::InvalidArgument("--sort: expected number, value or an objective's metric (" + names + "), got '" +
                                     listing.sort_objective + "'");
    }
    if (!multi) {
      best_first = true;
    } else {
      const Mode m = objectives[index].mode;
      auto key = [&](const TrialRecord& r) -> std::optional<double> {
        if (r.trial.state != TrialState::kCompleted || r.trial.values.size() <= index) return std::nullopt;
        const double v = r.trial.values[index];
        if (std::isnan(v)) return std::nullopt;
        return v;
      };
      std::stable_sort(records.begin(), records.end(), [&](const TrialRecord& a, const TrialRecord& b) {
        const auto ka = key(a), kb = key(b);
        if (ka.has_value() != kb.has_value()) return ka.has_value();
        if (ka && *ka != *kb) return m == Mode::kMin ? *ka < *kb : *ka > *kb;
        return a.trial.number < b.trial.number;
      });
    }
  }
  if (best_first) SortBestFirst(records, obj.mode);
  // A trial's value of objective j (several objectives): its stored value
  // once completed, else (running, pruned) the ranked objective's latest.
  auto objective_value = [&](const TrialRecord& r, size_t j) -> std::optional<double> {
    if (j < r.trial.values.size()) return r.trial.values[j];
    if (spec->objectives[j].metric == obj.metric) return r.trial.value;
    return std::nullopt;
  };
  auto feasible_text = [](const TrialRecord& r) -> std::string {
    if (r.trial.state != TrialState::kCompleted || r.trial.constraints.empty()) return "-";
    return IsFeasible(r.trial) ? "yes" : "no";
  };
  if (listing.limit > 0 && records.size() > static_cast<size_t>(listing.limit)) records.resize(listing.limit);
  const std::vector<std::string> names = ParamNames(records);
  const double now = Now();
  std::ostringstream text;

  if (format == "json") {
    TUNE_ASSIGN_OR_RETURN(std::vector<StoredExploit> exploits, storage.ListExploits(e.id));
    const auto by_trial = ExploitsByTrial(std::move(exploits));
    Json arr = Json::array();
    for (const TrialRecord& r : records) arr.push_back(TrialJson(r, ScheduleOf(r.trial, by_trial), now));
    text << DumpJson(arr, 2) << "\n";
  } else if (format == "csv") {
    std::vector<std::string> header = {"number",    "trial_id",   "state",      "value",
                                       "last_step", "pruned_rung", "attempts",  "duration_s",
                                       "started_at", "ended_at",  "location",   "message"};
    if (multi) {
      for (const ObjectiveSpec& o : spec->objectives) header.push_back("objective_" + o.metric);
    }
    if (constrained) {
      for (const ConstraintSpec& c : spec->constraints) header.push_back("constraint_" + c.metric);
      header.push_back("feasible");
    }
    for (const std::string& n : names) header.push_back("params_" + n);
    text << CsvRecord(header);
    for (const TrialRecord& r : records) {
      std::vector<std::string> f = {std::to_string(r.trial.number),
                                    std::to_string(r.trial.id),
                                    TrialStateName(r.trial.state),
                                    Exact(r.trial.value),
                                    Exact(r.last_step),
                                    Exact(r.pruned_rung),
                                    std::to_string(AttemptsOf(r)),
                                    Exact(Duration(r, now)),
                                    Exact(r.started_at),
                                    Exact(r.ended_at),
                                    r.location,
                                    r.message};
      if (multi) {
        for (size_t j = 0; j < spec->objectives.size(); ++j) f.push_back(Exact(objective_value(r, j)));
      }
      if (constrained) {
        for (size_t j = 0; j < spec->constraints.size(); ++j) {
          f.push_back(j < r.trial.constraints.size() ? Exact(std::optional<double>(r.trial.constraints[j])) : "");
        }
        const std::string feasible = feasible_text(r);
        f.push_back(feasible == "-" ? "" : feasible);
      }
      for (const std::string& n : names) {
        auto it = r.trial.params.find(n);
        f.push_back(it == r.trial.params.end() ? "" : ParamToString(it->second));
      }
      text << CsvRecord(f);
    }
  } else {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header = {"#", "state"};
    if (multi) {
      for (const ObjectiveSpec& o : spec->objectives) header.push_back(o.metric);
    } else {
      header.push_back(obj.metric);
    }
    if (constrained) header.push_back("feasible");
    for (const char* h : {"step", "rung", "attempts", "duration"}) header.push_back(h);
    header.insert(header.end(), names.begin(), names.end());
    // Why a trial failed is what one looks for first: shown, on one line
    // and cut to 100 bytes, when the listing has failed trials (csv and
    // json have every message whole).
    bool any_failed = std::any_of(records.begin(), records.end(),
                                  [](const TrialRecord& r) { return r.trial.state == TrialState::kFailed; });
    if (any_failed) header.push_back("error");
    rows.push_back(header);
    for (const TrialRecord& r : records) {
      auto d = Duration(r, now);
      std::vector<std::string> row = {std::to_string(r.trial.number), TrialStateName(r.trial.state)};
      if (multi) {
        for (size_t j = 0; j < spec->objectives.size(); ++j) row.push_back(Short(objective_value(r, j)));
      } else {
        row.push_back(Short(r.trial.value));
      }
      if (constrained) row.push_back(feasible_text(r));
      row.push_back(r.last_step ? std::to_string(*r.last_step) : "-");
      row.push_back(r.pruned_rung ? std::to_string(*r.pruned_rung) : "-");
      row.push_back(std::to_string(AttemptsOf(r)));
      row.push_back(d ? FormatDuration(*d) : "-");
      for (const std::string& n : names) {
        auto it = r.trial.params.find(n);
        row.push_back(it == r.trial.params.end() ? "-" : Short(it->second));
      }
      if (any_failed) {
        bool failed = r.trial.state == TrialState::kFailed && !r.message.empty();
        row.push_back(failed ? OneLine(r.message, 100) : "-");
      }
      rows.push_back(std::move(row));
    }
    if (records.empty()) {
      text << "experiment '" << e.name << "' has no "
           << (state ? std::string(TrialStateName(*state)) + " " : std::string()) << "trials\n";
    } else {
      PrintTable(rows, text);
    }
  }
  out << text.str();
  return Status::Ok();
}

Status PrintTrial(Storage& storage, const std::string& experiment, int number, const std::string& format,
                  std::ostream& out) {
  if (format != "table" && format != "json") {
    return Status::InvalidArgument("unknown format '" + format + "' for trials --trial: use table or json");
  }
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, ResolveExperiment(storage, experiment));
  const Objective obj = ObjectiveOf(e, std::nullopt);
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage.ListTrialSummaries(e.id));
  auto it = std::find_if(records.begin(), records.end(),
                         [number](const TrialRecord& r) { return r.trial.number == number; });
  if (it == records.end()) {
    return Status::NotFound("experiment '" + e.name + "' has no trial " + std::to_string(number) + " (it has " +
                            std::to_string(records.size()) + " trials, numbered from 0)");
  }
  const TrialRecord& r = *it;
  TUNE_ASSIGN_OR_RETURN(std::vector<StoredExploit> exploits, storage.ListExploits(e.id));
  const std::vector<ScheduleEntry> schedule = TrialScheduleOf(r.trial, exploits);
  const double now = Now();
  std::ostringstream text;
  if (format == "json") {
    Json j = TrialJson(r, schedule, now);
    text << DumpJson(j, 2) << "\n";
    out << text.str();
    return Status::Ok();
  }
  const auto d = Duration(r, now);
  std::string attempts = std::to_string(AttemptsOf(r));
  if (r.failed_attempts > 0) attempts += " (" + std::to_string(r.failed_attempts) + " failed and retried)";
  std::vector<std::vector<std::string>> rows = {
      {"experiment", e.name},
      {"trial", std::to_string(r.trial.number) + " (id " + std::to_string(r.trial.id) + ")"},
      {"state", TrialStateName(r.trial.state)},
      {obj.metric, Exact(r.trial.value).empty() ? "-" : Exact(r.trial.value) + " (" + ModeName(obj.mode) + ")"},
      {"step", r.last_step ? std::to_string(*r.last_step) : "-"},
  };
  if (r.pruned_rung) rows.push_back({"rung", std::to_string(*r.pruned_rung)});
  rows.push_back({"attempts", attempts});
  rows.push_back({"duration", d ? FormatDuration(*d) : "-"});
  if (!r.location.empty()) rows.push_back({"where", r.location});
  if (!r.message.empty()) rows.push_back({"message", OneLine(r.message, 200)});
  if (!r.trial.params.empty()) rows.push_back({"params"});
  for (const auto& [name, value] : r.trial.params) rows.push_back({"  " + name, ParamToString(value)});
  PrintTable(rows, text);
  if (schedule.size() > 1) text << "schedule\n" << ScheduleText(schedule, "  ");
  out << text.str();
  return Status::Ok();
}

Status PrintImportance(Storage& storage, const std::string& experiment, const std::string& format,
                       std::ostream& out, const std::string& objective) {
  if (format != "table" && format != "json") {
    return Status::InvalidArgument("unknown format '" + format + "' for importance: use table or json");
  }
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, ResolveExperiment(storage, experiment));
  auto spec = ParseExperimentSpec(e.spec_json, "experiment '" + e.name + "'");
  if (!spec.ok()) {
    return Status::FailedPrecondition("the stored spec of experiment '" + e.name +
                                      "' does not parse here: " + spec.status().message());
  }
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage.ListTrialRecords(e.id));
  Objective obj{spec->objective.metric, spec->objective.mode};
  if (!objective.empty() && objective != spec->objective.metric) {
    // Another of several objectives: its completed trials' values stand in
    // for the ranked objective's (pruned trials have none and drop out).
    auto it = std::find_if(spec->objectives.begin(), spec->objectives.end(),
                           [&](const ObjectiveSpec& o) { return o.metric == objective; });
    if (it == spec->objectives.end()) {
      std::string names;
      for (const ObjectiveSpec& o : spec->objectives) names += (names.empty() ? "" : ", ") + o.metric;
      return Status::InvalidArgument("--objective: expected the metric of an objective of experiment '" + e.name +
                                     "' (" + names + "), got '" + objective + "'");
    }
    const size_t j = static_cast<size_t>(it - spec->objectives.begin());
    for (TrialRecord& r : records) {
      const bool has = r.trial.state == TrialState::kCompleted && j < r.trial.values.size();
      r.trial.value = has ? std::optional<double>(r.trial.values[j]) : std::nullopt;
      if (!has && r.trial.state == TrialState::kCompleted) r.trial.state = TrialState::kFailed;
    }
    spec->objective = *it;
    obj = Objective{it->metric, it->mode};
  }
  auto result = ImportancesOf(*spec, records);
  if (!result.ok()) {
    return Status(result.status().code(), "experiment '" + e.name + "': " + result.status().message());
  }
  std::ostringstream text;
  if (format == "json") {
    Json j;
    j["experiment"] = e.name;
    j["metric"] = obj.metric;
    j["mode"] = ModeName(obj.mode);
    AddImportanceJson(*result, &j);
    text << DumpJson(j, 2) << "\n";
  } else {
    text << "experiment '" << e.name << "': what sets the best " << result->top_trials << " of "
         << result->trials << " completed trials apart (" << obj.metric << ", " << ModeName(obj.mode)
         << "; PED-ANOVA)\n";
    std::vector<std::vector<std::string>> rows = {{"parameter", "importance"}};
    for (const ParamImportance& p : result->importances) {
      char value[32];
      std::snprintf(value, sizeof value, "%.3f", p.importance);
      const std::string bar(static_cast<size_t>(std::lround(p.importance * 40)), '#');
      if (bar.empty()) rows.push_back({p.name, value});
      else rows.push_back({p.name, value, bar});
    }
    PrintTable(rows, text);
    if (result->top_trials < 5) {
      text << "note: the best 10% are only " << result->top_trials
           << " trial(s); below 5 these numbers are rough (run more trials)\n";
    }
  }
  out << text.str();
  return Status::Ok();
}

Status PrintStatus(Storage& storage, std::ostream& out) {
  TUNE_ASSIGN_OR_RETURN(std::vector<ExperimentRecord> experiments, storage.ListExperiments());
  if (experiments.empty()) {
    out << "no experiments yet\n";
    return Status::Ok();
  }
  const TrialState kStates[] = {TrialState::kPending, TrialState::kRunning, TrialState::kPaused,
                                TrialState::kCompleted, TrialState::kPruned,
                                TrialState::kFailed, TrialState::kStopped};
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"experiment", "state", "trials"};
  for (TrialState s : kStates) header.push_back(TrialStateName(s));
  header.insert(header.end(), {"best", "metric", "elapsed"});
  rows.push_back(header);
  const double now = Now();
  for (const ExperimentRecord& e : experiments) {
    Objective obj = ObjectiveOf(e, std::nullopt);
    TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage.ListTrialRecords(e.id));
    std::vector<std::string> row = {e.name, ExperimentStateName(e.state),
                                    std::to_string(records.size())};
    for (TrialState s : kStates) {
      auto n = std::count_if(records.begin(), records.end(),
                             [s](const TrialRecord& r) { return r.trial.state == s; });
      row.push_back(std::to_string(n));
    }
    const TrialRecord* best = BestTrial(records, obj.mode);
    row.push_back(best ? Short(best->trial.value) + " (#" + std::to_string(best->trial.number) + ")"
                       : "-");
    row.push_back(obj.metric + " " + ModeName(obj.mode));
    row.push_back(FormatDuration(e.ended_at.value_or(now) - e.created_at));
    rows.push_back(std::move(row));
  }
  std::ostringstream text;
  PrintTable(rows, text);
  out << text.str();
  return Status::Ok();
}

}  // namespace tune
