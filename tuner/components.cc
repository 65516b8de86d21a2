#include "tuner/components.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "schedulers/asha_scheduler.h"
#include "schedulers/fifo_scheduler.h"
#include "schedulers/median_stopping_rule.h"
#include "schedulers/pbt_scheduler.h"
#include "schedulers/replay_scheduler.h"
#include "search/auto_sampler.h"
#include "search/gp_sampler.h"
#include "search/nsga2_sampler.h"
#include "search/random_sampler.h"
#include "search/tpe_sampler.h"
#include "spec/module_options.h"
#include "trial_runner/local_backend.h"
#include "trial_runner/process_group.h"
#ifdef TUNE_HAVE_K8S
#include "k8s/kubernetes_backend.h"
#endif

namespace tune {
namespace {

std::string Where(const ExperimentSpec& spec) {
  return spec.source_path.empty() ? "experiment.json" : spec.source_path;
}

}  // namespace

Result<std::unique_ptr<Sampler>> MakeSampler(const ExperimentSpec& spec) {
  const std::string& algo = spec.search.algorithm;
  // Grid points are enumerated by the tuner; what is left is drawn at random.
  if (algo == "random" || algo == "grid") return std::unique_ptr<Sampler>(new RandomSampler(spec.search.seed));
  if (algo == "tpe") {
    return std::unique_ptr<Sampler>(new TpeSampler(TpeSamplerOptionsFrom(spec)));
  }
  if (algo == "gp") return std::unique_ptr<Sampler>(new GpSampler(GpSamplerOptionsFrom(spec)));
  if (algo == "nsga2") return std::unique_ptr<Sampler>(new Nsga2Sampler(Nsga2SamplerOptionsFrom(spec)));
  if (algo == "auto") {
    AutoSamplerOptions o;
    o.gp = GpSamplerOptionsFrom(spec);
    o.tpe = TpeSamplerOptionsFrom(spec);
    o.nsga2 = Nsga2SamplerOptionsFrom(spec);
    o.constrained = !spec.constraints.empty();
    o.seed = spec.search.seed;
    return std::unique_ptr<Sampler>(new AutoSampler(std::move(o)));
  }
  return Status::InvalidArgument(Where(spec) + ": search.algorithm: '" + algo + "' is not available in this build");
}

ParamMap NewTrialParams(const ExperimentSpec& spec, const std::vector<ParamMap>& grid, int number,
                        Sampler& sampler, const History& history) {
  ParamMap fixed = grid.empty() ? ParamMap{} : grid[static_cast<size_t>(number) % grid.size()];
  const auto& points = spec.search.points_to_evaluate;
  if (number >= 0 && static_cast<size_t>(number) < points.size())
    for (const auto& [name, v] : points[static_cast<size_t>(number)]) fixed[name] = v;
  SearchSpace free_space;
  for (const auto& [name, dist] : spec.parameters)
    if (!fixed.count(name)) free_space[name] = dist;
  ParamMap params = SampleTrial(sampler, free_space, history);
  for (const auto& [name, v] : fixed) params[name] = v;
  return params;
}

Result<std::unique_ptr<Scheduler>> MakeScheduler(const ExperimentSpec& spec, uint64_t seed) {
  const SchedulerSpec& s = spec.scheduler;
  if (s.type == "fifo") return std::unique_ptr<Scheduler>(new FifoScheduler());
  if (s.type == "asha") {
    AshaOptions o = AshaOptionsFrom(spec, seed);
    if (Status st = ValidateAshaOptions(o); !st.ok()) return Status::InvalidArgument(Where(spec) + ": " + st.message());
    return std::unique_ptr<Scheduler>(new AshaScheduler(std::move(o)));
  }
  if (s.type == "pbt") {
    PbtOptions o = PbtOptionsFrom(spec, seed);
    if (Status st = ValidatePbtOptions(o); !st.ok()) return Status::InvalidArgument(Where(spec) + ": " + st.message());
    return std::unique_ptr<Scheduler>(new PbtScheduler(std::move(o)));
  }
  if (s.type == "median") {
    MedianOptions o = MedianOptionsFrom(spec);
    if (Status st = ValidateMedianOptions(o); !st.ok()) return Status::InvalidArgument(Where(spec) + ": " + st.message());
    return std::unique_ptr<Scheduler>(new MedianStoppingRule(std::move(o)));
  }
  if (s.type == "replay") {  // `tune replay`'s schedule (schedulers/replay_scheduler.h)
    std::vector<ReplayChange> changes;
    for (const auto& [step, params] : s.replay_schedule) changes.push_back({step, params});
    return std::unique_ptr<Scheduler>(new ReplayScheduler(std::move(changes)));
  }
  return Status::InvalidArgument(Where(spec) + ": scheduler.type: '" + s.type + "' is not available in this build");
}

Result<std::unique_ptr<TrialBackend>> MakeBackend(const ExperimentSpec& spec, const std::string& backend_type) {
  std::string type = backend_type.empty() ? spec.backend.type : backend_type;
  if (type == "local") {
    LocalBackend::Options o;
    o.cpu_slots = spec.backend.total_cpus;
    if (!spec.backend.gpus.empty()) {
      std::vector<int> ids;
      for (const std::string& g : spec.backend.gpus) {
        if (g.empty() || !std::all_of(g.begin(), g.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
          return Status::InvalidArgument(Where(spec) + ": backend.gpus: expected integer GPU indices for the local backend, got \"" + g + "\"");
        }
        ids.push_back(std::stoi(g));
      }
      o.gpu_ids = ids;
    }
    // A Secret reference whose variable the tuner lacks would fail every
    // trial: refused before any starts.
    if (Status st = LocalBackend::CheckSecretEnv(spec.trial.env_secrets); !st.ok()) {
      return Status::InvalidArgument(Where(spec) + ": " + st.message());
    }
    // Checked here, not when parsing: in a cluster the path is the pod's.
    std::error_code ec;
    if (!std::filesystem::is_directory(spec.trial.working_dir, ec)) {
      return Status::InvalidArgument(
          Where(spec) + ": trial.working_dir: expected an existing directory (relative paths start at the "
          "experiment file's), got \"" + spec.trial.working_dir + "\" (" +
          (std::filesystem::exists(spec.trial.working_dir, ec) ? "not a directory" : "no such directory") + ")");
    }
    // A program that is not there would fail every trial: say so now. A
    // command or PATH built from ${...} placeholders is only known per trial.
    const std::string& program = spec.trial.command.empty() ? std::string() : spec.trial.command[0];
    std::string path_env = TrialPath(spec.trial.env);
    if (!program.empty() && program.find("${") == std::string::npos &&
        path_env.find("${") == std::string::npos) {
      auto exe = ResolveExecutable(program, spec.trial.working_dir, path_env);
      if (!exe.ok()) {
        return Status::InvalidArgument(
            Where(spec) + ": trial.command[0]: expected a program on PATH or the path of an executable file " +
            "(relative paths start at trial.working_dir), got \"" + program + "\" (" + exe.status().message() + ")");
      }
    }
    auto local = std::make_unique<LocalBackend>(o);
    // A trial that can never fit is an error now, not a silent wait.
    LaunchSpec probe;
    probe.workers = spec.trial.workers;
    probe.cpu_per_worker = spec.trial.resources_per_worker.cpu;
    probe.gpu_per_worker = spec.trial.resources_per_worker.gpu;
    if (Status st = local->CheckFeasible(probe); !st.ok()) {
      return Status::InvalidArgument(Where(spec) + ": trial.resources_per_worker: " + st.message());
    }
    return std::unique_ptr<TrialBackend>(std::move(local));
  }
#ifdef TUNE_HAVE_K8S
  if (type == "kubernetes") {
    return std::unique_ptr<TrialBackend>(MakeKubernetesBackend(spec.backend.kubernetes, spec.name));
  }
#endif
  return Status::InvalidArgument(Where(spec) + ": backend.type: '" + type + "' is not available in this build");
}

}  // namespace tune
