#include "tuner/cli_commands.h"

#include <cstdio>
#include <string>
#include <vector>

#include "search/distribution.h"
#include "spec/experiment_spec.h"
#include "storage/storage.h"
#include "tracking/mlflow_uri.h"
#include "tuner/capacity.h"
#include "tuner/cli_common.h"
#include "tuner/components.h"
#include "tuner/export_mlflow.h"
#include "tuner/export_tensorboard.h"
#include "tuner/progress.h"
#include "tuner/report.h"

namespace tune {
namespace {

using namespace cli;

// Where ASHA will check trials: each bracket's milestones below max_t and
// the chance that a new trial joins it; a bracket without one never stops a
// trial early, which deserves a word before hours are spent.
void DescribeRungs(const ExperimentSpec& spec, std::ostream& out) {
  auto made = MakeScheduler(spec, spec.search.seed);
  if (!made.ok()) return;
  const std::vector<RungBracket> brackets = (*made)->Brackets();
  for (size_t b = 0; b < brackets.size(); ++b) {
    std::string rungs;
    for (double m : brackets[b].milestones) {
      if (m >= static_cast<double>(spec.scheduler.max_t)) continue;
      rungs += (rungs.empty() ? "" : ", ") + Fmt(m);
    }
    out << "\n              ";
    const bool several = brackets.size() > 1;
    if (several) {
      char share[32];
      std::snprintf(share, sizeof share, "%.1f%%", 100 * brackets[b].probability);
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
  } else if (sch.type == "replay") {
    out << " (time_attr " << sch.time_attr << ", max_t " << sch.max_t << ")";
    for (const auto& [step, params] : sch.replay_schedule)
      out << "\n              from " << sch.time_attr << " " << step << ": " << ParamsShort(params);
  } else if (sch.type == "median") {
    out << " (time_attr " << sch.time_attr << ", grace_period " << sch.grace_period << ", min_samples_required "
        << sch.min_samples_required << ", hard_stop " << (sch.hard_stop ? "true" : "false") << ")";
  } else if (sch.type == "pbt") {
    out << " (time_attr " << sch.time_attr << ", max_t " << sch.max_t << ", perturbation_interval "
        << sch.perturbation_interval << ", burn_in_period " << sch.burn_in_period << ", quantile_fraction "
        << Fmt(sch.quantile_fraction) << ", resample_probability " << Fmt(sch.resample_probability)
        << ", perturbation_factors [";
    for (size_t i = 0; i < sch.perturbation_factors.size(); ++i) out << (i ? ", " : "") << Fmt(sch.perturbation_factors[i]);
    out << "], " << (sch.synch ? "synchronous" : "asynchronous") << ", population " << spec.limits.max_trials << ")";
    for (const auto& [name, dist] : sch.hyperparam_mutations) out << "\n              mutates " << name << " in " << Describe(dist);
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
  if (auto capacity = (*runnable)->Capacity(AttemptShape(spec))) out << DescribeCapacity(spec, *capacity);
  out << "  storage     "
      << (!spec.storage_url.empty() ? spec.storage_url : spec.storage_path.empty() ? "tune.db (or --db)" : spec.storage_path)
      << "\n";
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
  if (args.trial) {
    if (args.format == "csv") return Fail(err, Status::InvalidArgument("--trial: --format csv lists trials; use table or json"));
    Status st = PrintTrial(**storage, args.experiment, *args.trial, args.format, out);
    return st.ok() ? kExitOk : Fail(err, st);
  }
  TrialListing listing;
  if (!args.state.empty()) listing.state = ParseTrialState(args.state);
  listing.best_first = args.sort == "value";
  if (args.sort != "value" && args.sort != "number") listing.sort_objective = args.sort;
  listing.limit = args.limit;
  Status st = PrintTrials(**storage, args.experiment, listing, args.format, out);
  return st.ok() ? kExitOk : Fail(err, st);
}

int ImportanceCommand(const QueryArgs& args, std::ostream& out, std::ostream& err) {
  auto storage = OpenExisting(args.db_path);
  if (!storage.ok()) return Fail(err, storage.status());
  Status st = PrintImportance(**storage, args.experiment, args.format, out, args.objective);
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

}  // namespace tune
