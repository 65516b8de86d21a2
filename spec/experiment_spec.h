// ExperimentSpec: a validated experiment.json (docs/experiment.md).
//
// Parsed and checked once by ParseExperimentSpec; the rest of the tuner
// trusts it. Every field has the documented default when absent.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/kubernetes_options.h"
#include "search/search_space.h"
#include "trial_runner/secret_key_ref.h"

namespace tune {

enum class Mode { kMin, kMax };
enum class Scope { kLast, kBest };

struct ObjectiveSpec {
  std::string metric = "loss";
  Mode mode = Mode::kMin;
  std::optional<double> goal;
  Scope scope = Scope::kLast;
  // Multi-objective: this objective's coordinate of the hypervolume's
  // reference point; unset: the worst feasible value seen.
  std::optional<double> ref;
};

// An entry of `constraints` (Optuna's constraints_func): a completed trial
// whose metric lies outside [min, max] is infeasible.
struct ConstraintSpec {
  std::string metric;
  std::optional<double> min, max;  // at least one is set
};

// Optuna's TPESampler names and defaults.
struct TpeOptions {
  int n_startup_trials = 10;
  int n_ei_candidates = 24;
  // Ours: candidates when every parameter is numerical (no choice); 0 means
  // n_ei_candidates (TpeSamplerOptions::n_ei_candidates_numerical).
  int n_ei_candidates_numerical = 128;
  std::optional<double> gamma;  // fixed fraction; default Optuna's min(ceil(0.1 n), 25)
  double prior_weight = 1.0;
  bool multivariate = true;    // as Optuna 5.0 (bench/RESULTS.md: TPE out of the box)
  // Ours: with multivariate, choices get models of their own
  // (TpeSamplerOptions::independent_choices).
  bool independent_choices = true;
  bool constant_liar = true;   // on by default: trials run in parallel
  bool consider_endpoints = false;
  bool consider_magic_clip = true;
  bool consider_prior = true;
  // Which Optuna release's Parzen estimator: "optuna5" (neighbour-gap
  // bandwidths in every mode, log ints as discrete cells) or "optuna3"
  // (Scott's rule in multivariate mode, log ints continuous).
  std::string parzen_rules = "optuna5";
};

// Optuna's GPSampler names and defaults (search/gp_options.h).
struct GpOptions {
  int n_startup_trials = 10;
  bool deterministic_objective = false;
};

// Optuna's NSGAIISampler names and defaults (search/nsga2_options.h).
struct Nsga2Options {
  int population_size = 50;
  std::optional<double> mutation_prob;  // unset: 1 / number of parameters
  double crossover_prob = 0.9;
  double swapping_prob = 0.5;
};

struct SearchOptions {
  std::string algorithm = "random";  // random | tpe | gp | nsga2 | grid | auto
  uint64_t seed = 0;                 // 0 if absent: a seed is drawn and stored
  bool seed_given = false;
  TpeOptions tpe;
  GpOptions gp;
  Nsga2Options nsga2;
  // Configurations to try first, in order (Ray's points_to_evaluate,
  // Optuna's enqueue_trial): trial i < size() takes point i's values; the
  // parameters a point leaves out are sampled (or come from the grid) as
  // for any trial. Each value lies in its parameter's domain.
  std::vector<ParamMap> points_to_evaluate;
};

struct SchedulerSpec {
  std::string type = "fifo";  // fifo | asha | median | pbt
  std::string time_attr = "step";
  // The objective early stopping ranks on (asha, median, pbt): required
  // when there are several objectives, else the objective's metric.
  std::string metric;
  // pbt (Ray's PopulationBasedTraining defaults, but perturbation_interval
  // counts time_attr steps); max_t is shared with asha, required for pbt.
  int64_t perturbation_interval = 20;
  int64_t burn_in_period = 0;
  double quantile_fraction = 0.25;
  double resample_probability = 0.25;
  std::vector<double> perturbation_factors = {1.2, 0.8};
  // The parameters explore changes, each with the distribution it is
  // resampled from and clamped into: every parameter with its own when
  // the key is absent (hyperparam_mutations_given false).
  SearchSpace hyperparam_mutations;
  bool hyperparam_mutations_given = false;
  bool synch = false;
  // asha (Ray's AsyncHyperBandScheduler defaults)
  int64_t max_t = 100;
  int64_t grace_period = 1;
  double reduction_factor = 4;
  int brackets = 1;
  // median (Ray's MedianStoppingRule defaults). grace_period is shared with
  // asha; the parser sets it to Ray's 60 time units when type is median and
  // the key is absent.
  int min_samples_required = 3;
  bool hard_stop = true;
  // replay (what `tune replay` writes): (step, parameters) changes in
  // increasing order of step; max_t is the step budget, as for asha.
  std::vector<std::pair<int64_t, ParamMap>> replay_schedule;
};

struct LimitsSpec {
  int max_trials = 10;
  int max_concurrent_trials = 1;
  int max_failed_trials = 0;       // 0: no limit
  double time_budget_s = 0;        // 0: no limit
};

struct ResourcesSpec {
  double cpu = 1;
  int gpu = 0;
  std::string memory;  // Kubernetes quantity, e.g. "4Gi"; empty: none
};

struct TrialTemplate {
  std::vector<std::string> command;  // argv, with ${...} placeholders
  int workers = 1;
  ResourcesSpec resources_per_worker;
  std::map<std::string, std::string> env;
  // trial.env values written {"secret": NAME, "key": KEY}: a Kubernetes
  // Secret's key (SecretKeyRef); no name is also in `env`.
  std::map<std::string, SecretKeyRef> env_secrets;
  int max_retries = 0;
  // A retry, a resumed experiment or a paused trial continues from the
  // newest checkpoint-<step> folder in the trial directory
  // (TUNE_RESUME_FROM, ${resume_from}); false starts it from scratch.
  bool resume_from_checkpoint = true;
  double timeout_s = 0;      // 0: no timeout
  // Seconds a trial's processes get between SIGTERM (pruned, stopped,
  // paused, timed out) and SIGKILL (TunerOptions::kill_grace); on
  // Kubernetes also the pods' terminationGracePeriodSeconds.
  double stop_grace_s = 5;
  // The local backend's working directory: trial.working_dir resolved
  // against the directory of experiment.json, which is also the default.
  std::string working_dir;
  // trial.working_dir as written; empty when the key is absent. Only a
  // given one becomes a Kubernetes pod's workingDir (an absolute path in
  // the container); without it the pod starts in the image's WORKDIR.
  std::string working_dir_written;
};

struct BackendSpec {
  std::string type = "local";  // local | kubernetes
  // What runs a trial on Kubernetes: "job" (a batch/v1 Indexed Job),
  // "pytorchjob" (kubeflow.org/v1) or "trainjob" (trainer.kubeflow.org/
  // v1alpha1); also in kubernetes.job_kind, which the backend reads.
  std::string job_kind = "job";
  double total_cpus = 0;       // local: CPU slots to use; 0 = all cores
  std::vector<std::string> gpus;  // local: GPU ids; empty = detect
  KubernetesOptions kubernetes;
};

// Outside trackers fed with every trial (docs/experiment.md, `tracking`).
struct TrackingSpec {
  // TensorBoard event files: unset = off; "" = in each trial's directory;
  // else <dir>/<experiment>/trial_NNNN (dir relative to the current directory).
  std::optional<std::string> tensorboard_dir;
  // MLflow tracking server (tracking/mlflow_sink.h): unset = off.
  struct Mlflow {
    // http(s)://host[:port][/prefix]; empty: MLFLOW_TRACKING_URI at run time.
    std::string tracking_uri;
    // The MLflow experiment; empty: the tune experiment's name.
    std::string experiment_name;
    // Set on the parent run (the tuning experiment).
    std::map<std::string, std::string> tags;
  };
  std::optional<Mlflow> mlflow;
};

struct ExperimentSpec {
  std::string name;
  std::string source_path;  // the experiment.json it came from
  std::string base_dir;     // directory of source_path (relative paths)
  std::string json;         // the original text, stored in the database
  // The objective that early stopping ranks on and Trial::value holds: the
  // only one, or in a multi-objective experiment scheduler.metric's (else
  // the first of the list).
  ObjectiveSpec objective;
  // Every objective in the order written: one for the object form, 2 to 4
  // for the list form (a multi-objective experiment; IsMultiObjective).
  std::vector<ObjectiveSpec> objectives;
  std::vector<ConstraintSpec> constraints;
  SearchSpace parameters;
  SearchOptions search;
  SchedulerSpec scheduler;
  LimitsSpec limits;
  TrialTemplate trial;
  BackendSpec backend;
  TrackingSpec tracking;
  std::string storage_path;  // empty: ./tune.db
  std::string storage_url;   // storage.url: a postgresql:// database instead
};

// True when `objective` is a list of 2 to 4 (Trial::values is then filled).
inline bool IsMultiObjective(const ExperimentSpec& spec) { return spec.objectives.size() > 1; }
// Trial::values and Trial::constraints are filled (a list of objectives, or
// constraints).
inline bool HasTrialValues(const ExperimentSpec& spec) {
  return IsMultiObjective(spec) || !spec.constraints.empty();
}
// The constraint value of `metric`'s `value` under `c`, in Optuna's
// convention: <= 0 satisfied, above 0 by how much it is violated; NaN stays
// NaN (violated).
double ConstraintValue(const ConstraintSpec& c, double value);

// Parses and validates experiment.json text. `path` is used in messages and
// to resolve relative paths. Errors are InvalidArgument with one sentence:
//   "experiment.json: parameters.lr.low: expected a number below high (0.01), got 0.5"
Result<ExperimentSpec> ParseExperimentSpec(const std::string& text, const std::string& path);
// Reads the file, then ParseExperimentSpec. A missing file is InvalidArgument
// naming the path.
Result<ExperimentSpec> LoadExperimentSpec(const std::string& path);
// Applies `tune run --backend TYPE` to a parsed spec and checks what that
// backend needs (e.g. backend.image for kubernetes), with the same
// one-sentence InvalidArgument errors. On error *spec is unchanged.
Status OverrideBackend(ExperimentSpec* spec, const std::string& type);
// `tune run --resume`: checks that `spec` may continue the experiment whose
// experiment.json was stored as `stored_json` (in database `db_path`, named
// in messages). Its parameters, objective, search and scheduler must equal
// the stored ones as JSON values (layout and key order do not matter), or
// the trials so far would not belong to the experiment being resumed;
// limits, trial, backend and storage may change (more trials, another
// machine's paths). Returns the top-level keys that changed, or
// FailedPrecondition naming the first differing key path, both values and
// the way out (another name).
Result<std::vector<std::string>> CheckResumable(const ExperimentSpec& spec, const std::string& stored_json,
                                                const std::string& db_path);

}  // namespace tune
