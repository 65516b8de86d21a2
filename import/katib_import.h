// `tune import katib`: a Katib Experiment (kubeflow.org/v1beta1, YAML) as
// an experiment.json (docs/experiment.md).
//
// An importer produces an experiment spec and nothing else: it reads text
// and returns text, touching no file, cluster or database. The mapping
// (docs/kubernetes.md, "Coming from Katib"):
//   parameters      double/int min/max[/step] -> uniform, quniform, randint
//                   (high = max + 1: ours is high-exclusive), qrandint;
//                   distribution logUniform -> loguniform, qloguniform,
//                   lograndint; discrete/categorical list -> choice;
//                   normal/logNormal -> an error naming the parameter
//   objective       type -> mode, objectiveMetricName -> metric, goal,
//                   metricStrategies of the objective -> scope (Katib's
//                   default, min/max by type, is scope "best")
//   algorithm       random, tpe, multivariate-tpe (tpe + multivariate),
//                   grid; random_state -> seed, n_startup_trials,
//                   n_ei_candidates; pbt -> random search with scheduler
//                   pbt (n_population -> max_trials, truncation_threshold
//                   -> quantile_fraction, resample_probability; warnings
//                   where Katib's generational PBT differs); any other
//                   algorithm is an error naming what tune offers instead
//   earlyStopping   medianstop -> scheduler median (start_step ->
//                   grace_period, min_trials_required -> min_samples_required)
//   limits          parallelTrialCount -> max_concurrent_trials,
//                   maxTrialCount -> max_trials, maxFailedTrialCount N ->
//                   max_failed_trials N + 1 (Katib fails on more than N)
//   trialTemplate   the primary container's command + args, image, env,
//                   resources; ${trialParameters.x} -> ${parameter};
//                   Job -> backend.job_kind "job", PyTorchJob ->
//                   "pytorchjob" with workers = Master + Worker replicas
// Every field that is not carried over becomes one note, so that nothing is
// dropped silently. Thread-compatible; no global state.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"

namespace tune {

// Limits on what is imported (docs/kubernetes.md, "Coming from Katib").
// Katib's own examples are 1-3 KB, 100-150 nodes, 10-12 levels deep; the
// limits only refuse files made to exhaust memory or the stack, such as an
// alias bomb ("billion laughs") or an alias inside what it names.
// The YAML text, in bytes.
constexpr size_t kKatibMaxYamlBytes = size_t{1} << 20;
// With every alias (*name) counted as a copy of the node it names: the
// nodes (scalars, lists, maps and map keys), the bytes of scalar text, and
// the nesting depth.
constexpr size_t kKatibMaxNodes = 100000;
constexpr size_t kKatibMaxTextBytes = size_t{4} << 20;
constexpr int kKatibMaxDepth = 100;

struct KatibImport {
  // The experiment.json text (2-space indent, ending in a newline). It is
  // not validated here: `tune validate` (ParseExperimentSpec) judges it.
  std::string experiment_json;
  // One sentence each, "<yaml path>: <what was not carried over and why>",
  // e.g. "spec.trialTemplate.retain: not carried over (tune deletes a
  // trial's objects when it ends)". In document order.
  std::vector<std::string> notes;
};

// Converts the Katib Experiment in `yaml_text`. `path` names the file in
// messages. Errors are InvalidArgument with one sentence naming the file,
// the line and the YAML path:
//   "exp.yaml: line 12: spec.algorithm.algorithmName: expected random, tpe,
//    multivariate-tpe or grid (...), got \"cmaes\""
//   "exp.yaml: line 3, column 5: expected valid YAML (illegal map value)"
//   "exp.yaml: line 9: spec.x[0]: expected a value, got an alias to spec.x, which holds it"
//   "exp.yaml: line 4: a.b[8]: expected at most 100000 nodes with aliases expanded, got more"
// Text longer than kKatibMaxYamlBytes is refused before it is parsed.
Result<KatibImport> ImportKatibExperiment(const std::string& yaml_text, const std::string& path);

}  // namespace tune
