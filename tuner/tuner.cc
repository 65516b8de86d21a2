#include "tuner/tuner.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "core/exception_text.h"
#include "core/one_line.h"
#include "core/trial_dir_name.h"
#include "trial_runner/checkpoint_folder.h"
#include "search/grid.h"
#include "tuner/components.h"
#include "tuner/trial_values.h"

namespace tune {
namespace {

using Clock = std::chrono::steady_clock;

// reports.excluded of a report printed after the trial reached max_t.
constexpr const char kAfterMaxT[] = "after max_t";
// reports.excluded of an adopted attempt's reports stored before a resume:
// the backend reports them again from the start of its log.
constexpr const char kReadAgain[] = "read again on resume";
// reports.excluded of a report printed after the scheduler paused the trial
// (its process was being stopped).
constexpr const char kAfterPause[] = "after pause";
// A stored trial message is one line of at most this many bytes (it may
// quote what a trial printed: a metric name, its last log line).
constexpr size_t kMaxMessageBytes = 4096;

// True if `a` is a better objective value than `b` in `mode`.
bool Better(double a, double b, Mode mode) { return mode == Mode::kMin ? a < b : a > b; }

// The trial's value under `scope`: last objective report, or best one.
std::optional<double> ScopedValue(const Trial& t, const ObjectiveSpec& objective) {
  if (t.intermediate.empty()) return std::nullopt;
  if (objective.scope == Scope::kLast) return t.intermediate.rbegin()->second;
  std::optional<double> best;
  for (const auto& [step, v] : t.intermediate) {
    if (std::isnan(v)) continue;
    if (!best || Better(v, *best, objective.mode)) best = v;
  }
  return best;
}

}  // namespace

std::string SubstitutePlaceholders(const std::string& arg,
                                   const std::map<std::string, std::string>& values) {
  std::string out;
  size_t i = 0;
  while (i < arg.size()) {
    if (arg[i] == '$' && i + 1 < arg.size() && arg[i + 1] == '{') {
      size_t close = arg.find('}', i + 2);
      if (close != std::string::npos) {
        auto it = values.find(arg.substr(i + 2, close - i - 2));
        if (it != values.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += arg[i++];
  }
  return out;
}

std::string ParamEnvName(const std::string& name) {
  std::string out = "TUNE_PARAM_";
  for (char c : name) {
    char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += (std::isalnum(static_cast<unsigned char>(u)) || u == '_') ? u : '_';
  }
  return out;
}

LaunchSpec MakeLaunchSpec(const ExperimentSpec& spec, const Trial& t, const std::string& trial_dir,
                          const std::string& resume_from) {
  std::map<std::string, std::string> values;
  for (const auto& [name, v] : t.params) values[name] = ParamToString(v);
  values["trial_id"] = std::to_string(t.number);
  values["experiment"] = spec.name;
  values["trial_dir"] = trial_dir;
  values["resume_from"] = resume_from;

  LaunchSpec launch;
  launch.trial_id = t.id;
  launch.trial_number = t.number;
  launch.attempt = t.attempt;
  launch.experiment = spec.name;
  for (const auto& a : spec.trial.command) launch.argv.push_back(SubstitutePlaceholders(a, values));
  launch.env = spec.trial.env;
  for (auto& [k, v] : launch.env) v = SubstitutePlaceholders(v, values);
  launch.secret_env = spec.trial.env_secrets;
  launch.env["TUNE_TRIAL_ID"] = std::to_string(t.number);
  launch.env["TUNE_EXPERIMENT"] = spec.name;
  launch.env["TUNE_TRIAL_DIR"] = trial_dir;
  if (!resume_from.empty()) launch.env["TUNE_RESUME_FROM"] = resume_from;
  launch.env["TUNE_PARAMS"] = ParamsToJson(t.params);
  for (const auto& [name, v] : t.params) launch.env[ParamEnvName(name)] = ParamToString(v);
  launch.trial_dir = trial_dir;
  launch.working_dir = spec.trial.working_dir.empty() ? spec.base_dir : spec.trial.working_dir;
  // A pod starts in its image's WORKDIR unless trial.working_dir names a
  // directory in the container (a path of this machine means nothing there).
  if (spec.backend.type == "kubernetes" && spec.trial.working_dir_written.empty()) launch.working_dir.clear();
  launch.workers = spec.trial.workers;
  launch.cpu_per_worker = spec.trial.resources_per_worker.cpu;
  launch.gpu_per_worker = spec.trial.resources_per_worker.gpu;
  launch.memory_per_worker = spec.trial.resources_per_worker.memory;
  launch.timeout_s = spec.trial.timeout_s;
  launch.stop_grace_s = spec.trial.stop_grace_s;
  launch.time_attr = spec.scheduler.time_attr;

  return launch;
}

// ---------------------------------------------------------------------------
// The run: one Impl per Tuner::Run call.

struct Tuner::Impl {
  Impl(const ExperimentSpec& s, TunerParts p, const TunerOptions& o) : spec(s), parts(p), options(o) {}

  const ExperimentSpec& spec;
  TunerParts parts;
  const TunerOptions& options;

  ExperimentId experiment_id = 0;
  uint64_t seed = 0;
  std::vector<Trial> trials;                // by number; the in-memory History
  std::map<TrialId, int> index_of;          // TrialId -> position in trials
  std::deque<TrialId> retry_queue;          // pending trials to run before new ones
  std::set<TrialId> running;
  std::map<TrialId, Clock::time_point> started_at;
  std::map<TrialId, int> failures;          // failed attempts (all runs: trials.failed_attempts)
  std::set<TrialId> ever_started;           // some attempt started (a new one continues)
  // Paused trials (Action::kPause), waiting for a slot: no process.
  std::set<TrialId> paused;
  // Trials the scheduler paused whose process is still exiting; the exploit
  // to carry out once it is gone, and the step of the report that paused it.
  struct Pausing {
    std::optional<Exploit> exploit;
    int64_t step = 0;
  };
  std::map<TrialId, Pausing> pausing;
  // Paused trials that took a donor's checkpoint: the copy's step, which
  // they continue from.
  std::map<TrialId, int64_t> exploit_copy;
  // A replaced rank 0 (restart marker) whose first report has not come yet:
  // the marker's reason.
  std::map<TrialId, std::string> restarted;
  std::map<TrialId, Clock::time_point> finishing;  // reached max_t: exit deadline
  // Metric names a running attempt printed before any objective value (a
  // few), to say what it did print if it never reports the objective.
  std::map<TrialId, std::set<std::string>> other_metrics;
  // Ended by the tuner (pruned, or stopped at max_t) while its processes
  // may still be exiting: they count against max_concurrent until the
  // backend says they are gone, or until the deadline (a backend that
  // cannot tell).
  std::map<TrialId, Clock::time_point> draining;
  std::vector<ParamMap> grid;               // grid points (one empty point if none)
  int max_trials = 0;
  int max_concurrent = 1;
  int failed_count = 0;
  std::optional<int> best_number;
  std::optional<double> best_value;
  Clock::time_point start = Clock::now();
  double seconds_before = 0;  // spent by earlier runs (time_budget_s counts them)
  int finished_at_start = 0;  // trials that had ended before this run (resume)
  Clock::time_point last_tick = Clock::now();

  Trial& Get(TrialId id) { return trials[static_cast<size_t>(index_of.at(id))]; }

  Status Setup();
  Status ReplayHistory();
  Status LaunchReady();
  Status LaunchTrial(TrialId id);
  // Trials waiting for a slot: pending, paused, or still to be created.
  int Waiting() const {
    return static_cast<int>(retry_queue.size() + paused.size()) +
           std::max(0, max_trials - static_cast<int>(trials.size()));
  }
  // The paused trial to continue next: the lowest last step first (Ray's
  // PopulationBasedTraining.choose_trial_to_run), among those the scheduler
  // lets resume; nullopt if none.
  std::optional<TrialId> NextPaused();
  // Kill the trial's process after a kPause decision; CompletePause once it
  // is gone.
  Status BeginPause(TrialId id, std::optional<Exploit> exploit, int64_t step);
  Status CompletePause(TrialId id);
  // PBT's exploit into trial `id` (paused, its process gone): a copy of the
  // donor's newest checkpoint, the new parameters, the record.
  Status CarryOutExploit(TrialId id, const Exploit& exploit, int64_t step);
  // Exploits the scheduler decided for paused trials (synch PBT).
  Status TakeExploits();
  // The trial's directory path, without creating it.
  std::string TrialDirPath(const Trial& t) const {
    std::error_code ec;
    return std::filesystem::absolute(std::filesystem::path(options.runs_dir) / spec.name / TrialDirName(t.number), ec)
        .string();
  }
  int64_t LastStep(const Trial& t) const { return t.intermediate.empty() ? 0 : t.intermediate.rbegin()->first; }
  // <runs_dir>/<experiment>/trial_NNNN, created, as an absolute path.
  Result<std::string> TrialDir(const Trial& t);
  // Resume: a trial whose running attempt the backend adopted goes on in
  // that attempt (TunerOptions::adopted).
  Status AdoptTrial(TrialId id);
  Status Harvest();
  Status HandleReports(TrialId id, const std::vector<MetricReport>& reports, bool* stopped);
  // One report of trial `id`'s current attempt, recorded as both the loop
  // (HandleReports) and the end of a run (StopAllRunning) record it: a
  // restart marker goes to Restart; past max_t the report is stored as
  // excluded; otherwise it is stored, its objective value joins the
  // trial's curve, and the tracking sink gets it. True when it counts
  // (stored, not excluded): only then may the caller act on its value.
  Result<bool> RecordReport(TrialId id, const MetricReport& r);
  // A restart marker (MetricReport::restart): the attempt's reports so far
  // become excluded, so only the new rank 0's count.
  Status Restart(TrialId id, const MetricReport& marker);
  Status EndTrial(TrialId id, TrialState state, const std::string& message,
                  std::optional<int64_t> rung = std::nullopt);
  // Stores seconds_before + this run's time (a killed tuner loses at most
  // the time since the last trial ended).
  Status SaveRunSeconds() {
    return parts.storage->SetExperimentRunSeconds(
        experiment_id, seconds_before + std::chrono::duration<double>(Clock::now() - start).count());
  }
  // Notes a trial the tuner has just killed (see `draining`).
  void Drain(TrialId id);
  Status StopAllRunning(TrialState as, const std::string& message);
  // After an error or an exception that ends the run: kills the running
  // trials and stores them as pending, and the experiment as stopped with
  // `why`, so that --resume continues it. Best effort, never throws.
  void Abandon(const Status& why);
  void NoteValue(const Trial& t);
  ProgressCounts Counts() const;
  void Tick(bool force);
  std::optional<double> Objective(const MetricReport& r) const {
    auto it = r.values.find(spec.objective.metric);
    if (it == r.values.end()) return std::nullopt;
    return it->second;
  }
};

Status Tuner::Impl::Setup() {
  Storage& storage = *parts.storage;
  max_trials = spec.limits.max_trials;
  max_concurrent = std::max(1, options.max_concurrent.value_or(spec.limits.max_concurrent_trials));

  auto grid_or = GridPoints(spec.parameters, spec.search.algorithm == "grid");
  if (!grid_or.ok()) return Status::InvalidArgument(spec.source_path + ": parameters: " + grid_or.status().message());
  grid = std::move(grid_or).value();

  auto found = storage.FindExperiment(spec.name);
  if (found.ok()) {
    if (!options.resume) {
      return Status::FailedPrecondition(
          "experiment '" + spec.name + "' already exists in the database; pass --resume to continue it, "
          "or give the experiment another name");
    }
    experiment_id = found->id;
    seed = found->seed;
    seconds_before = found->run_seconds;
    TUNE_RETURN_IF_ERROR(storage.SetExperimentState(experiment_id, ExperimentState::kRunning, "resumed"));
    return ReplayHistory();
  }
  if (!found.status().IsNotFound()) return found.status();
  seed = spec.search.seed_given ? spec.search.seed
                                : static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  TUNE_ASSIGN_OR_RETURN(experiment_id, storage.CreateExperiment(spec.name, spec.json, seed));
  if (parts.progress && options.resume) parts.progress->OnMessage("nothing to resume: starting experiment '" + spec.name + "'");
  return Status::Ok();
}

// Rebuilds the in-memory history and the scheduler's state from storage.
Status Tuner::Impl::ReplayHistory() {
  Storage& storage = *parts.storage;
  // Trials found running were interrupted (the tuner was killed): their
  // attempt is void and they run again. Retire it before the replay, so
  // the scheduler sees exactly the events of an uninterrupted run.
  // An adopted attempt goes on: its reports so far are read again from the
  // start of its log, so the stored ones stop counting.
  std::vector<TrialId> adopt;
  {
    TUNE_ASSIGN_OR_RETURN(History before, storage.ListTrials(experiment_id));
    for (const Trial& t : before) {
      if (t.state != TrialState::kRunning) continue;
      if (options.adopted.count(t.id)) {
        TUNE_RETURN_IF_ERROR(storage.ExcludeAttemptReports(t.id, t.attempt, kReadAgain));
        adopt.push_back(t.id);
        continue;
      }
      TUNE_RETURN_IF_ERROR(storage.RetryTrial(
          t.id, options.rerun_reason.empty() ? "interrupted: the tuner stopped while it ran" : options.rerun_reason));
    }
  }
  TUNE_ASSIGN_OR_RETURN(History stored, storage.ListTrials(experiment_id));
  TUNE_ASSIGN_OR_RETURN(std::vector<StoredReport> reports, storage.ListReports(experiment_id));
  TUNE_ASSIGN_OR_RETURN(std::vector<StoredExploit> exploits, storage.ListExploits(experiment_id));

  // Scheduler replay: trials are added by number (with their first
  // parameters), then every report of the current attempts in arrival
  // order, each recorded exploit right after the report stored before it;
  // a finished trial completes right after its last report.
  std::map<TrialId, size_t> last_report;
  for (size_t i = 0; i < reports.size(); ++i) last_report[reports[i].trial_id] = i;
  std::map<TrialId, const ParamMap*> first_params;
  for (const StoredExploit& x : exploits) first_params.emplace(x.trial_id, &x.before);
  for (const Trial& t : stored) {
    Trial fresh = t;
    fresh.intermediate.clear();
    if (auto it = first_params.find(t.id); it != first_params.end()) fresh.params = *it->second;
    index_of[t.id] = static_cast<int>(trials.size());
    trials.push_back(fresh);
    parts.scheduler->OnTrialAdd(fresh);
  }
  size_t next_exploit = 0;
  auto replay_exploits_through = [&](int64_t seq) {
    for (; next_exploit < exploits.size() && exploits[next_exploit].after_seq < seq; ++next_exploit) {
      const StoredExploit& x = exploits[next_exploit];
      if (!index_of.count(x.trial_id) || !index_of.count(x.donor_id)) continue;
      Trial& t = Get(x.trial_id);
      t.params = x.after;
      parts.scheduler->OnTrialExploited(t, Get(x.donor_id), x.donor_step);
    }
  };
  for (size_t i = 0; i < reports.size(); ++i) {
    const StoredReport& r = reports[i];
    replay_exploits_through(r.seq);
    if (!index_of.count(r.trial_id)) continue;
    Trial& t = Get(r.trial_id);
    auto obj = Objective(r.report);
    if (obj) {
      t.intermediate[r.report.step] = *obj;
      (void)parts.scheduler->OnTrialResult(t, r.report.step, *obj);
    }
    if (last_report[r.trial_id] == i && IsFinished(stored[static_cast<size_t>(index_of[r.trial_id])].state)) {
      parts.scheduler->OnTrialComplete(t);
    }
  }
  replay_exploits_through(std::numeric_limits<int64_t>::max());
  // A finished trial without a counted report ends too (a synch barrier
  // must not wait for it).
  for (const Trial& st : stored) {
    if (IsFinished(st.state) && !last_report.count(st.id)) parts.scheduler->OnTrialComplete(Get(st.id));
  }
  // Decided again by the replay, carried out (or not) by the earlier run.
  (void)parts.scheduler->TakeExploits();
  // Restore the stored snapshots (authoritative) and requeue interrupted trials.
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage.ListTrialSummaries(experiment_id));
  for (const TrialRecord& r : records) {
    if (r.started_at) ever_started.insert(r.trial.id);
    if (r.failed_attempts > 0) failures[r.trial.id] = r.failed_attempts;
  }
  for (const Trial& s : stored) {
    Trial& t = Get(s.id);
    t = s;
    // The next attempt gets a fresh number unless this trial never started.
    if ((s.state == TrialState::kPending || s.state == TrialState::kPaused) && ever_started.count(s.id)) {
      t.attempt = s.attempt + 1;
    }
    if (t.state == TrialState::kPaused) {
      paused.insert(t.id);
      // It took a donor's checkpoint after its last report: it continues
      // from that copy.
      int64_t last_seq = 0;
      if (auto it = last_report.find(t.id); it != last_report.end()) last_seq = reports[it->second].seq;
      for (const StoredExploit& x : exploits) {
        if (x.trial_id == t.id && x.after_seq >= last_seq) exploit_copy[t.id] = x.donor_step;
      }
    }
    if (t.state == TrialState::kPending) retry_queue.push_back(t.id);
    if (t.state == TrialState::kFailed) ++failed_count;
    if (t.state == TrialState::kCompleted) NoteValue(t);
  }
  if (parts.progress) {
    parts.progress->OnMessage("resuming experiment '" + spec.name + "': " + std::to_string(trials.size()) +
                              " trials so far, " + std::to_string(retry_queue.size()) + " to run again" +
                              (paused.empty() ? "" : ", " + std::to_string(paused.size()) + " paused") +
                              (adopt.empty() ? "" : ", " + std::to_string(adopt.size()) + " adopted"));
  }
  for (TrialId id : adopt) TUNE_RETURN_IF_ERROR(AdoptTrial(id));
  return Status::Ok();
}

Result<std::string> Tuner::Impl::TrialDir(const Trial& t) {
  std::filesystem::path dir = std::filesystem::path(options.runs_dir) / spec.name / TrialDirName(t.number);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Internal("cannot create trial directory " + dir.string() + ": " + ec.message());
  return std::filesystem::absolute(dir, ec).string();
}

Status Tuner::Impl::AdoptTrial(TrialId id) {
  Trial& t = Get(id);
  TUNE_ASSIGN_OR_RETURN(std::string trial_dir, TrialDir(t));
  // The backend tracks the adopted attempt already: Launch takes it over.
  TUNE_RETURN_IF_ERROR(parts.backend->Launch(MakeLaunchSpec(spec, t, trial_dir)));
  t.state = TrialState::kRunning;
  running.insert(id);
  started_at[id] = Clock::now();
  if (parts.progress) parts.progress->OnTrialStarted(t);
  if (parts.tracking) parts.tracking->OnAttemptStarted(t, trial_dir);
  return Status::Ok();
}

void Tuner::Impl::NoteValue(const Trial& t) {
  if (t.state != TrialState::kCompleted || !t.value || std::isnan(*t.value)) return;
  if (!best_value || Better(*t.value, *best_value, spec.objective.mode)) {
    best_value = t.value;
    best_number = t.number;
  }
}

Status Tuner::Impl::LaunchTrial(TrialId id) {
  Trial& t = Get(id);
  TUNE_ASSIGN_OR_RETURN(std::string trial_dir, TrialDir(t));

  // A trial that ran before continues from a checkpoint: a paused one
  // always, a retried or interrupted one unless trial.resume_from_checkpoint
  // is false. After an exploit, from the donor's copy; otherwise from its
  // newest checkpoint at or before the last step the tuner recorded for the
  // previous attempt: a trial writes a checkpoint before or after printing
  // its step, and a newer one may belong to a report that never arrived
  // (the tuner or the trial killed in between), which would leave a step
  // missing from the curve.
  std::optional<CheckpointFolder> resume;
  std::vector<StoredReport> previous;  // the previous attempt's counted reports
  const bool was_paused = t.state == TrialState::kPaused;
  if (ever_started.count(id) && (was_paused || spec.trial.resume_from_checkpoint)) {
    TUNE_ASSIGN_OR_RETURN(std::vector<StoredReport> stored, parts.storage->ListTrialReports(id));
    // The attempt ContinueTrial carries reports from (t.attempt is the new one).
    const int last_attempt = t.attempt - 1;
    std::optional<int64_t> recorded;
    for (StoredReport& r : stored) {
      if (r.attempt != last_attempt || !r.excluded.empty()) continue;
      recorded = std::max(recorded.value_or(r.report.step), r.report.step);
      previous.push_back(std::move(r));
    }
    if (auto copy = exploit_copy.find(id); copy != exploit_copy.end()) {
      resume = NewestCheckpoint(trial_dir, copy->second);
      if (resume && resume->step != copy->second) resume.reset();
    } else if (recorded) {
      resume = NewestCheckpoint(trial_dir, *recorded);
    }
  }
  if (!ever_started.count(id)) {
    // A first attempt starts from scratch: checkpoints in its directory were
    // left by an earlier experiment of the same name (its database gone),
    // and a program that scans its folder must not continue from them.
    int removed = 0;
    while (auto stale = NewestCheckpoint(trial_dir)) {
      std::error_code ec;
      std::filesystem::remove_all(stale->path, ec);
      if (ec) return Status::Internal("cannot remove " + stale->path + ", left by an earlier experiment: " + ec.message());
      ++removed;
    }
    if (removed > 0 && parts.progress) {
      parts.progress->OnMessage("trial " + std::to_string(t.number) + ": removed " + std::to_string(removed) +
                                " checkpoint folder(s) an earlier experiment named '" + spec.name + "' left in " +
                                trial_dir);
    }
  }
  LaunchSpec launch = MakeLaunchSpec(spec, t, trial_dir, resume ? resume->path : "");
  if (!parts.backend->CanLaunch(launch)) return Status::Unavailable("no free resources");
  Status st = parts.backend->Launch(launch);
  if (!st.ok()) {
    // Could not start at all: a failed attempt (counted, maybe retried).
    if (Status started = parts.storage->StartTrial(id, t.attempt, "not started"); !started.ok()) {
      return started.code() == StatusCode::kUnavailable ? Status::Internal(started.message()) : started;
    }
    t.state = TrialState::kRunning;
    running.insert(id);
    started_at[id] = Clock::now();
    return EndTrial(id, TrialState::kFailed, "could not start: " + st.message());
  }
  std::string location = "local";
  if (auto rs = parts.backend->State(id); rs.ok() && !rs->location.empty()) location = rs->location;
  Status started = resume ? parts.storage->ContinueTrial(id, t.attempt, location, resume->step)
                          : parts.storage->StartTrial(id, t.attempt, location);
  if (!started.ok()) {
    // Never kUnavailable from here: the caller reads that as "no free
    // resources" and would launch it again.
    (void)parts.backend->Kill(id, std::chrono::milliseconds(0));
    return started.code() == StatusCode::kUnavailable ? Status::Internal(started.message()) : started;
  }
  // The curve the new attempt starts with: the reports that led to its
  // checkpoint (copied by ContinueTrial), or none.
  exploit_copy.erase(id);
  t.intermediate.clear();
  if (resume) {
    for (const StoredReport& r : previous) {
      if (r.report.step > resume->step) continue;
      if (auto obj = Objective(r.report)) t.intermediate[r.report.step] = *obj;
    }
  }
  t.value = ScopedValue(t, spec.objective);
  t.state = TrialState::kRunning;
  running.insert(id);
  paused.erase(id);
  ever_started.insert(id);
  started_at[id] = Clock::now();
  if (parts.progress && (resume || was_paused)) {
    parts.progress->OnMessage("trial " + std::to_string(t.number) + " continues " +
                              (resume ? "from " + std::filesystem::path(resume->path).filename().string()
                                      : std::string("from the start: it has no checkpoint")));
  }
  if (parts.progress) parts.progress->OnTrialStarted(t);
  if (parts.tracking) parts.tracking->OnAttemptStarted(t, trial_dir);
  return Status::Ok();
}

std::optional<TrialId> Tuner::Impl::NextPaused() {
  std::vector<const Trial*> order;
  for (TrialId id : paused) order.push_back(&Get(id));
  std::sort(order.begin(), order.end(), [&](const Trial* a, const Trial* b) {
    int64_t sa = LastStep(*a), sb = LastStep(*b);
    return sa != sb ? sa < sb : a->number < b->number;
  });
  for (const Trial* t : order)
    if (parts.scheduler->MayResume(*t)) return t->id;
  return std::nullopt;
}

Status Tuner::Impl::LaunchReady() {
  TUNE_RETURN_IF_ERROR(TakeExploits());
  while (static_cast<int>(running.size() + draining.size()) < max_concurrent) {
    if (spec.limits.max_failed_trials > 0 && failed_count >= spec.limits.max_failed_trials) return Status::Ok();
    TrialId id = 0;
    bool from_paused = false;
    if (!retry_queue.empty()) {
      id = retry_queue.front();
    } else if (static_cast<int>(trials.size()) >= max_trials) {
      // The population is complete: paused trials take turns.
      std::optional<TrialId> next = NextPaused();
      if (!next) return Status::Ok();
      id = *next;
      from_paused = true;
    } else {
      // Sample only once the trial can start, so it sees the latest history.
      LaunchSpec probe;
      probe.workers = spec.trial.workers;
      probe.cpu_per_worker = spec.trial.resources_per_worker.cpu;
      probe.gpu_per_worker = spec.trial.resources_per_worker.gpu;
      if (!parts.backend->CanLaunch(probe)) {
        if (running.empty() && draining.empty()) {
          return Status::InvalidArgument("a trial needs more resources (" + std::to_string(probe.workers) +
                                         " workers x " + ParamToString(probe.cpu_per_worker) +
                                         " cpu) than the backend has");
        }
        return Status::Ok();
      }
      // A new trial: its point to evaluate and grid point, the sampler for the rest.
      int number = static_cast<int>(trials.size());
      parts.sampler->Reseed(TrialSeed(seed, number));
      ParamMap params = NewTrialParams(spec, grid, number, *parts.sampler, trials);
      TUNE_ASSIGN_OR_RETURN(Trial created, parts.storage->CreateTrial(experiment_id, params));
      index_of[created.id] = static_cast<int>(trials.size());
      trials.push_back(created);
      parts.scheduler->OnTrialAdd(created);
      retry_queue.push_back(created.id);
      id = created.id;
    }
    Status st = LaunchTrial(id);
    if (st.code() == StatusCode::kUnavailable) return Status::Ok();  // wait for resources
    if (!from_paused) retry_queue.pop_front();
    paused.erase(id);
    TUNE_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

Status Tuner::Impl::Restart(TrialId id, const MetricReport& marker) {
  // A trial that reached max_t before keeps that result.
  if (finishing.count(id)) return Status::Ok();
  Trial& t = Get(id);
  if (spec.trial.resume_from_checkpoint) {
    // The new rank 0 may continue from a checkpoint: its first report says
    // from which step on the old one's reports stop counting.
    restarted[id] = marker.restart;
    if (parts.progress) {
      parts.progress->OnMessage("trial " + std::to_string(t.number) + ": rank 0 started over (" + marker.restart +
                                "); its earlier reports from the step it reports next on no longer count");
    }
    return Status::Ok();
  }
  TUNE_RETURN_IF_ERROR(parts.storage->ExcludeAttemptReports(id, t.attempt, marker.restart));
  t.intermediate.clear();
  t.value.reset();
  if (parts.tracking) parts.tracking->OnAttemptRestarted(t);
  if (parts.progress) {
    parts.progress->OnMessage("trial " + std::to_string(t.number) + ": its reports so far no longer count (" +
                              marker.restart + "); the new rank 0 reports from the start");
  }
  return Status::Ok();
}

Result<bool> Tuner::Impl::RecordReport(TrialId id, const MetricReport& r) {
  if (!r.restart.empty()) {
    TUNE_RETURN_IF_ERROR(Restart(id, r));
    return false;
  }
  Trial& t = Get(id);
  auto obj = Objective(r);
  if (finishing.count(id)) {
    // Past max_t (as Ray, trials compare at equal budget): kept, marked,
    // and never part of the value, the sampler's or the scheduler's view.
    TUNE_RETURN_IF_ERROR(parts.storage->AppendExcludedReport(id, t.attempt, r, obj, kAfterMaxT));
    return false;
  }
  if (pausing.count(id)) {
    // Ray drops what a trial reports after it was paused; kept, marked.
    TUNE_RETURN_IF_ERROR(parts.storage->AppendExcludedReport(id, t.attempt, r, obj, kAfterPause));
    return false;
  }
  if (auto it = restarted.find(id); it != restarted.end()) {
    // The first report of a replaced rank 0: what the old one reported from
    // this step on is superseded (all of it without a checkpoint).
    TUNE_RETURN_IF_ERROR(parts.storage->ExcludeAttemptReports(id, t.attempt, it->second, r.step));
    t.intermediate.erase(t.intermediate.lower_bound(r.step), t.intermediate.end());
    t.value = ScopedValue(t, spec.objective);
    restarted.erase(it);
  }
  TUNE_RETURN_IF_ERROR(parts.storage->AppendReport(id, t.attempt, r, obj));
  if (obj) t.intermediate[r.step] = *obj;
  if (parts.tracking) parts.tracking->OnReport(t, r);
  return true;
}

Status Tuner::Impl::HandleReports(TrialId id, const std::vector<MetricReport>& reports, bool* stopped) {
  for (const MetricReport& r : reports) {
    TUNE_ASSIGN_OR_RETURN(bool counts, RecordReport(id, r));
    if (!counts) continue;
    Trial& t = Get(id);
    auto obj = Objective(r);
    if (obj) t.value = ScopedValue(t, spec.objective);
    if (parts.progress) parts.progress->OnTrialReport(t, r.step, obj);
    if (!obj) {
      if (t.intermediate.empty()) {
        std::set<std::string>& names = other_metrics[id];
        for (const auto& [name, v] : r.values) {
          if (names.size() < 8) names.insert(name);
        }
      }
      continue;
    }
    parts.scheduler->SetWaitingTrials(Waiting());
    Decision d = parts.scheduler->OnTrialResult(t, r.step, *obj);
    if (d.action == Action::kPause) {
      TUNE_RETURN_IF_ERROR(BeginPause(id, std::move(d.exploit), r.step));
      if (!pausing.count(id)) continue;  // the exploit was skipped: it goes on
      *stopped = true;
      return Status::Ok();
    }
    if (d.action == Action::kStop) {
      if (!d.rung) {
        // At max_t: its budget is used. It gets kill_grace to exit by itself
        // (a trainer writes its outputs after its last report), then is
        // stopped; either way it is completed.
        if (!finishing.count(id)) finishing[id] = Clock::now() + options.kill_grace;
        continue;
      }
      TUNE_RETURN_IF_ERROR(parts.backend->Kill(id, options.kill_grace));
      Drain(id);
      std::string why = d.reason.empty() ? "stopped by the scheduler" : d.reason;
      TUNE_RETURN_IF_ERROR(EndTrial(id, TrialState::kPruned, why, d.rung));
      *stopped = true;
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Status Tuner::Impl::EndTrial(TrialId id, TrialState state, const std::string& message_in,
                             std::optional<int64_t> rung) {
  // One line, whatever the backend quoted from the trial's output.
  std::string message = OneLine(message_in, kMaxMessageBytes);
  Trial& t = Get(id);
  // Several objectives or constraints: each one's value, from the reports
  // that count; a completed trial missing one fails, naming it.
  TrialValues tv;
  if (state == TrialState::kCompleted && HasTrialValues(spec)) {
    TUNE_ASSIGN_OR_RETURN(std::vector<StoredReport> reports, parts.storage->ListTrialReports(id));
    tv = ComputeTrialValues(spec, reports, t.attempt);
    if (!tv.missing.empty()) {
      state = TrialState::kFailed;
      message = (message == "completed" ? std::string("exited 0") : message) + " but never reported " + tv.missing;
      tv = TrialValues{};
    }
  }
  running.erase(id);
  other_metrics.erase(id);
  restarted.erase(id);
  if (state == TrialState::kFailed) {
    int& f = failures[id];
    ++f;
    if (f <= spec.trial.max_retries) {
      TUNE_RETURN_IF_ERROR(parts.storage->RetryFailedTrial(id, message));
      parts.scheduler->OnTrialError(t);
      if (parts.progress) parts.progress->OnTrialEnded(t, "attempt failed (" + message + "), retrying");
      t.state = TrialState::kPending;
      t.attempt += 1;
      t.intermediate.clear();
      t.value.reset();
      retry_queue.push_back(id);
      return Status::Ok();
    }
  }
  std::optional<double> value = ScopedValue(t, spec.objective);
  TUNE_RETURN_IF_ERROR(
      parts.storage->FinishTrialWithValues(id, state, value, tv.values, tv.constraints, rung, message));
  TUNE_RETURN_IF_ERROR(SaveRunSeconds());
  t.state = state;
  t.value = value;
  t.values = std::move(tv.values);
  t.constraints = std::move(tv.constraints);
  if (state == TrialState::kFailed) {
    ++failed_count;
    parts.scheduler->OnTrialError(t);
  } else {
    parts.scheduler->OnTrialComplete(t);
  }
  parts.sampler->AfterTrial(t);
  NoteValue(t);
  if (parts.progress) parts.progress->OnTrialEnded(t, message);
  if (parts.tracking) {
    parts.tracking->OnTrialFinished(
        t, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  }
  return Status::Ok();
}

Status Tuner::Impl::BeginPause(TrialId id, std::optional<Exploit> exploit, int64_t step) {
  Trial& t = Get(id);
  std::optional<CheckpointFolder> donor_newest;
  // The donor's state that its score ranked: its newest checkpoint at or
  // before the step the scheduler judged (Exploit::donor_step, else its
  // last report the tuner has seen; a newer one, written while the tuner
  // read the report, was never judged), or, when the donor has deleted
  // that one while it ran on, its oldest after it.
  if (exploit && index_of.count(exploit->donor)) {
    const Trial& donor = Get(exploit->donor);
    donor_newest = NearestCheckpoint(TrialDirPath(donor), exploit->donor_step.value_or(LastStep(donor)));
  }
  // A checkpoint at max_t has nothing left to train: continuing from it
  // would end the trial at once and lose its own last value.
  const bool at_end = donor_newest && spec.scheduler.type == "pbt" && donor_newest->step >= spec.scheduler.max_t;
  if (exploit && (!donor_newest || at_end)) {
    // Ray: no checkpoint to take, so nothing happens.
    if (parts.progress && index_of.count(exploit->donor)) {
      parts.progress->OnMessage("trial " + std::to_string(t.number) + ": no exploit, trial " +
                                std::to_string(Get(exploit->donor).number) +
                                (at_end ? "'s newest checkpoint is at max_t" : " has no checkpoint yet"));
    }
    if (parts.scheduler->OnExploitSkipped(t) != Action::kPause) return Status::Ok();
    exploit.reset();
  }
  // It gets kill_grace to exit by itself (a program may save a checkpoint
  // on SIGTERM); what it reports meanwhile is kept but does not count.
  TUNE_RETURN_IF_ERROR(parts.backend->Kill(id, options.kill_grace));
  pausing[id] = Pausing{std::move(exploit), step};
  return Status::Ok();
}

Status Tuner::Impl::CompletePause(TrialId id) {
  Pausing p = std::move(pausing.at(id));
  pausing.erase(id);
  Trial& t = Get(id);
  running.erase(id);
  other_metrics.erase(id);
  TUNE_RETURN_IF_ERROR(parts.storage->PauseTrial(
      id, p.exploit ? "paused to take trial " + std::to_string(Get(p.exploit->donor).number) + "'s checkpoint"
                    : "paused at " + spec.scheduler.time_attr + " " + std::to_string(p.step) + " for another trial"));
  t.state = TrialState::kPaused;
  t.attempt += 1;  // the next process is a new attempt
  paused.insert(id);
  if (p.exploit) TUNE_RETURN_IF_ERROR(CarryOutExploit(id, *p.exploit, p.step));
  if (parts.progress) parts.progress->OnTrialEnded(t, "paused");
  return Status::Ok();
}

Status Tuner::Impl::CarryOutExploit(TrialId id, const Exploit& exploit, int64_t step) {
  Trial& t = Get(id);
  const Trial& donor = Get(exploit.donor);
  auto copied = CopyNewestCheckpoint(TrialDirPath(donor), TrialDirPath(t),
                                     exploit.donor_step.value_or(LastStep(donor)));
  if (!copied.ok()) {
    // Gone meanwhile: it continues from its own checkpoint, unchanged.
    if (parts.progress) {
      parts.progress->OnMessage("trial " + std::to_string(t.number) + ": no exploit, " + copied.status().message());
    }
    (void)parts.scheduler->OnExploitSkipped(t);
    return Status::Ok();
  }
  TUNE_RETURN_IF_ERROR(parts.storage->RecordExploit(id, step, donor.id, copied->step, exploit.params));
  exploit_copy[id] = copied->step;
  std::string changes;
  for (const auto& [name, v] : exploit.params) {
    auto old = t.params.find(name);
    if (old != t.params.end() && old->second == v) continue;
    changes += (changes.empty() ? "" : ", ") + name + " " +
               (old == t.params.end() ? std::string("-") : ParamToString(old->second)) + " -> " + ParamToString(v);
  }
  t.params = exploit.params;
  parts.scheduler->OnTrialExploited(t, donor, copied->step);
  if (parts.progress) {
    parts.progress->OnMessage("trial " + std::to_string(t.number) + " takes trial " + std::to_string(donor.number) +
                              "'s checkpoint-" + std::to_string(copied->step) +
                              (changes.empty() ? "" : ": " + changes));
  }
  return Status::Ok();
}

Status Tuner::Impl::TakeExploits() {
  for (auto& [id, exploit] : parts.scheduler->TakeExploits()) {
    if (!paused.count(id) || !index_of.count(exploit.donor)) continue;
    TUNE_RETURN_IF_ERROR(CarryOutExploit(id, exploit, LastStep(Get(id))));
  }
  return Status::Ok();
}

void Tuner::Impl::Drain(TrialId id) {
  draining[id] = Clock::now() + options.kill_grace + std::chrono::seconds(5);
}

// Drains reports and exits of every running trial.
Status Tuner::Impl::Harvest() {
  for (auto it = draining.begin(); it != draining.end();) {
    // Late reports of an ended trial are dropped; State says kRunning
    // until they are read.
    (void)parts.backend->Poll(it->first);
    auto rs = parts.backend->State(it->first);
    bool gone = !rs.ok() || (rs->state != RunState::kRunning && rs->state != RunState::kStarting);
    it = gone || Clock::now() >= it->second ? draining.erase(it) : std::next(it);
  }
  std::vector<TrialId> ids(running.begin(), running.end());
  for (TrialId id : ids) {
    if (pausing.count(id)) {
      TUNE_ASSIGN_OR_RETURN(std::vector<MetricReport> late, parts.backend->Poll(id));
      for (const MetricReport& r : late) TUNE_RETURN_IF_ERROR(RecordReport(id, r).status());
      TUNE_ASSIGN_OR_RETURN(RunStatus rs, parts.backend->State(id));
      if (rs.state == RunState::kSucceeded || rs.state == RunState::kFailed) TUNE_RETURN_IF_ERROR(CompletePause(id));
      continue;
    }
    TUNE_ASSIGN_OR_RETURN(std::vector<MetricReport> reports, parts.backend->Poll(id));
    bool stopped = false;
    TUNE_RETURN_IF_ERROR(HandleReports(id, reports, &stopped));
    if (stopped) continue;
    TUNE_ASSIGN_OR_RETURN(RunStatus rs, parts.backend->State(id));
    if (rs.state == RunState::kSucceeded || rs.state == RunState::kFailed) {
      // Reports written between the Poll above and the exit.
      TUNE_ASSIGN_OR_RETURN(std::vector<MetricReport> tail, parts.backend->Poll(id));
      TUNE_RETURN_IF_ERROR(HandleReports(id, tail, &stopped));
      if (stopped) continue;
    }
    if (auto f = finishing.find(id); f != finishing.end()) {
      if (rs.state == RunState::kRunning || rs.state == RunState::kStarting) {
        if (Clock::now() < f->second) continue;
        TUNE_RETURN_IF_ERROR(parts.backend->Kill(id, options.kill_grace));
        Drain(id);
      }
      finishing.erase(f);
      TUNE_RETURN_IF_ERROR(EndTrial(id, TrialState::kCompleted, "reached max_t"));
      continue;
    }
    if (rs.state == RunState::kSucceeded) {
      if (Get(id).intermediate.empty()) {
        std::string printed;
        for (const std::string& name : other_metrics[id]) printed += (printed.empty() ? "" : ", ") + OneLine(name, 80);
        TUNE_RETURN_IF_ERROR(EndTrial(id, TrialState::kFailed,
                                      "exited 0 but never reported the objective metric '" +
                                          spec.objective.metric + "'; " +
                                          (printed.empty() ? "it printed no name=number line"
                                                           : "it reported only " + printed)));
      } else {
        TUNE_RETURN_IF_ERROR(EndTrial(id, TrialState::kCompleted, "completed"));
      }
    } else if (rs.state == RunState::kFailed) {
      TUNE_RETURN_IF_ERROR(EndTrial(id, TrialState::kFailed, rs.message.empty() ? "failed" : rs.message));
    }
  }
  return Status::Ok();
}

Status Tuner::Impl::StopAllRunning(TrialState as, const std::string& message) {
  std::vector<TrialId> ids(running.begin(), running.end());
  for (TrialId id : ids) {
    TUNE_RETURN_IF_ERROR(parts.backend->Kill(id, options.kill_grace));
    // Keep what it reported up to now.
    auto reports = parts.backend->Poll(id);
    if (reports.ok()) {
      for (const MetricReport& r : *reports) TUNE_RETURN_IF_ERROR(RecordReport(id, r).status());
    }
    pausing.erase(id);  // stopped instead: an exploit not carried out is not recorded
    if (finishing.erase(id)) {
      // It had reached max_t: its budget is used, so it is completed
      // (also when interrupted: nothing is left to run).
      TUNE_RETURN_IF_ERROR(EndTrial(id, TrialState::kCompleted, "reached max_t"));
      continue;
    }
    if (as == TrialState::kPending) {
      // Interrupted: it runs again on --resume.
      TUNE_RETURN_IF_ERROR(parts.storage->RetryTrial(id, message));
      Trial& t = Get(id);
      t.state = TrialState::kPending;
      running.erase(id);
      if (parts.progress) parts.progress->OnTrialEnded(t, message);
    } else {
      TUNE_RETURN_IF_ERROR(EndTrial(id, as, message));
    }
  }
  if (as != TrialState::kPending) {
    // The run is over: paused trials end where they stand.
    std::vector<TrialId> waiting(paused.begin(), paused.end());
    for (TrialId id : waiting) {
      paused.erase(id);
      TUNE_RETURN_IF_ERROR(EndTrial(id, as, message));
    }
  }
  return Status::Ok();
}

ProgressCounts Tuner::Impl::Counts() const {
  ProgressCounts c;
  for (const Trial& t : trials) {
    switch (t.state) {
      case TrialState::kPending: case TrialState::kPaused: ++c.pending; break;
      case TrialState::kRunning: ++c.running; break;
      case TrialState::kCompleted: ++c.completed; break;
      case TrialState::kPruned: ++c.pruned; break;
      case TrialState::kFailed: ++c.failed; break;
      case TrialState::kStopped: ++c.stopped; break;
    }
  }
  c.max_trials = max_trials;
  c.best_value = best_value;
  c.best_number = best_number;
  c.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  c.finished_this_run = c.completed + c.pruned + c.failed + c.stopped - finished_at_start;
  if (spec.limits.time_budget_s > 0) c.budget_left_s = spec.limits.time_budget_s - seconds_before - c.elapsed_s;
  return c;
}

void Tuner::Impl::Tick(bool force) {
  if (!parts.progress) return;
  if (std::string notice = parts.backend->TakeNotice(); !notice.empty()) parts.progress->OnMessage(notice);
  auto now = Clock::now();
  if (!force && now - last_tick < std::chrono::milliseconds(500)) return;
  last_tick = now;
  parts.progress->OnTick(trials, Counts());
}

Tuner::Tuner(ExperimentSpec spec, TunerParts parts, TunerOptions options)
    : spec_(std::move(spec)), parts_(parts), options_(std::move(options)) {
  TUNE_CHECK(parts_.storage && parts_.backend && parts_.sampler && parts_.scheduler);
}

Result<RunSummary> Tuner::Run(const std::atomic<bool>* stop) {
  Impl run{spec_, parts_, options_};
  Result<RunSummary> result = Status::Internal("the run did not start");
  try {
    result = RunLoop(run, stop);
  } catch (...) {
    result = Status::Internal("stopped by an unexpected error: " + CurrentExceptionText());
  }
  // Before Setup found or made the experiment there is nothing to leave
  // resumable (and an existing experiment without --resume is not ours).
  if (!result.ok() && run.experiment_id != 0) run.Abandon(result.status());
  return result;
}

void Tuner::Impl::Abandon(const Status& why) {
  const std::string reason = OneLine(why.message(), 300);
  std::vector<TrialId> ids(running.begin(), running.end());
  for (TrialId id : ids) {
    try {
      (void)parts.backend->Kill(id, options.kill_grace);
    } catch (...) {
    }
    try {
      // As after Ctrl-C: it runs again on --resume.
      if (parts.storage->RetryTrial(id, "interrupted: tune run stopped on an error (" + reason + ")").ok()) {
        Get(id).state = TrialState::kPending;
        running.erase(id);
      }
    } catch (...) {
    }
  }
  try {
    (void)SaveRunSeconds();
    (void)parts.storage->SetExperimentState(experiment_id, ExperimentState::kStopped,
                                            "stopped by an error: " + reason + "; continue with tune run --resume");
  } catch (...) {
  }
  try {
    parts.backend->Shutdown();
  } catch (...) {
  }
  if (parts.tracking) {
    try {
      (void)parts.tracking->Finish();
    } catch (...) {
    }
  }
}

Result<RunSummary> Tuner::RunLoop(Impl& run, const std::atomic<bool>* stop) {
  TUNE_RETURN_IF_ERROR(parts_.backend->Preflight());
  TUNE_RETURN_IF_ERROR(run.Setup());
  {
    const ProgressCounts at_start = run.Counts();
    run.finished_at_start = at_start.completed + at_start.pruned + at_start.failed + at_start.stopped;
  }

  RunSummary summary;
  auto finish = [&](RunOutcome outcome, ExperimentState state, const std::string& message) -> Status {
    summary.outcome = outcome;
    summary.message = message;
    TUNE_RETURN_IF_ERROR(run.SaveRunSeconds());
    return parts_.storage->SetExperimentState(run.experiment_id, state, message);
  };
  // The budget spans every run of the experiment: a resume gets what is left.
  // No budget: a deadline that never comes (a plain time point, since GCC
  // warns that an optional one may be read uninitialised).
  const Clock::time_point deadline =
      spec_.limits.time_budget_s > 0
          ? run.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                            std::max(0.0, spec_.limits.time_budget_s - run.seconds_before)))
          : Clock::time_point::max();
  for (;;) {
    if (stop && stop->load()) {
      TUNE_RETURN_IF_ERROR(run.StopAllRunning(TrialState::kPending, "interrupted: tune run was stopped"));
      TUNE_RETURN_IF_ERROR(finish(RunOutcome::kInterrupted, ExperimentState::kStopped,
                                  "interrupted; continue with tune run --resume"));
      break;
    }
    if (spec_.limits.max_failed_trials > 0 && run.failed_count >= spec_.limits.max_failed_trials) {
      TUNE_RETURN_IF_ERROR(run.StopAllRunning(TrialState::kStopped, "experiment failed"));
      TUNE_RETURN_IF_ERROR(finish(RunOutcome::kFailed, ExperimentState::kFailed,
                                  "max_failed_trials (" + std::to_string(spec_.limits.max_failed_trials) +
                                      ") reached"));
      break;
    }
    if (spec_.objective.goal && run.best_value &&
        !Better(*spec_.objective.goal, *run.best_value, spec_.objective.mode)) {
      TUNE_RETURN_IF_ERROR(run.StopAllRunning(TrialState::kStopped, "goal reached by another trial"));
      TUNE_RETURN_IF_ERROR(finish(RunOutcome::kCompleted, ExperimentState::kCompleted, "goal reached"));
      break;
    }
    if (Clock::now() >= deadline) {
      TUNE_RETURN_IF_ERROR(run.StopAllRunning(TrialState::kStopped, "time budget spent"));
      TUNE_RETURN_IF_ERROR(finish(RunOutcome::kCompleted, ExperimentState::kCompleted, "time_budget_s reached"));
      break;
    }
    TUNE_RETURN_IF_ERROR(run.LaunchReady());
    if (run.running.empty() && run.retry_queue.empty() && run.paused.empty() &&
        static_cast<int>(run.trials.size()) >= run.max_trials) {
      // Every trial failed: nothing was learned, which is a failed
      // experiment even without max_failed_trials (a script sees exit 1).
      ProgressCounts c = run.Counts();
      if (c.failed > 0 && c.completed == 0 && c.pruned == 0) {
        TUNE_RETURN_IF_ERROR(finish(RunOutcome::kFailed, ExperimentState::kFailed,
                                    "max_trials reached, but every trial failed (" + std::to_string(c.failed) +
                                        ")"));
      } else {
        TUNE_RETURN_IF_ERROR(finish(RunOutcome::kCompleted, ExperimentState::kCompleted, "max_trials reached"));
      }
      break;
    }
    if (run.running.empty() && run.draining.empty() && !run.retry_queue.empty() &&
        !(spec_.limits.max_failed_trials > 0 && run.failed_count >= spec_.limits.max_failed_trials)) {
      // Nothing runs and the next trial does not fit: it never will.
      return Status::InvalidArgument("a trial needs more resources (workers x resources_per_worker) than the backend has");
    }
    if (run.running.empty() && run.draining.empty() && run.retry_queue.empty() && !run.paused.empty() &&
        static_cast<int>(run.trials.size()) >= run.max_trials && !run.NextPaused()) {
      return Status::Internal("the scheduler keeps every paused trial waiting while none runs");
    }
    parts_.backend->WaitForEvent(options_.tick);
    TUNE_RETURN_IF_ERROR(run.Harvest());
    run.Tick(false);
  }
  parts_.backend->Shutdown();
  if (parts_.tracking) summary.undelivered = parts_.tracking->Finish();
  ProgressCounts c = run.Counts();
  summary.completed = c.completed;
  summary.pruned = c.pruned;
  summary.failed = c.failed;
  summary.stopped = c.stopped;
  summary.best_number = run.best_number;
  summary.best_value = run.best_value;
  for (const Trial& t : run.trials)
    if (run.best_number && t.number == *run.best_number) summary.best_params = t.params;
  if (parts_.progress) {
    run.Tick(true);
    parts_.progress->Finish(run.trials, c);
  }
  return summary;
}

}  // namespace tune
