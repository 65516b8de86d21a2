#include "search/gp_regressor.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tune {
namespace {

// Cholesky factor of C, or an empty matrix if C is not positive definite.
Eigen::MatrixXd Factor(const Eigen::MatrixXd& c) {
  Eigen::LLT<Eigen::MatrixXd> llt(c);
  if (llt.info() != Eigen::Success) return {};
  return llt.matrixL();
}

}  // namespace

GpRegressor::GpRegressor(GpMatrix x, Eigen::VectorXd y, std::vector<char> is_categorical,
                         GpKernelParams params)
    : x_(std::move(x)), y_(std::move(y)), is_categorical_(std::move(is_categorical)), params_(std::move(params)) {}

bool GpRegressor::Cache() {
  Eigen::MatrixXd c = KernelMatrix(x_, x_, is_categorical_, params_);
  c.diagonal().array() += params_.noise_var;
  chol_ = Factor(c);
  if (chol_.size() == 0 && x_.rows() > 0) return false;
  alpha_ = chol_.triangularView<Eigen::Lower>().solve(y_);
  chol_.triangularView<Eigen::Lower>().transpose().solveInPlace(alpha_);
  return true;
}

bool GpRegressor::AppendRunning(const GpMatrix& x_running) {
  if (x_running.rows() == 0) return true;
  Eigen::VectorXd mean, var;
  Posterior(x_running, &mean, &var);
  GpMatrix x(x_.rows() + x_running.rows(), x_.cols());
  x << x_, x_running;
  Eigen::VectorXd y(y_.size() + mean.size());
  y << y_, mean;
  x_ = std::move(x);
  y_ = std::move(y);
  // Optuna extends the factor (_extend_cholesky); refactoring gives the same.
  return Cache();
}

void GpRegressor::Posterior(const GpMatrix& x, Eigen::VectorXd* mean, Eigen::VectorXd* var) const {
  Eigen::MatrixXd kx = KernelMatrix(x, x_, is_categorical_, params_);  // m x n
  *mean = kx * alpha_;
  // Rows v = L^-1 k(X, x), solved in place as V L^T = k(x, X) (one
  // triangular solve with m right-hand sides): var = scale - |v|^2.
  if (kx.rows() == 1) {  // one point: a triangular solve with a vector
    Eigen::Map<Eigen::RowVectorXd> v(kx.data(), kx.cols());
    chol_.triangularView<Eigen::Lower>().transpose().solveInPlace<Eigen::OnTheRight>(v);
  } else {
    chol_.triangularView<Eigen::Lower>().transpose().solveInPlace<Eigen::OnTheRight>(kx);
  }
  *var = (params_.kernel_scale - kx.rowwise().squaredNorm().array()).max(0.0);
}

void GpRegressor::PosteriorWithGrad(const double* x, double* mean, double* var, double* dmean,
                                    double* dvar) const {
  const Eigen::Index n = x_.rows(), d = x_.cols();
  const Eigen::VectorXd& w = params_.inverse_squared_lengthscales;
  Eigen::VectorXd k(n), dk_dr2(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    double r2 = WeightedSquaredDistance(x, x_.row(i).data(), is_categorical_, w);
    double deriv = 0;
    k[i] = params_.kernel_scale * Matern52WithDeriv(r2, &deriv);
    dk_dr2[i] = params_.kernel_scale * deriv;
  }
  *mean = k.dot(alpha_);
  Eigen::VectorXd cinv_k = chol_.triangularView<Eigen::Lower>().solve(k);
  double raw_var = params_.kernel_scale - cinv_k.squaredNorm();
  chol_.triangularView<Eigen::Lower>().transpose().solveInPlace(cinv_k);  // C^-1 k
  *var = std::max(raw_var, 0.0);
  for (Eigen::Index j = 0; j < d; ++j) {
    dmean[j] = dvar[j] = 0;
    if (is_categorical_[j]) continue;
    // dk_i/dx_j = dk/dr2 * 2 w_j (x_j - X_ij).
    double gm = 0, gv = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
      double dki = dk_dr2[i] * 2.0 * w[j] * (x[j] - x_(i, j));
      gm += dki * alpha_[i];
      gv += dki * cinv_k[i];
    }
    dmean[j] = gm;
    dvar[j] = raw_var > 0 ? -2.0 * gv : 0.0;
  }
}

double GpRegressor::MarginalLogLikelihood() const {
  Eigen::MatrixXd c = KernelMatrix(x_, x_, is_categorical_, params_);
  c.diagonal().array() += params_.noise_var;
  Eigen::MatrixXd l = Factor(c);
  if (l.size() == 0 && x_.rows() > 0) return -std::numeric_limits<double>::infinity();
  Eigen::VectorXd u = l.triangularView<Eigen::Lower>().solve(y_);
  return -l.diagonal().array().log().sum() - 0.5 * u.squaredNorm();
}

}  // namespace tune
