// Maximisation of the acquisition function over a GpSpace (Optuna's
// optuna/_gp/optim_mixed.py, optimize_acqf_mixed and
// local_search_mixed_batched).
//
// 1. n_preliminary_samples scrambled Sobol points (discrete coordinates
//    rounded) are evaluated; the best starts a local search, and up to
//    n_local_search - 1 - warmstarts.size() more are drawn without
//    replacement with probability proportional to exp(acqf - max), the
//    roulette of optimize_acqf_mixed; the warm starts (the best trial) are
//    added.
// 2. Each local search alternates, until nothing changes: L-BFGS-B
//    (LBFGSpp) over the continuous coordinates, preconditioned by the
//    lengthscales (x / l in [0, 1/l], projected-gradient tolerance sqrt(tol),
//    200 iterations: _gradient_ascent_batched); then each discrete
//    coordinate on its own, exhaustively for a choice or at most 16 values
//    (_exhaustive_search), else by a golden-section line search on the
//    linear interpolation between grid values (_discrete_line_search, which
//    uses Brent's method from the same bracket).
// 3. The best point found is returned.
#pragma once

#include <random>
#include <vector>

#include "search/gp_acquisition.h"
#include "search/gp_space.h"

namespace tune {

struct AcqfOptimizerOptions {
  int n_preliminary_samples = 2048;
  int n_local_search = 10;
  double tol = 1e-4;
};

// The maximiser found (space.dim() coordinates); `value` gets its acqf value.
// Draws the Sobol seed and the roulette from `rng`.
std::vector<double> OptimizeAcqf(const LogEI& acqf, const GpSpace& space,
                                 const std::vector<std::vector<double>>& warmstarts,
                                 const AcqfOptimizerOptions& options, std::mt19937_64& rng, double* value = nullptr);

// One local search from `x` (in place); returns its acqf value.
double LocalSearchMixed(const LogEI& acqf, const GpSpace& space, std::vector<double>& x, double tol);

}  // namespace tune
