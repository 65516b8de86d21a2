// PED-ANOVA hyperparameter importance (Watanabe, Bansal and Hutter, IJCAI
// 2023): how much each parameter sets the best trials apart from the rest.
//
// For each parameter, a one-dimensional Parzen estimator with Scott's-rule
// bandwidths is fitted on a grid to the values of the top `target_quantile`
// of the completed trials, and another to all of them; the importance is
// the Pearson divergence between the two, sum_g p_all(g) (p_top(g) /
// p_all(g) - 1)^2. Scores are normalised to sum to 1. This is what
// Optuna 5's `optuna.importance.get_param_importances(study)` computes by
// default (PedAnovaImportanceEvaluator with target_quantile 0.1,
// region_quantile 1.0, evaluate_on_local true, a 50-point grid, prior
// weight 1), to within floating-point rounding; tests compare against
// values Optuna computed.
//
// Grids: float parameters take 50 evenly spaced points (in log space for
// log ones; quantised ones at most one point per step); int parameters one
// point per value up to 50 (log ints ceil(log2(range)) + 1 points);
// choices one point per value. A log float with a step (qloguniform, which
// Optuna has no counterpart for) is gridded as a log float. A parameter
// with a single possible value scores 0.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/trial.h"
#include "search/search_space.h"

namespace tune {

struct PedAnovaOptions {
  double target_quantile = 0.1;  // the "best" trials: this fraction (ties kept)
  int n_steps = 50;              // grid points for continuous parameters
  double prior_weight = 1.0;
};

struct ParamImportance {
  std::string name;
  double importance = 0;  // in [0, 1]; the scores of one call sum to 1
};

struct PedAnovaResult {
  std::vector<ParamImportance> importances;  // every parameter, most important first
  int trials = 0;      // completed trials with a finite value
  int top_trials = 0;  // of those, the best target_quantile (ties kept)
};

// The importance of every parameter of `space`, most important first (ties
// by name). Of `trials`, the completed ones with a finite value count
// (others are skipped); `maximize` says which values are best. Every trial's params
// must hold values of `space`. When the scores are all 0 (for instance all
// top trials spread as all trials do), each parameter gets 1/n, as Optuna
// does. FailedPrecondition with fewer than 2 usable trials;
// InvalidArgument for options outside (0, 1), n_steps < 2 or a negative
// prior weight.
Result<PedAnovaResult> PedAnovaImportances(const SearchSpace& space, const History& trials, bool maximize,
                                           const PedAnovaOptions& options = {});

}  // namespace tune
