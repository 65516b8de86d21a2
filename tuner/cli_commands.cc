#include "tuner/cli_commands.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "schedulers/asha_scheduler.h"
#include "search/grid.h"
#include "search/sampler.h"
#include "tracking/mlflow_sink.h"
#include "tracking/mlflow_uri.h"
#include "tracking/sink_fanout.h"
#include "tracking/tensorboard_sink.h"
#include "trial_runner/local_backend.h"
#include "tuner/capacity.h"
#include "tuner/components.h"
#include "tuner/core/one_line.h"
#include "tuner/core/utf8.h"
#include "tuner/experiment_spec.h"
#include "tuner/export_mlflow.h"
#include "tuner/export_tensorboard.h"
#include "tuner/progress.h"
#include "tuner/report.h"
#include "tuner/run_lock.h"
#include "tuner/storage/storage.h"
#include "tuner/tuner.h"

#ifdef TUNE_HAVE_K8S
#include "k8s/kubernetes_backend.h"
#include "k8s/render.h"
#endif

namespace tune {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitInterrupted = 130;

namespace fs = std::filesystem;

// One line, whatever the message quotes (a path, a server's answer).
int Fail(std::ostream& err, const Status& st, int code = kExitUsage) {
  err << "tune: " << OneLine(st.message(), 16384) << "\n";
  return code;
}

std::string DbPathFor(const RunArgs& args, const ExperimentSpec& spec) {
  if (args.db_path) return *args.db_path;
  if (!spec.storage_path.empty()) return spec.storage_path;
  return "tune.db";
}

// Query commands must not create a database by accident.
Result<std::unique_ptr<Storage>> OpenExisting(const std::optional<std::string>& db_path) {
  if (db_path && db_path->empty()) return Status::InvalidArgument("--db: expected a database file path, got \"\"");
  std::string path = db_path.value_or("tune.db");
  auto storage = OpenSqliteStorage(path, /*create_if_missing=*/false);
  if (!storage.ok() && storage.status().IsNotFound()) {
    return Status::NotFound(path + ": no results database here (run 'tune run EXPERIMENT.json' first, or pass --db)");
  }
  return storage;
}

// The parts tune run builds must be buildable (an unknown sampler option, a
// trial bigger than this machine, a missing working directory). Returns the
// backend, which needs no seed; the sampler and scheduler are rebuilt once
// the experiment's seed is known.
Result<std::unique_ptr<TrialBackend>> CheckRunnable(const ExperimentSpec& spec) {
  if (auto s = MakeSampler(spec); !s.ok()) return s.status();
  if (auto s = MakeScheduler(spec, 0); !s.ok()) return s.status();
  return MakeBackend(spec, "");
}

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Where ASHA will check trials: each bracket's milestones below max_t and
// the chance that a new trial joins it; a bracket without one never stops a
// trial early, which deserves a word before hours are spent.
void DescribeRungs(const ExperimentSpec& spec, std::ostream& out) {
  auto made = MakeScheduler(spec, spec.search.seed);
  const auto* asha = made.ok() ? dynamic_cast<const AshaScheduler*>(made->get()) : nullptr;
  if (!asha) return;
  const std::vector<double> p = asha->BracketProbabilities();
  for (int b = 0; b < asha->num_brackets(); ++b) {
    std::string rungs;
    for (double m : asha->Milestones(b)) {
      if (m >= static_cast<double>(spec.scheduler.max_t)) continue;
      rungs += (rungs.empty() ? "" : ", ") + Fmt(m);
    }
    out << "\n              ";
    const bool several = asha->num_brackets() > 1;
    if (several) {
      char share[32];
      std::snprintf(share, sizeof share, "%.1f%%", 100 * p[b]);
      out << "bracket " << b << " (" << share << " of trials): ";
    }
    if (rungs.empty()) {
      out << "no rung below max_t " << spec.scheduler.max_t << ": "
          << (several ? "its trials always run to max_t" : "no trial is ever stopped early");
    } else {
      out << "rungs at " << spec.scheduler.time_attr << " " << rungs << ", then max_t " << spec.scheduler.max_t;
    }
  }
}

}  // namespace

int RunCommand(const RunArgs& args, std::ostream& out, std::ostream& err) {
  auto spec_or = LoadExperimentSpec(args.experiment_path);
  if (!spec_or.ok()) return Fail(err, spec_or.status());
  ExperimentSpec spec = std::move(spec_or).value();
  // The database keeps experiment.json without tracking_uri's user:password@.
  spec.json = SpecJsonWithoutCredentials(spec.json);
  if (!args.backend.empty()) {
    if (Status st = OverrideBackend(&spec, args.backend); !st.ok()) return Fail(err, st);
  }

  // Everything that can be checked without the database is checked before
  // it is opened (and perhaps created): a spec that cannot run leaves
  // nothing behind, and `tune validate` runs the same checks.
  auto runnable = CheckRunnable(spec);
  if (!runnable.ok()) return Fail(err, runnable.status());
  std::unique_ptr<TrialBackend> backend = std::move(runnable).value();
  if (args.db_path && args.db_path->empty()) {
    return Fail(err, Status::InvalidArgument("--db: expected a database file path, got \"\""));
  }
  if (args.max_concurrent && *args.max_concurrent < 1) {
    return Fail(err, Status::InvalidArgument("--max-concurrent: expected a number of trials of at least 1, got " +
                                             std::to_string(*args.max_concurrent)));
  }
  std::optional<tracking::MlflowTarget> mlflow_target;
  if (spec.tracking.mlflow) {
    auto target = MlflowTargetOf(spec);
    if (!target.ok()) return Fail(err, target.status());
    mlflow_target = std::move(target).value();
  }
  // The backend can run trials (Kubernetes: the cluster answers, the
  // namespace exists, RBAC allows every verb) before the database is
  // touched: a refusal leaves nothing behind.
  if (Status st = backend->Preflight(); !st.ok()) {
    return Fail(err, st, st.IsInvalidArgument() || st.code() == StatusCode::kFailedPrecondition ? kExitUsage
                                                                                                : kExitFailed);
  }
#ifdef TUNE_HAVE_K8S
  auto* k8s = dynamic_cast<KubernetesBackend*>(backend.get());
  // Ctrl-C ends kubectl calls in flight and leaves the Jobs for --resume.
  if (k8s) k8s->SetStopFlag(args.stop);
#endif
  std::string db_path = DbPathFor(args, spec);
  fs::path db_dir = fs::path(db_path).parent_path();
  const std::string runs_dir = (db_dir.empty() ? fs::path("tune_runs") : db_dir / "tune_runs").string();
#ifdef TUNE_HAVE_K8S
  // What tune render refuses is refused before anything is created, not
  // trial by trial: e.g. a trial directory (beside the database) whose path
  // is not UTF-8, which no manifest can carry.
  if (k8s) {
    std::error_code ec;
    const std::string first_dir = fs::absolute(fs::path(runs_dir) / spec.name / "trial_0000", ec).string();
    auto manifests = RenderTrialManifests(spec.backend.kubernetes, MakeLaunchSpec(spec, Trial{}, first_dir),
                                          KubernetesObjectName(spec.name, 0, 0));
    if (!manifests.ok()) return Fail(err, manifests.status());
  }
#endif
  RunLock lock;
  if (Status st = lock.Acquire(db_path, spec.name); !st.ok()) return Fail(err, st);
  auto storage_or = OpenSqliteStorage(db_path);
  if (!storage_or.ok()) return Fail(err, storage_or.status());
  std::unique_ptr<Storage> storage = std::move(storage_or).value();

  // The seed is fixed once per experiment and stored: on resume the stored
  // one wins, so the scheduler and sampler replay identically.
  if (auto found = storage->FindExperiment(spec.name); found.ok()) {
    if (!args.resume) {
      return Fail(err, Status::FailedPrecondition(
                           "experiment '" + spec.name + "' already exists in " + db_path +
                           "; pass --resume to continue it, or rename the experiment"));
    }
    auto changed = CheckResumable(spec, found->spec_json, db_path);
    if (!changed.ok()) return Fail(err, changed.status());
    if (!changed->empty()) {
      // What runs from now on is what the database describes.
      if (Status st = storage->SetExperimentSpec(found->id, spec.json); !st.ok()) return Fail(err, st, kExitFailed);
      std::string keys;
      for (size_t i = 0; i < changed->size(); ++i) {
        keys += (i == 0 ? "" : i + 1 == changed->size() ? " and " : ", ") + (*changed)[i];
      }
      out << "tune: resuming '" << spec.name << "' with the " << keys << " of " << args.experiment_path
          << " (changed since it started)\n";
    }
    spec.search.seed = found->seed;
    spec.search.seed_given = true;
  } else if (!spec.search.seed_given) {
    spec.search.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    spec.search.seed_given = true;
  }

  auto sampler = MakeSampler(spec);
  if (!sampler.ok()) return Fail(err, sampler.status());
  auto scheduler = MakeScheduler(spec, spec.search.seed);
  if (!scheduler.ok()) return Fail(err, scheduler.status());

  std::set<TrialId> adopted_trials;
  std::string rerun_reason;
#ifdef TUNE_HAVE_K8S
  // On resume, the Jobs of trials the database says are running are
  // adopted (followed if they run, harvested if they ended while tune was
  // down); everything else the interrupted run left is deleted.
  if (args.resume && k8s) {
    std::map<TrialId, LaunchSpec> running;
    if (auto found = storage->FindExperiment(spec.name); found.ok()) {
      auto trials = storage->ListTrials(found->id);
      if (!trials.ok()) return Fail(err, trials.status(), kExitFailed);
      for (const Trial& t : *trials) {
        if (t.state != TrialState::kRunning) continue;
        char dir[32];
        std::snprintf(dir, sizeof dir, "trial_%04d", t.number);
        std::error_code ec;
        std::string trial_dir = fs::absolute(fs::path(runs_dir) / spec.name / dir, ec).string();
        fs::create_directories(trial_dir, ec);
        running[t.id] = MakeLaunchSpec(spec, t, trial_dir);
      }
    }
    auto adopted = k8s->AdoptOrClean(running);
    if (!adopted.ok()) return Fail(err, adopted.status(), kExitFailed);
    // "Job" (batch/v1), "PyTorchJob" or "TrainJob".
    const std::string kind = k8s->WorkloadKind();
    if (!adopted->empty()) {
      out << "tune: adopted the " << (kind == "Job" ? "Kubernetes Jobs" : kind + "s") << " of " << adopted->size()
          << " trial" << (adopted->size() == 1 ? "" : "s") << " that ran while tune was down\n";
    }
    for (const auto& [id, launch] : running) {
      if (adopted->count(id)) continue;
      out << "tune: trial " << launch.trial_number << ": its " << kind << " was gone on resume, so it runs again\n";
    }
    adopted_trials = *adopted;
    rerun_reason = "interrupted: the tuner stopped while it ran, and its " + kind + " was gone on resume: rerun";
  }
#endif
  std::unique_ptr<ProgressSink> progress =
      args.terminal ? MakeTerminalProgress(out, spec.objective.metric, spec.objective.mode == Mode::kMax)
                    : MakeLogProgress(out, spec.objective.metric);

  TunerOptions options;
  options.resume = args.resume;
  options.max_concurrent = args.max_concurrent;
  options.runs_dir = runs_dir;
  options.adopted = adopted_trials;
  options.rerun_reason = rerun_reason;

  TunerParts parts;
  parts.storage = storage.get();
  parts.backend = backend.get();
  parts.sampler = sampler->get();
  parts.scheduler = scheduler->get();
  parts.progress = progress.get();
  tracking::SinkFanout trackers;
  if (spec.tracking.tensorboard_dir) {
    const std::string& dir = *spec.tracking.tensorboard_dir;
    trackers.Add(std::make_unique<tracking::TensorBoardSink>(dir.empty() ? "" : (fs::path(dir) / spec.name).string()));
  }
  if (mlflow_target) trackers.Add(std::make_unique<tracking::MlflowSink>(*mlflow_target, storage.get()));
  if (!trackers.empty()) parts.tracking = &trackers;

  if (!args.terminal) {
    out << "tune: experiment '" << spec.name << "' (" << spec.search.algorithm << " search, " << spec.scheduler.type
        << " scheduler, seed " << spec.search.seed << "), results in " << db_path << "\n"
        << std::flush;
  }
  Tuner tuner(spec, parts, options);
  auto summary = tuner.Run(args.stop);
  if (!summary.ok()) {
    backend->Shutdown();
    return Fail(err, summary.status(), summary.status().IsInvalidArgument() ||
                                               summary.status().code() == StatusCode::kFailedPrecondition
                                           ? kExitUsage
                                           : kExitFailed);
  }
  const RunSummary& s = *summary;
  out << "tune: experiment '" << spec.name << "' " << (s.outcome == RunOutcome::kFailed ? "failed" :
                                                        s.outcome == RunOutcome::kInterrupted ? "interrupted" : "finished")
      << ": " << s.message << "\n";
  if (s.best_number) {
    out << "tune: best trial " << *s.best_number << ": " << spec.objective.metric << " " << Fmt(*s.best_value)
        << ", " << ParamsShort(s.best_params) << "  (exact: tune best --db " << db_path << " --experiment "
        << spec.name << ")\n";
  }
  for (const std::string& line : s.undelivered) {
    out << "tune: tracking: not delivered: " << ValidUtf8(OneLine(line, 16384)) << "\n";
  }
  if (s.failed > 0) {
    out << "tune: " << s.failed << " trial" << (s.failed == 1 ? "" : "s") << " failed  (why: tune trials --db "
        << db_path << " --experiment " << spec.name << " --state failed)\n";
  }
#ifdef TUNE_HAVE_K8S
  if (k8s && (k8s->api_stats().retried > 0 || k8s->api_stats().failed > 0)) {
    out << "tune: Kubernetes API: " << k8s->api_stats().calls << " calls, " << k8s->api_stats().retried
        << " retries after transient errors, " << k8s->api_stats().failed << " calls failed in the end\n";
  }
  // Deletion never fails the experiment, but what is left must be said,
  // with the command that deletes it, and the exit status says so (1).
  if (k8s && !k8s->Leftovers().empty()) {
    std::vector<std::string> left = k8s->Leftovers();
    err << "tune: could not delete " << left.size() << " Kubernetes object" << (left.size() == 1 ? "" : "s")
        << " of the experiment (";
    for (size_t i = 0; i < left.size() && i < 10; ++i) err << (i ? ", " : "") << left[i];
    err << (left.size() > 10 ? ", ..." : "") << "); delete them with: " << k8s->LeftoverCommand()
        << " (or run: tune cleanup --db " << db_path << " --experiment " << spec.name << ")\n";
    if (s.outcome == RunOutcome::kCompleted) return kExitFailed;
  }
#endif
  switch (s.outcome) {
    case RunOutcome::kCompleted: return kExitOk;
    case RunOutcome::kFailed: return kExitFailed;
    case RunOutcome::kInterrupted: return kExitInterrupted;
  }
  return kExitOk;
}

int ValidateCommand(const std::string& path, std::ostream& out, std::ostream& err) {
  auto spec_or = LoadExperimentSpec(path);
  if (!spec_or.ok()) return Fail(err, spec_or.status());
  const ExperimentSpec& spec = *spec_or;
  auto runnable = CheckRunnable(spec);
  if (!runnable.ok()) return Fail(err, runnable.status());
  out << path << ": ok\n";
  out << "  experiment  " << spec.name << "\n";
  out << "  objective   " << (spec.objective.mode == Mode::kMin ? "minimize " : "maximize ") << spec.objective.metric
      << (spec.objective.scope == Scope::kBest ? " (best report)" : " (last report)");
  if (spec.objective.goal) out << ", goal " << Fmt(*spec.objective.goal);
  out << "\n  search      " << spec.search.algorithm;
  if (spec.search.algorithm == "tpe")
    out << " (" << (spec.search.tpe.multivariate ? "multivariate" : "univariate") << ", parzen_rules "
        << spec.search.tpe.parzen_rules << ")";
  if (spec.search.seed_given) out << ", seed " << spec.search.seed;
  for (size_t i = 0; i < spec.search.points_to_evaluate.size(); ++i) {
    const ParamMap& point = spec.search.points_to_evaluate[i];
    out << "\n              trial " << i << " tries " << (point.empty() ? "what is sampled" : ParamsShort(point))
        << (!point.empty() && point.size() < spec.parameters.size() ? ", the rest sampled" : "");
  }
  const SchedulerSpec& sch = spec.scheduler;
  out << "\n  scheduler   " << sch.type;
  if (sch.type == "asha") {
    out << " (time_attr " << sch.time_attr << ", max_t " << sch.max_t << ", grace_period " << sch.grace_period
        << ", reduction_factor " << Fmt(sch.reduction_factor) << ", brackets " << sch.brackets << ")";
    DescribeRungs(spec, out);
  } else if (sch.type == "median") {
    out << " (time_attr " << sch.time_attr << ", grace_period " << sch.grace_period << ", min_samples_required "
        << sch.min_samples_required << ", hard_stop " << (sch.hard_stop ? "true" : "false") << ")";
  }
  out << "\n  limits      max_trials " << spec.limits.max_trials << ", max_concurrent_trials "
      << spec.limits.max_concurrent_trials;
  if (spec.limits.max_failed_trials > 0) out << ", max_failed_trials " << spec.limits.max_failed_trials;
  if (spec.limits.time_budget_s > 0) out << ", time_budget_s " << Fmt(spec.limits.time_budget_s);
  out << "\n  backend     " << spec.backend.type;
  if (spec.backend.type == "kubernetes") {
    out << " (namespace " << spec.backend.kubernetes.namespace_
        << ", image " << spec.backend.kubernetes.image << ")";
  }
  if (spec.tracking.tensorboard_dir) {
    const std::string& dir = *spec.tracking.tensorboard_dir;
    out << "\n  tracking    TensorBoard event files in " << (dir.empty() ? "each trial directory" : dir + "/" + spec.name + "/trial_NNNN");
  }
  if (spec.tracking.mlflow) {
    const auto& m = *spec.tracking.mlflow;
    out << "\n  tracking    MLflow at "
        << (m.tracking_uri.empty() ? "$MLFLOW_TRACKING_URI" : tracking::MaskCredentials(m.tracking_uri))
        << ", experiment '" << (m.experiment_name.empty() ? spec.name : m.experiment_name)
        << "' (a parent run, a child run per trial)";
  }
  out << "\n";
  if (auto* local = dynamic_cast<LocalBackend*>(runnable->get())) out << DescribeLocalCapacity(spec, *local);
  out << "  storage     " << (spec.storage_path.empty() ? "tune.db (or --db)" : spec.storage_path) << "\n";
  out << "  trial       " << spec.trial.workers << " worker(s):";
  for (const auto& a : spec.trial.command) out << " " << a;
  out << "\n  parameters\n";
  for (const auto& [name, dist] : spec.parameters) out << "    " << name << "  " << Describe(dist) << "\n";
  return kExitOk;
}

int BestCommand(const QueryArgs& args, std::ostream& out, std::ostream& err) {
  auto storage = OpenExisting(args.db_path);
  if (!storage.ok()) return Fail(err, storage.status());
  Status st = PrintBest(**storage, args.experiment, args.format, out);
  // Nothing to show yet is 1; an unknown experiment name is bad input (2).
  return st.ok() ? kExitOk : Fail(err, st, st.code() == StatusCode::kFailedPrecondition ? kExitFailed : kExitUsage);
}

int TrialsCommand(const QueryArgs& args, std::ostream& out, std::ostream& err) {
  auto storage = OpenExisting(args.db_path);
  if (!storage.ok()) return Fail(err, storage.status());
  TrialListing listing;
  if (!args.state.empty()) listing.state = ParseTrialState(args.state);
  listing.best_first = args.sort == "value";
  listing.limit = args.limit;
  Status st = PrintTrials(**storage, args.experiment, listing, args.format, out);
  return st.ok() ? kExitOk : Fail(err, st);
}

int ImportanceCommand(const QueryArgs& args, std::ostream& out, std::ostream& err) {
  auto storage = OpenExisting(args.db_path);
  if (!storage.ok()) return Fail(err, storage.status());
  Status st = PrintImportance(**storage, args.experiment, args.format, out);
  // Too few trials yet is 1, as for tune best; an unknown experiment name is bad input (2).
  return st.ok() ? kExitOk : Fail(err, st, st.code() == StatusCode::kFailedPrecondition ? kExitFailed : kExitUsage);
}

int ExportTensorBoardCommand(const QueryArgs& args, const std::string& out_dir, std::ostream& out,
                             std::ostream& err) {
  auto storage = OpenExisting(args.db_path);
  if (!storage.ok()) return Fail(err, storage.status());
  Status st = ExportTensorBoard(**storage, args.experiment, out_dir, out);
  return st.ok() ? kExitOk : Fail(err, st, st.code() == StatusCode::kInternal ? kExitFailed : kExitUsage);
}

int ExportMlflowCommand(const QueryArgs& args, const std::string& tracking_uri, std::ostream& out,
                        std::ostream& err) {
  auto storage = OpenExisting(args.db_path);
  if (!storage.ok()) return Fail(err, storage.status());
  Status st = ExportMlflow(**storage, args.experiment, tracking_uri, out);
  return st.ok() ? kExitOk
                 : Fail(err, st,
                        st.code() == StatusCode::kUnavailable || st.code() == StatusCode::kInternal ? kExitFailed
                                                                                                     : kExitUsage);
}

int StatusCommand(const QueryArgs& args, std::ostream& out, std::ostream& err) {
  auto storage = OpenExisting(args.db_path);
  if (!storage.ok()) return Fail(err, storage.status());
  Status st = PrintStatus(**storage, out);
  return st.ok() ? kExitOk : Fail(err, st);
}

int RenderCommand(const std::string& path, int trial_number, std::ostream& out, std::ostream& err) {
  auto spec_or = LoadExperimentSpec(path);
  if (!spec_or.ok()) return Fail(err, spec_or.status());
  ExperimentSpec spec = std::move(spec_or).value();
  if (trial_number < 0) {
    return Fail(err, Status::InvalidArgument("--trial: expected a trial number of at least 0, got " +
                                             std::to_string(trial_number)));
  }
#ifdef TUNE_HAVE_K8S
  // What the Kubernetes backend needs (an image), whatever backend.type says.
  if (Status st = OverrideBackend(&spec, "kubernetes"); !st.ok()) return Fail(err, st);
  // Parameters as tune run would draw them for this trial with no history:
  // its point to evaluate and grid point, the sampler for the rest.
  auto sampler = MakeSampler(spec);
  if (!sampler.ok()) return Fail(err, sampler.status());
  auto grid = GridPoints(spec.parameters, spec.search.algorithm == "grid");
  if (!grid.ok()) return Fail(err, grid.status());
  sampler->get()->Reseed(TrialSeed(spec.search.seed, trial_number));
  Trial t;
  t.number = trial_number;
  t.params = NewTrialParams(spec, *grid, trial_number, **sampler, {});
  std::string trial_dir = "/tune/runs/" + spec.name + "/trial_" + std::to_string(trial_number);
  LaunchSpec launch = MakeLaunchSpec(spec, t, trial_dir);
  auto text = RenderTrialManifests(spec.backend.kubernetes, launch, KubernetesObjectName(spec.name, trial_number, 0));
  if (!text.ok()) return Fail(err, text.status());
  out << *text << "\n";
  return kExitOk;
#else
  (void)trial_number;
  (void)out;
  return Fail(err, Status::FailedPrecondition("this tune was built without the Kubernetes backend (TUNE_WITH_K8S=OFF)"));
#endif
}

}  // namespace tune
