#include "dashboard/dashboard_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/trial_dir_name.h"
#include "dashboard/pareto_json.h"
#include "dashboard/pareto_view.h"
#include "dashboard/results_query.h"
#include "schedulers/asha_scheduler.h"
#include "spec/experiment_spec.h"
#include "spec/module_options.h"
#include "storage/open_storage.h"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// How much of a log's end a trial's document reads, per rank, and how long
// a line it shows: a progress bar that rewrites one "line" with \r for
// hours is hundreds of MB without a newline (docs/dashboard.md).
constexpr size_t kLogWindowBytes = 256 * 1024;
constexpr size_t kLogLineBytes = 8 * 1024;

const TrialState kStates[] = {TrialState::kPending, TrialState::kRunning,   TrialState::kPaused, TrialState::kCompleted,
                              TrialState::kPruned,  TrialState::kFailed,    TrialState::kStopped};

Json Num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
Json Opt(const std::optional<double>& v) { return v ? Num(*v) : Json(nullptr); }
Json Opt(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); }

// The stored spec, parsed; nullopt when it does not parse here (written by
// another version): the objective then falls back to the defaults.
std::optional<ExperimentSpec> SpecOf(const ExperimentRecord& e) {
  auto spec = ParseExperimentSpec(e.spec_json, "experiment '" + e.name + "'");
  if (!spec.ok()) return std::nullopt;
  return *spec;
}

// TallyTrials' answer for records already read (one snapshot, so the
// experiment document's counts always match its rows).
TrialTally TallyRecords(const std::vector<TrialRecord>& records, Mode mode) {
  TrialTally tally;
  for (const TrialRecord& r : records) {
    ++tally.counts[r.trial.state];
    ++tally.total;
  }
  if (const TrialRecord* best = BestTrial(records, mode)) {
    tally.best = std::make_pair(best->trial.number, *best->trial.value);
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
  // Several objectives or constraints: each one (single-objective
  // documents stay as they were).
  if (spec && IsMultiObjective(*spec)) j["objectives"] = ObjectivesJson(*spec);
  if (spec && !spec->constraints.empty()) j["constraints"] = ConstraintsJson(*spec);
  return j;
}

Json Numbers(const std::vector<double>& values) {
  if (values.empty()) return nullptr;
  Json out = Json::array();
  for (double v : values) out.push_back(Num(v));
  return out;
}

// A trial's row. With several objectives it carries "values" (each
// objective's, in list order; null until it completed with all of them),
// with constraints "constraint_values" (Optuna's convention, <= 0
// satisfied; null until completed) and "feasible" (null until completed).
Json TrialRow(const TrialRecord& r, const std::optional<ExperimentSpec>& spec) {
  Json j;
  j["number"] = r.trial.number;
  j["state"] = TrialStateName(r.trial.state);
  j["value"] = Opt(r.trial.value);
  if (spec && IsMultiObjective(*spec)) j["values"] = Numbers(r.trial.values);
  if (spec && !spec->constraints.empty()) {
    j["constraint_values"] = Numbers(r.trial.constraints);
    j["feasible"] = r.trial.constraints.empty() ? Json(nullptr) : Json(IsFeasible(r.trial));
  }
  j["params"] = ParamsJson(r.trial.params);
  j["attempts"] = AttemptsOf(r);
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

// The scheduler section, with the rungs of each ASHA bracket as the run
// draws them (the options mapped as `tune run` maps them).
Json SchedulerJson(const ExperimentSpec& spec) {
  const SchedulerSpec& s = spec.scheduler;
  Json j;
  j["type"] = s.type;
  j["time_attr"] = s.time_attr;
  if (s.type != "asha") return j;
  j["max_t"] = s.max_t;
  j["grace_period"] = s.grace_period;
  j["reduction_factor"] = s.reduction_factor;
  j["brackets"] = s.brackets;
  const AshaOptions options = AshaOptionsFrom(spec, /*seed=*/0);  // the seed draws brackets, not milestones
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
  auto result = ImportancesOf(*spec, records);
  if (!result.ok()) return Json{{"error", result.status().message()}};
  Json j = Json::object();
  AddImportanceJson(*result, &j);
  return j;
}

// Every exploit of the experiment, in the order recorded: who took whose
// checkpoint at what step, and the parameters before and after.
Json LineageJson(const std::vector<StoredExploit>& exploits) {
  Json out = Json::array();
  for (const StoredExploit& x : exploits) {
    out.push_back({{"trial", x.trial_number},
                   {"at_step", x.step},
                   {"donor", x.donor_number},
                   {"donor_step", x.donor_step},
                   {"before", ParamsJson(x.before)},
                   {"after", ParamsJson(x.after)},
                   {"time", Num(x.time)}});
  }
  return out;
}

// A rank's log as the page shows it: the last lines, whether some were
// left out, or why the file was not read.
struct LogTail {
  std::vector<std::string> lines;
  bool truncated = false;
  bool missing = false;  // no such file
  std::string error;     // there, but not read: one sentence
};

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// The last `n` lines of runs_dir/<experiment>/<trial dir>/<file>, read from
// a window of at most kLogWindowBytes at the file's end; a line longer
// than kLogLineBytes keeps its last kLogLineBytes, after "[...] " (so does
// the window's first line when the window starts inside it). Nothing
// below runs_dir may be a symbolic link (each step is opened with
// O_NOFOLLOW, so a log linked to a file elsewhere is not read), and the
// log must be a regular file (opened without blocking: a FIFO is refused,
// never waited on).
LogTail Tail(const std::string& runs_dir, const std::string& experiment, const std::string& trial_dir,
             const std::string& file, int n) {
  LogTail tail;
  Fd runs(open(runs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd exp(runs.fd < 0 ? -1 : openat(runs.fd, experiment.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  Fd trial(exp.fd < 0 ? -1 : openat(exp.fd, trial_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (trial.fd < 0) {
    if (errno == ENOENT || runs.fd < 0) tail.missing = true;
    else tail.error = "the trial's directory is a symbolic link or not a directory: not read";
    return tail;
  }
  Fd log(openat(trial.fd, file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (log.fd < 0) {
    if (errno == ENOENT) tail.missing = true;
    else if (errno == ELOOP) tail.error = file + " is a symbolic link: not read";
    else tail.error = file + ": " + std::strerror(errno);
    return tail;
  }
  if (fstat(log.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    tail.error = file + " is not a regular file (a FIFO, device or directory): not read";
    return tail;
  }
  const off_t size = st.st_size;
  const off_t start = size > static_cast<off_t>(kLogWindowBytes) ? size - static_cast<off_t>(kLogWindowBytes) : 0;
  std::string window(static_cast<size_t>(size - start), '\0');
  size_t got = 0;
  while (got < window.size()) {
    const ssize_t r = pread(log.fd, window.data() + got, window.size() - got, start + static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // shorter now (rotated or cut): what was read
    got += static_cast<size_t>(r);
  }
  window.resize(got);
  std::string_view rest(window);
  // A window that starts after the file's start starts inside a line: its
  // first line is shown as cut.
  bool cut_first = start > 0;
  tail.truncated = start > 0;
  std::deque<std::string_view> lines;
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    lines.push_back(rest.substr(0, newline));
    if (newline == std::string_view::npos) break;
    rest.remove_prefix(newline + 1);
    if (static_cast<int>(lines.size()) > n) {
      lines.pop_front();
      tail.truncated = true;
      cut_first = false;
    }
  }
  if (static_cast<int>(lines.size()) > n) {
    lines.pop_front();
    tail.truncated = true;
    cut_first = false;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.size() > kLogLineBytes || (i == 0 && cut_first)) {
      if (line.size() > kLogLineBytes) line.remove_prefix(line.size() - kLogLineBytes);
      tail.lines.push_back("[...] " + std::string(line));
    } else {
      tail.lines.emplace_back(line);
    }
  }
  return tail;
}

// JSON text for the page. Invalid UTF-8 (a log line cut mid-character, a
// binary byte) becomes U+FFFD instead of failing the whole document.
std::string Dump(const Json& j) { return DumpJson(j); }

// One trial's document: its row, every report, its log tails.
Result<Json> TrialDoc(Storage& storage, const std::string& runs_dir, const ExperimentRecord& e,
                      const std::optional<ExperimentSpec>& spec, const TrialRecord& record,
                      const std::vector<ScheduleEntry>& schedule, int log_lines) {
  TUNE_ASSIGN_OR_RETURN(std::vector<StoredReport> reports, storage.ListTrialReports(record.trial.id));
  Json j = TrialRow(record, spec);
  j["failed_attempts"] = record.failed_attempts;
  j["schedule"] = ScheduleJson(schedule);
  j["experiment"] = e.name;
  j["metric"] = spec ? spec->objective.metric : ObjectiveSpec{}.metric;
  j["current_attempt"] = record.trial.attempt;
  if (spec && IsMultiObjective(*spec)) j["objectives"] = ObjectivesJson(*spec);
  if (spec && !spec->constraints.empty()) j["constraints"] = ConstraintsJson(*spec);
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
  const std::string dir = TrialDirName(record.trial.number);
  for (int rank = 0; rank < workers; ++rank) {
    const std::string file = "rank_" + std::to_string(rank) + ".log";
    LogTail tail = Tail(runs_dir, e.name, dir, file, log_lines);
    Json log{{"rank", rank}, {"file", dir + "/" + file}};
    log["lines"] = std::move(tail.lines);
    if (tail.missing) {
      log["missing"] = true;
    } else if (!tail.error.empty()) {
      log["missing"] = true;
      log["error"] = tail.error;
    } else {
      log["truncated"] = tail.truncated;
    }
    logs.push_back(log);
  }
  j["logs"] = logs;
  return j;
}

}  // namespace

std::string RunsDirFor(const std::string& db_path) { return RunsDirForDatabase(db_path); }

DashboardData::DashboardData(Storage& storage, std::string runs_dir)
    : storage_(storage), runs_dir_(std::move(runs_dir)) {}

Result<std::string> DashboardData::Experiments() {
  TUNE_ASSIGN_OR_RETURN(std::vector<ExperimentRecord> experiments, storage_.ListExperiments());
  Json out = Json::array();
  for (const ExperimentRecord& e : experiments) {
    std::optional<ExperimentSpec> spec = SpecOf(e);
    TUNE_ASSIGN_OR_RETURN(TrialTally tally, storage_.TallyTrials(e.id, ObjectiveOf(spec).mode == Mode::kMax));
    Json j = Summary(e, spec, tally);
    if (spec && IsMultiObjective(*spec)) {
      // The front's size: one more query, for multi-objective experiments only.
      TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage_.ListTrialSummaries(e.id));
      j["front_size"] = ComputeParetoView(*spec, records, /*with_hypervolume=*/false).front.size();
    }
    out.push_back(std::move(j));
  }
  return Dump(out);
}

Result<std::string> DashboardData::Experiment(const std::string& name) {
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, storage_.FindExperiment(name));
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage_.ListTrialRecords(e.id));
  std::optional<ExperimentSpec> spec = SpecOf(e);
  Json j = Summary(e, spec, TallyRecords(records, ObjectiveOf(spec).mode));
  j["parameters"] = spec ? ParametersJson(spec->parameters) : Json::array();
  j["scheduler"] = spec ? SchedulerJson(*spec) : Json{{"type", "unknown"}};
  Json rows = Json::array();
  Json curves = Json::object();
  // Appended to the object's vector directly: ordered_json's operator[]
  // looks a key up linearly, which made 10,000 curves a quadratic number
  // of string compares. Trial numbers are unique, so no lookup is needed.
  Json::object_t& curve_of = curves.get_ref<Json::object_t&>();
  curve_of.reserve(records.size());
  for (const TrialRecord& r : records) {
    rows.push_back(TrialRow(r, spec));
    if (r.trial.intermediate.empty()) continue;
    Json curve = Json::array();
    for (const auto& [step, value] : r.trial.intermediate) curve.push_back({step, Num(value)});
    curve_of.emplace_back(std::to_string(r.trial.number), std::move(curve));
  }
  j["trial_rows"] = rows;
  j["curves"] = curves;
  TUNE_ASSIGN_OR_RETURN(std::vector<StoredExploit> exploits, storage_.ListExploits(e.id));
  const TrialRecord* best = BestTrial(records, ObjectiveOf(spec).mode);
  j["best_schedule"] = best ? ScheduleJson(TrialScheduleOf(best->trial, exploits)) : Json(nullptr);
  j["lineage"] = LineageJson(exploits);
  j["importance"] = ImportanceJson(spec, records);
  if (spec && IsMultiObjective(*spec)) j["pareto"] = ParetoJson(*spec, records, ComputeParetoView(*spec, records));
  return Dump(j);
}

Result<std::string> DashboardData::TrialDetail(const std::string& experiment, int number, int log_lines) {
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, storage_.FindExperiment(experiment));
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage_.ListTrialSummaries(e.id));
  for (const TrialRecord& r : records) {
    if (r.trial.number != number) continue;
    TUNE_ASSIGN_OR_RETURN(std::vector<StoredExploit> exploits, storage_.ListExploits(e.id));
    TUNE_ASSIGN_OR_RETURN(Json j, TrialDoc(storage_, runs_dir_, e, SpecOf(e), r, TrialScheduleOf(r.trial, exploits),
                                           log_lines));
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
  TUNE_ASSIGN_OR_RETURN(std::vector<StoredExploit> exploits, storage_.ListExploits(e.id));
  const auto by_trial = ExploitsByTrial(std::move(exploits));
  for (const TrialRecord& r : records) {
    TUNE_ASSIGN_OR_RETURN(Json j, TrialDoc(storage_, runs_dir_, e, spec, r, ScheduleOf(r.trial, by_trial), log_lines));
    detail_of.emplace_back(std::to_string(r.trial.number), std::move(j));
  }
  return Dump(all);
}

}  // namespace tune
