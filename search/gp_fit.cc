#include "search/gp_fit.h"

#include <LBFGSB.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tune {
namespace {

// (concentration - 1) log x - rate x: prior.py's gamma_log_prior.
double GammaLogPrior(double x, double concentration, double rate) {
  return (concentration - 1) * std::log(x) - rate * x;
}

// Bounds on the raw parameters: wide enough never to bind at a sensible
// optimum (the prior keeps log w within about +-8), and finite for L-BFGS-B.
constexpr double kRawBound = 30.0;

}  // namespace

double GpLogPrior(const GpKernelParams& p) {
  const Eigen::ArrayXd w = p.inverse_squared_lengthscales.array();
  return -(0.1 / w + 0.1 * w).sum() + GammaLogPrior(p.kernel_scale, 2, 1) + GammaLogPrior(p.noise_var, 1.1, 30);
}

GpKernelParams GpParamsFromRaw(const Eigen::VectorXd& raw, double minimum_noise, bool deterministic) {
  const Eigen::Index d = raw.size() - 2;
  GpKernelParams p;
  p.inverse_squared_lengthscales = raw.head(d).array().exp();
  p.kernel_scale = std::exp(raw[d]);
  p.noise_var = deterministic ? minimum_noise : std::exp(raw[d + 1]) + minimum_noise;
  return p;
}

Eigen::VectorXd GpRawFromParams(const GpKernelParams& p, double minimum_noise) {
  const Eigen::Index d = p.inverse_squared_lengthscales.size();
  Eigen::VectorXd raw(d + 2);
  raw.head(d) = p.inverse_squared_lengthscales.array().log();
  raw[d] = std::log(p.kernel_scale);
  raw[d + 1] = std::log(std::max(p.noise_var - minimum_noise, 1e-300));
  return raw;
}

double GpNegLogPosterior(const GpMatrix& x, const Eigen::VectorXd& y, const std::vector<char>& is_categorical,
                         const Eigen::VectorXd& raw, double minimum_noise, bool deterministic,
                         Eigen::VectorXd* grad) {
  const Eigen::Index n = x.rows(), d = x.cols();
  const GpKernelParams p = GpParamsFromRaw(raw, minimum_noise, deterministic);
  const Eigen::VectorXd& w = p.inverse_squared_lengthscales;
  // K and dmatern/dr2 per pair.
  Eigen::MatrixXd dm;
  Eigen::MatrixXd k = Matern52Matrix(WeightedSquaredDistances(x, x, is_categorical, w), p.kernel_scale, &dm);
  Eigen::MatrixXd c = k;
  c.diagonal().array() += p.noise_var;
  Eigen::LLT<Eigen::MatrixXd> llt(c);
  if (llt.info() != Eigen::Success) return std::numeric_limits<double>::infinity();
  Eigen::MatrixXd l = llt.matrixL();
  Eigen::VectorXd alpha = llt.solve(y);
  double mll = -l.diagonal().array().log().sum() - 0.5 * y.dot(alpha);
  double loss = -mll - GpLogPrior(p);
  if (!grad) return loss;
  // d mll / d theta = 1/2 sum_ik W_ik dC_ik/dtheta, W = alpha alpha^T - C^-1.
  Eigen::MatrixXd wmat = alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(n, n));
  Eigen::MatrixXd g = wmat.cwiseProduct(dm);
  grad->resize(d + 2);
  const Eigen::VectorXd g_rows = g.rowwise().sum();
  const double g_total = g_rows.sum();
  for (Eigen::Index j = 0; j < d; ++j) {
    // s = sum_ik G_ik sqd_j(x_i, x_k), G symmetric.
    double s = 0;
    if (is_categorical[j]) {
      double same = 0;
      for (Eigen::Index i = 0; i < n; ++i) {
        for (Eigen::Index m = 0; m < n; ++m) same += x(i, j) == x(m, j) ? g(i, m) : 0.0;
      }
      s = g_total - same;
    } else {
      Eigen::VectorXd xj = x.col(j);
      s = 2.0 * xj.array().square().matrix().dot(g_rows) - 2.0 * xj.dot(g * xj);
    }
    // dC/dlog w_j = w_j * dm * sqd_j; prior: d/dlog w of -(0.1/w + 0.1 w).
    (*grad)[j] = -(0.5 * w[j] * s) - (0.1 / w[j] - 0.1 * w[j]);
  }
  (*grad)[d] = -(0.5 * wmat.cwiseProduct(k).sum()) - (1.0 - p.kernel_scale);
  if (deterministic) {
    (*grad)[d + 1] = 0;
  } else {
    double e = p.noise_var - minimum_noise;  // dnoise/draw
    (*grad)[d + 1] = -(0.5 * wmat.trace() * e) - (0.1 / p.noise_var - 30.0) * e;
  }
  return loss;
}

namespace {

// The loss as LBFGSpp wants it, remembering the best point evaluated.
struct Loss {
  const GpMatrix& x;
  const Eigen::VectorXd& y;
  const std::vector<char>& is_categorical;
  double minimum_noise;
  bool deterministic;
  double best = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_raw;

  double operator()(const Eigen::VectorXd& raw, Eigen::VectorXd& grad) {
    double f = GpNegLogPosterior(x, y, is_categorical, raw, minimum_noise, deterministic, &grad);
    if (!std::isfinite(f)) {
      grad.setZero();
      return std::numeric_limits<double>::max();
    }
    if (f < best) best = f, best_raw = raw;
    return f;
  }
};

}  // namespace

GpRegressor FitGpRegressor(const GpMatrix& x, const Eigen::VectorXd& y, const std::vector<char>& is_categorical,
                           double minimum_noise, bool deterministic, double gtol,
                           const GpKernelParams* init) {
  const Eigen::Index d = x.cols();
  // Optuna's start: all ones, the noise 1 + 0.01 minimum_noise.
  Eigen::VectorXd raw = Eigen::VectorXd::Zero(d + 2);
  raw[d + 1] = std::log(1.0 - 0.99 * minimum_noise);
  if (init) raw = GpRawFromParams(*init, 0.99 * minimum_noise);
  Loss loss{x, y, is_categorical, minimum_noise, deterministic, std::numeric_limits<double>::infinity(), raw};
  LBFGSpp::LBFGSBParam<double> param;  // scipy's L-BFGS-B defaults where they differ
  param.m = 10;
  param.epsilon = gtol;  // projected gradient, infinity norm (scipy's gtol)
  param.epsilon_rel = 0;
  param.max_iterations = 15000;
  param.delta = 2.220446049250313e-09;  // scipy's ftol
  LBFGSpp::LBFGSBSolver<double> solver(param);
  Eigen::VectorXd lb = Eigen::VectorXd::Constant(d + 2, -kRawBound);
  Eigen::VectorXd ub = Eigen::VectorXd::Constant(d + 2, kRawBound);
  double fx = 0;
  Eigen::VectorXd start = raw;
  try {
    solver.minimize(loss, raw, fx, lb, ub);
  } catch (const std::exception&) {
    // A failed line search: keep the best point seen (below).
  }
  Eigen::VectorXd chosen = std::isfinite(loss.best) ? loss.best_raw : start;
  GpRegressor gpr(x, y, is_categorical, GpParamsFromRaw(chosen, minimum_noise, deterministic));
  if (gpr.Cache()) return gpr;
  GpRegressor fallback(x, y, is_categorical, GpParamsFromRaw(start, minimum_noise, deterministic));
  fallback.Cache();
  return fallback;
}

}  // namespace tune
