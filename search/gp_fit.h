// Maximum a posteriori fitting of the kernel parameters (Optuna's
// optuna/_gp/gp.py, GPRegressor._fit_kernel_params and fit_kernel_params,
// with the priors of optuna/_gp/prior.py, default_log_prior).
//
// The parameters are optimised in log space ("raw" parameters, d + 2 of
// them): log w_j for each inverse squared lengthscale, log kernel_scale, and
// log(noise_var - minimum_noise). The loss is
//   -MarginalLogLikelihood - log prior,
//   log prior = -sum_j (0.1 / w_j + 0.1 w_j) + GammaLogPdf(scale; 2, 1)
//               + GammaLogPdf(noise_var; 1.1, 30)   (constants dropped),
// minimised by L-BFGS-B (LBFGSpp) from all-ones kernel parameters with the
// gradient tolerance `gtol`. With deterministic_objective the noise is fixed
// at minimum_noise.
#pragma once

#include "search/gp_regressor.h"

namespace tune {

// Optuna's DEFAULT_MINIMUM_NOISE_VAR.
constexpr double kGpMinimumNoise = 1e-6;

// Optuna's default_log_prior.
double GpLogPrior(const GpKernelParams& params);

// Kernel parameters from raw ones (see above).
GpKernelParams GpParamsFromRaw(const Eigen::VectorXd& raw, double minimum_noise, bool deterministic);
// Raw parameters of `params` (noise_var must exceed minimum_noise unless
// deterministic).
Eigen::VectorXd GpRawFromParams(const GpKernelParams& params, double minimum_noise);

// The loss of one fit, for fixed X and y, at any raw parameters. X's
// per-coordinate squared differences over all pairs of rows do not depend on
// the kernel parameters, so they are computed once here (n(n-1)/2 x d
// doubles), and the n x n buffers are reused across evaluations. The
// gradient needs every entry of C^-1 (d mll / d theta = 1/2 sum_ik W_ik
// dC_ik/dtheta, W = alpha alpha^T - C^-1, alpha = C^-1 y), computed from
// the Cholesky factor (search/gp_cholesky.h); each sum runs over the pairs
// i > k once (W and dC are symmetric), choices' Hamming terms included.
class GpMapLoss {
 public:
  GpMapLoss(const GpMatrix& x, const Eigen::VectorXd& y, const std::vector<char>& is_categorical,
            double minimum_noise, bool deterministic);

  // The loss at raw parameters `raw` and, if `grad`, its gradient (d + 2
  // values; the noise entry is 0 when deterministic). +inf if C is not
  // positive definite.
  double operator()(const Eigen::VectorXd& raw, Eigen::VectorXd* grad);

 private:
  Eigen::Index n_;
  Eigen::VectorXd y_;
  double minimum_noise_;
  bool deterministic_;
  // Row p: sqd_j(x_i, x_k) for the p-th pair i > k, pairs ordered as the
  // strictly lower triangle of an n x n column-major matrix.
  Eigen::MatrixXd pair_sqd_;
  // Per pair: weighted squared distance, sqrt(5 r2), exp(-sqrt(5 r2)), K,
  // dK/dr2, then W * dK/dr2.
  Eigen::ArrayXd r2_, s_, e_, k_, dk_, g_;
  Eigen::MatrixXd c_;  // C, then L, then C^-1 (lower triangles)
  Eigen::VectorXd alpha_;
};

// GpMapLoss(x, y, is_categorical, minimum_noise, deterministic)(raw, grad).
double GpNegLogPosterior(const GpMatrix& x, const Eigen::VectorXd& y, const std::vector<char>& is_categorical,
                         const Eigen::VectorXd& raw, double minimum_noise, bool deterministic,
                         Eigen::VectorXd* grad);

// The fitted regressor, cached (GpRegressor::Cache). Starts from `init`
// (noise_var + 0.01 minimum_noise, as Optuna warm-starts) or else from
// kernel parameters all 1 (noise_var 1 + 0.01 minimum_noise); if
// the minimiser stops early (a failed line search) the best point it
// evaluated is kept. Never fails: if no fitted C factors, the start is used.
GpRegressor FitGpRegressor(const GpMatrix& x, const Eigen::VectorXd& y, const std::vector<char>& is_categorical,
                           double minimum_noise, bool deterministic, double gtol = 1e-2,
                           const GpKernelParams* init = nullptr);

}  // namespace tune
