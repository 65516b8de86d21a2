// `tune run`: checks everything that can be checked before the database is
// touched, resolves a resume, builds the parts, runs the Tuner and says how
// it ended (docs/architecture.md, section 3).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "core/one_line.h"
#include "core/trial_dir_name.h"
#include "core/utf8.h"
#include "search/sampler.h"
#include "spec/experiment_spec.h"
#include "storage/open_storage.h"
#include "storage/postgres_storage.h"
#include "storage/storage.h"
#include "tracking/mlflow_sink.h"
#include "tracking/sink_fanout.h"
#include "tracking/tensorboard_sink.h"
#include "tuner/cli_commands.h"
#include "tuner/cli_common.h"
#include "tuner/components.h"
#include "tuner/export_mlflow.h"
#include "tuner/progress.h"
#include "tuner/report.h"
#include "tuner/run_lock.h"
#ifdef TUNE_HAVE_K8S
#include "k8s/shared_trial_dir.h"
#endif
#include "tuner/tuner.h"

namespace tune {
namespace {

using namespace cli;
namespace fs = std::filesystem;

// What tune run works with once its checks have passed.
struct Run {
  ExperimentSpec spec;
  std::unique_ptr<TrialBackend> backend;
  std::optional<tracking::MlflowTarget> mlflow;
  std::string db_path;
  std::string runs_dir;  // trial directories: <runs_dir>/<experiment>/trial_NNNN
};

// An exit code to return now, or nothing to go on.
using Stop = std::optional<int>;

std::string DbPathFor(const RunArgs& args, const ExperimentSpec& spec) {
  if (args.db_path) return *args.db_path;
  if (!spec.storage_url.empty()) return spec.storage_url;
  if (!spec.storage_path.empty()) return spec.storage_path;
  return "tune.db";
}

// The trial directory of trial `number` (absolute; "" when that fails).
std::string TrialDir(const Run& run, int number) {
  std::error_code ec;
  return fs::absolute(fs::path(run.runs_dir) / run.spec.name / TrialDirName(number), ec).string();
}

// Everything that can be checked without the database is checked before it
// is opened (and perhaps created): a spec that cannot run leaves nothing
// behind, and `tune validate` runs the same checks.
Stop CheckBeforeDatabase(const RunArgs& args, Run& run, std::ostream& err) {
  auto spec_or = LoadExperimentSpec(args.experiment_path);
  if (!spec_or.ok()) return Fail(err, spec_or.status());
  run.spec = std::move(spec_or).value();
  // The database keeps experiment.json without tracking_uri's user:password@.
  run.spec.json = SpecJsonWithoutCredentials(run.spec.json);
  if (!args.backend.empty()) {
    if (Status st = OverrideBackend(&run.spec, args.backend); !st.ok()) return Fail(err, st);
  }
  auto runnable = CheckRunnable(run.spec);
  if (!runnable.ok()) return Fail(err, runnable.status());
  run.backend = std::move(runnable).value();
  if (args.db_path && args.db_path->empty()) {
    return Fail(err, Status::InvalidArgument("--db: expected a database file path or a postgresql:// URL, got \"\""));
  }
  if (args.db_path && IsDatabaseUrl(*args.db_path)) {
    if (Status st = CheckPostgresUrl(*args.db_path); !st.ok()) return Fail(err, st);
  }
  if (args.max_concurrent && *args.max_concurrent < 1) {
    return Fail(err, Status::InvalidArgument("--max-concurrent: expected a number of trials of at least 1, got " +
                                             std::to_string(*args.max_concurrent)));
  }
  if (run.spec.tracking.mlflow) {
    auto target = MlflowTargetOf(run.spec);
    if (!target.ok()) return Fail(err, target.status());
    run.mlflow = std::move(target).value();
  }
  // The backend can run trials (Kubernetes: the cluster answers, the
  // namespace exists, RBAC allows every verb) before the database is
  // touched: a refusal leaves nothing behind.
  if (Status st = run.backend->Preflight(); !st.ok()) {
    return Fail(err, st, st.IsInvalidArgument() || st.code() == StatusCode::kFailedPrecondition ? kExitUsage
                                                                                                : kExitFailed);
  }
  // Ctrl-C ends the backend's calls in flight and leaves what runs for --resume.
  run.backend->SetStopFlag(args.stop);
  run.db_path = DbPathFor(args, run.spec);
  run.runs_dir = RunsDirForDatabase(run.db_path);
  // What an attempt needs is refused before anything is created, not trial
  // by trial: e.g. a trial directory (beside the database) whose path is not
  // UTF-8, which no Kubernetes manifest can carry.
  if (Status st = run.backend->CheckLaunchable(MakeLaunchSpec(run.spec, Trial{}, TrialDir(run, 0))); !st.ok()) {
    return Fail(err, st);
  }
#ifdef TUNE_HAVE_K8S
  // PBT copies checkpoints between trial directories: on a cluster they
  // must be where both the pods and the tuner see them.
  if (run.spec.backend.type == "kubernetes" && run.spec.scheduler.type == "pbt") {
    std::error_code ec;
    if (Status st = CheckTrialDirsShared(run.spec.backend.kubernetes, fs::absolute(run.runs_dir, ec).string(),
                                         run.spec.source_path + ": scheduler pbt");
        !st.ok()) {
      return Fail(err, st);
    }
  }
#endif
  return std::nullopt;
}

// The seed is fixed once per experiment and stored: on resume the stored one
// wins, so the scheduler and sampler replay identically. A spec changed since
// the experiment started is stored, and said.
Stop ResolveExperiment(const RunArgs& args, Run& run, Storage& storage, std::ostream& out, std::ostream& err) {
  ExperimentSpec& spec = run.spec;
  auto found = storage.FindExperiment(spec.name);
  if (!found.ok()) {
    if (!spec.search.seed_given) {
      spec.search.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
      spec.search.seed_given = true;
    }
    return std::nullopt;
  }
  if (!args.resume) {
    return Fail(err, Status::FailedPrecondition("experiment '" + spec.name + "' already exists in " + run.db_path +
                                                "; pass --resume to continue it, or rename the experiment"));
  }
  auto changed = CheckResumable(spec, found->spec_json, run.db_path);
  if (!changed.ok()) return Fail(err, changed.status());
  if (!changed->empty()) {
    // What runs from now on is what the database describes.
    if (Status st = storage.SetExperimentSpec(found->id, spec.json); !st.ok()) return Fail(err, st, kExitFailed);
    std::string keys;
    for (size_t i = 0; i < changed->size(); ++i) {
      keys += (i == 0 ? "" : i + 1 == changed->size() ? " and " : ", ") + (*changed)[i];
    }
    out << "tune: resuming '" << spec.name << "' with the " << keys << " of " << args.experiment_path
        << " (changed since it started)\n";
  }
  spec.search.seed = found->seed;
  spec.search.seed_given = true;
  return std::nullopt;
}

// On resume, the attempts of trials the database says are running are
// handed to the backend, which adopts those that outlived the tuner
// (Kubernetes: followed if they run, harvested if they ended while tune was
// down) and removes the rest of what the interrupted run left.
Stop AdoptOnResume(const RunArgs& args, Run& run, Storage& storage, TunerOptions& options, std::ostream& out,
                   std::ostream& err) {
  if (!args.resume) return std::nullopt;
  std::map<TrialId, LaunchSpec> running;
  if (auto found = storage.FindExperiment(run.spec.name); found.ok()) {
    auto trials = storage.ListTrials(found->id);
    if (!trials.ok()) return Fail(err, trials.status(), kExitFailed);
    for (const Trial& t : *trials) {
      if (t.state != TrialState::kRunning) continue;
      const std::string trial_dir = TrialDir(run, t.number);
      std::error_code ec;
      fs::create_directories(trial_dir, ec);
      running[t.id] = MakeLaunchSpec(run.spec, t, trial_dir);
    }
  }
  auto adoption = run.backend->AdoptOnResume(running);
  if (!adoption.ok()) return Fail(err, adoption.status(), kExitFailed);
  if (!*adoption) return std::nullopt;  // attempts end with the tuner: they run again
  const std::set<TrialId>& adopted = (*adoption)->adopted;
  const std::string& kind = (*adoption)->workload;
  if (!adopted.empty()) {
    out << "tune: adopted the " << (kind == "Job" ? "Kubernetes Jobs" : kind + "s") << " of " << adopted.size()
        << " trial" << (adopted.size() == 1 ? "" : "s") << " that ran while tune was down\n";
  }
  for (const auto& [id, launch] : running) {
    if (adopted.count(id)) continue;
    out << "tune: trial " << launch.trial_number << ": its " << kind << " was gone on resume, so it runs again\n";
  }
  options.adopted = adopted;
  options.rerun_reason = "interrupted: the tuner stopped while it ran, and its " + kind + " was gone on resume: rerun";
  return std::nullopt;
}

// The tracking sinks the spec asks for.
void AddTrackers(const Run& run, Storage& storage, tracking::SinkFanout& trackers) {
  if (run.spec.tracking.tensorboard_dir) {
    const std::string& dir = *run.spec.tracking.tensorboard_dir;
    trackers.Add(
        std::make_unique<tracking::TensorBoardSink>(dir.empty() ? "" : (fs::path(dir) / run.spec.name).string(),
                                                    FinalMetricNamesOf(run.spec)));
  }
  if (run.mlflow) trackers.Add(std::make_unique<tracking::MlflowSink>(*run.mlflow, &storage));
}

// How the run ended, the best trial and where to look next; the backend's
// note and what it could not delete. The exit code.
int SayHowItEnded(const Run& run, const RunSummary& s, std::ostream& out, std::ostream& err) {
  const ExperimentSpec& spec = run.spec;
  out << "tune: experiment '" << spec.name << "' "
      << (s.outcome == RunOutcome::kFailed        ? "failed"
          : s.outcome == RunOutcome::kInterrupted ? "interrupted"
                                                  : "finished")
      << ": " << s.message << "\n";
  if (s.best_number && HasTrialValues(spec)) {
    // The best of one objective is not the answer: the front is.
    out << "tune: " << (IsMultiObjective(spec) ? "the Pareto front" : "the best feasible trial")
        << (spec.constraints.empty() ? "" : " under the constraints") << ": tune best --db " << run.db_path
        << " --experiment " << spec.name << "\n";
  } else if (s.best_number) {
    out << "tune: best trial " << *s.best_number << ": " << spec.objective.metric << " " << Fmt(*s.best_value)
        << ", " << ParamsShort(s.best_params) << "  (exact: tune best --db " << run.db_path << " --experiment "
        << spec.name << ")\n";
  }
  for (const std::string& line : s.undelivered) {
    out << "tune: tracking: not delivered: " << ValidUtf8(OneLine(line, 16384)) << "\n";
  }
  if (s.failed > 0) {
    out << "tune: " << s.failed << " trial" << (s.failed == 1 ? "" : "s") << " failed  (why: tune trials --db "
        << run.db_path << " --experiment " << spec.name << " --state failed)\n";
  }
  if (std::string note = run.backend->RunNote(); !note.empty()) out << "tune: " << note << "\n";
  // Deletion never fails the experiment, but what is left must be said,
  // with the command that deletes it, and the exit status says so (1).
  if (std::vector<std::string> left = run.backend->Leftovers(); !left.empty()) {
    err << "tune: could not delete " << left.size() << " Kubernetes object" << (left.size() == 1 ? "" : "s")
        << " of the experiment (";
    for (size_t i = 0; i < left.size() && i < 10; ++i) err << (i ? ", " : "") << left[i];
    err << (left.size() > 10 ? ", ..." : "") << "); delete them with: " << run.backend->LeftoverCommand()
        << " (or run: tune cleanup --db " << run.db_path << " --experiment " << spec.name << ")\n";
    if (s.outcome == RunOutcome::kCompleted) return kExitFailed;
  }
  switch (s.outcome) {
    case RunOutcome::kCompleted: return kExitOk;
    case RunOutcome::kFailed: return kExitFailed;
    case RunOutcome::kInterrupted: return kExitInterrupted;
  }
  return kExitOk;
}

}  // namespace

int RunCommand(const RunArgs& args, std::ostream& out, std::ostream& err) {
  Run run;
  if (Stop stop = CheckBeforeDatabase(args, run, err)) return *stop;
  RunLock lock;
  if (Status st = lock.Acquire(run.db_path, run.spec.name); !st.ok()) return Fail(err, st);
  if (!IsDatabaseUrl(run.db_path) && args.allow_network_fs) {
    if (std::string fs = NetworkFilesystemOf(run.db_path); !fs.empty()) {
      err << "tune: warning: " << run.db_path << " is on a network filesystem (" << fs
          << "): SQLite with a rollback journal, one writer at a time, and readers wait while it writes; "
             "PostgreSQL (--db postgresql://...) is the safe choice there\n";
    }
  }
  auto storage_or = OpenStorage(run.db_path, /*create_if_missing=*/true, args.allow_network_fs);
  if (!storage_or.ok()) return Fail(err, storage_or.status());
  std::unique_ptr<Storage> storage = std::move(storage_or).value();
  if (Stop stop = ResolveExperiment(args, run, *storage, out, err)) return *stop;

  auto sampler = MakeSampler(run.spec);
  if (!sampler.ok()) return Fail(err, sampler.status());
  auto scheduler = MakeScheduler(run.spec, run.spec.search.seed);
  if (!scheduler.ok()) return Fail(err, scheduler.status());
  TunerOptions options;
  options.resume = args.resume;
  options.max_concurrent = args.max_concurrent;
  options.runs_dir = run.runs_dir;
  options.kill_grace = std::chrono::milliseconds(static_cast<int64_t>(run.spec.trial.stop_grace_s * 1000));
  if (Stop stop = AdoptOnResume(args, run, *storage, options, out, err)) return *stop;

  const ExperimentSpec& spec = run.spec;
  std::unique_ptr<ProgressSink> progress =
      args.terminal ? MakeTerminalProgress(out, spec.objective.metric, spec.objective.mode == Mode::kMax)
                    : MakeLogProgress(out, spec.objective.metric);
  TunerParts parts;
  parts.storage = storage.get();
  parts.backend = run.backend.get();
  parts.sampler = sampler->get();
  parts.scheduler = scheduler->get();
  parts.progress = progress.get();
  tracking::SinkFanout trackers;
  AddTrackers(run, *storage, trackers);
  if (!trackers.empty()) parts.tracking = &trackers;

  if (!args.terminal) {
    out << "tune: experiment '" << spec.name << "' (" << spec.search.algorithm << " search, " << spec.scheduler.type
        << " scheduler, seed " << spec.search.seed << "), results in " << run.db_path << "\n"
        << std::flush;
  }
  Tuner tuner(spec, parts, options);
  auto summary = tuner.Run(args.stop);
  if (!summary.ok()) {
    run.backend->Shutdown();
    const Status& st = summary.status();
    return Fail(err, st,
                st.IsInvalidArgument() || st.code() == StatusCode::kFailedPrecondition ? kExitUsage : kExitFailed);
  }
  return SayHowItEnded(run, *summary, out, err);
}

}  // namespace tune
