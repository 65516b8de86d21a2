// ParzenRules: which Optuna release's Parzen estimator to follow
// (search/parzen_estimator.h), a choice of TpeSamplerOptions
// (search/tpe_options.h).
#pragma once

namespace tune {

// Where Optuna releases build the estimator differently.
enum class ParzenRules {
  // Optuna 5.0 (the default): neighbour-gap bandwidths in every mode,
  // the prior's centre not among the neighbours, log ints as discrete cells
  // in log space.
  kOptuna5,
  // Optuna 3.x: Scott's rule 0.2 n^(-1/(d+4)) of the range in multivariate
  // mode (as BOHB), the prior's centre among the neighbours, log ints as a
  // continuous density in log space (rounded after sampling).
  kOptuna3,
};

}  // namespace tune
