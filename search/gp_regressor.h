// GpRegressor: Gaussian-process regression with fixed kernel parameters
// (Optuna's optuna/_gp/gp.py, GPRegressor).
//
// Holds the training inputs X (n x d, GpSpace coordinates), the standardised
// outputs y and the kernel parameters; Cache() factors C = K(X, X) +
// noise_var I once (Cholesky), after which Posterior gives
//   mean(x) = k(x, X) C^-1 y,  var(x) = kernel_scale - k(x, X) C^-1 k(X, x)
// (clamped at 0). AppendRunning adds trials in flight with their posterior
// mean as the observation (Optuna's GPRegressor.append_running_data, the
// "kriging believer"): the mean stays, the variance there shrinks.
#pragma once

#include <vector>

#include "search/gp_kernel.h"

namespace tune {

class GpRegressor {
 public:
  GpRegressor(GpMatrix x, Eigen::VectorXd y, std::vector<char> is_categorical, GpKernelParams params);

  // Factors C; false if C is not positive definite.
  bool Cache();
  // Adds rows `x_running` with their current posterior means. After Cache().
  bool AppendRunning(const GpMatrix& x_running);

  // Posterior mean and variance at each row of `x`. After Cache().
  void Posterior(const GpMatrix& x, Eigen::VectorXd* mean, Eigen::VectorXd* var) const;
  // The same at one point, with the gradients of both with respect to its
  // coordinates (zero for choices). `dmean`, `dvar`: d values each.
  void PosteriorWithGrad(const double* x, double* mean, double* var, double* dmean, double* dvar) const;

  // log p(y | X, params) without the constant -n/2 log(2 pi) (Optuna's
  // marginal_log_likelihood); -inf if C is not positive definite.
  double MarginalLogLikelihood() const;

  const GpKernelParams& params() const { return params_; }
  const GpMatrix& x() const { return x_; }
  const Eigen::VectorXd& y() const { return y_; }
  const std::vector<char>& is_categorical() const { return is_categorical_; }

 private:
  GpMatrix x_;
  Eigen::VectorXd y_;
  std::vector<char> is_categorical_;
  GpKernelParams params_;
  Eigen::MatrixXd chol_;   // lower-triangular L, C = L L^T
  Eigen::VectorXd alpha_;  // C^-1 y
};

}  // namespace tune
