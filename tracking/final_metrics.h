// FinalMetrics: what a finished trial's run carries besides its reports in
// a multi-objective or constrained experiment, the same for TensorBoard
// and MLflow (docs/experiment.md, `tracking`).
//
// A report already carries every metric it printed, at its step. A trial's
// objective values (Trial::values, scope last or best applied) and its
// constraint values (Optuna's convention: <= 0 satisfied, else by how much
// it is violated) are what the tuner ranked and filtered on; they are
// logged once more when the trial completes, at its last step:
// - each objective's value under its metric name (so the run's latest
//   value of eval_loss is the one the front used);
// - each constraint's value under "tune.constraint.<metric>" (a second
//   constraint on the same metric: "tune.constraint.<metric>.2", ...);
// - "tune.feasible": 1 when every constraint holds, else 0.
// Single-objective experiments without constraints log nothing more.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/trial.h"

namespace tune::tracking {

// The experiment's names, in list order: `objectives` only with several
// objectives (empty for one), `constraints` one per constraint.
struct FinalMetricNames {
  std::vector<std::string> objectives;
  std::vector<std::string> constraints;
  bool empty() const { return objectives.empty() && constraints.empty(); }
};

// (key, value) pairs for trial `t`, as above: none unless t completed with
// values for all of `names` (a NaN value is left out).
std::vector<std::pair<std::string, double>> FinalMetrics(const FinalMetricNames& names, const Trial& t);

}  // namespace tune::tracking
