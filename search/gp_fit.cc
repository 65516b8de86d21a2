#include "search/gp_fit.h"

#include <LBFGSB.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "search/gp_cholesky.h"

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

GpMapLoss::GpMapLoss(const GpMatrix& x, const Eigen::VectorXd& y, const std::vector<char>& is_categorical,
                     double minimum_noise, bool deterministic)
    : n_(x.rows()), y_(y), minimum_noise_(minimum_noise), deterministic_(deterministic) {
  const Eigen::Index d = x.cols(), pairs = n_ * (n_ - 1) / 2;
  pair_sqd_.resize(pairs, d);
  for (Eigen::Index j = 0; j < d; ++j) {
    const Eigen::ArrayXd xj = x.col(j);  // contiguous copy
    for (Eigen::Index k = 0, p = 0; k < n_; p += n_ - 1 - k, ++k) {
      auto below = xj.tail(n_ - 1 - k);
      auto out = pair_sqd_.col(j).segment(p, n_ - 1 - k).array();
      if (is_categorical[j]) {
        out = (below != xj[k]).cast<double>();
      } else {
        out = (below - xj[k]).square();
      }
    }
  }
  c_.resize(n_, n_);
}

double GpMapLoss::operator()(const Eigen::VectorXd& raw, Eigen::VectorXd* grad) {
  const Eigen::Index d = pair_sqd_.cols();
  const GpKernelParams p = GpParamsFromRaw(raw, minimum_noise_, deterministic_);
  const Eigen::VectorXd& w = p.inverse_squared_lengthscales;
  const double scale = p.kernel_scale;
  // K on the pairs (Matern52Matrix's formulas); K_ii = scale.
  r2_ = (pair_sqd_ * w).array();
  s_ = (5.0 * r2_).sqrt();
  e_ = (-s_).exp();
  k_ = scale * (e_ * ((5.0 / 3.0) * r2_ + s_ + 1.0));
  for (Eigen::Index k = 0, q = 0; k < n_; q += n_ - 1 - k, ++k) {
    c_(k, k) = scale + p.noise_var;
    c_.col(k).tail(n_ - 1 - k) = k_.segment(q, n_ - 1 - k).matrix();
  }
  Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(c_);  // c_ now holds L
  if (llt.info() != Eigen::Success) return std::numeric_limits<double>::infinity();
  alpha_ = llt.solve(y_);
  const double mll = -c_.diagonal().array().log().sum() - 0.5 * y_.dot(alpha_);
  const double loss = -mll - GpLogPrior(p);
  if (!grad) return loss;
  CholeskyInverseInPlace(c_);  // c_ now holds C^-1
  // G = W * dK/dr2 on the pairs, W = alpha alpha^T - C^-1; also sum W K.
  dk_ = ((-5.0 / 6.0) * scale) * ((s_ + 1.0) * e_);
  double wk_pairs = 0;
  g_.resize(r2_.size());
  for (Eigen::Index k = 0, q = 0; k < n_; q += n_ - 1 - k, ++k) {
    const Eigen::Index len = n_ - 1 - k;
    auto wcol = alpha_[k] * alpha_.tail(len).array() - c_.col(k).tail(len).array();
    g_.segment(q, len) = wcol * dk_.segment(q, len);
    wk_pairs += (wcol * k_.segment(q, len)).sum();
  }
  const double w_trace = (alpha_.array().square() - c_.diagonal().array()).sum();
  // sum_ik G_ik sqd_j(x_i, x_k) = 2 sum over pairs (sqd_j is 0 on the diagonal).
  const Eigen::VectorXd s = 2.0 * (pair_sqd_.transpose() * g_.matrix());
  grad->resize(d + 2);
  for (Eigen::Index j = 0; j < d; ++j) {
    // dC/dlog w_j = w_j * dK/dr2 * sqd_j; prior: d/dlog w of -(0.1/w + 0.1 w).
    (*grad)[j] = -(0.5 * w[j] * s[j]) - (0.1 / w[j] - 0.1 * w[j]);
  }
  // dC/dlog scale = K; sum_ik W_ik K_ik = 2 (pairs) + scale trace(W).
  (*grad)[d] = -(0.5 * (2.0 * wk_pairs + scale * w_trace)) - (1.0 - scale);
  if (deterministic_) {
    (*grad)[d + 1] = 0;
  } else {
    double e = p.noise_var - minimum_noise_;  // dnoise/draw
    (*grad)[d + 1] = -(0.5 * w_trace * e) - (0.1 / p.noise_var - 30.0) * e;
  }
  return loss;
}

double GpNegLogPosterior(const GpMatrix& x, const Eigen::VectorXd& y, const std::vector<char>& is_categorical,
                         const Eigen::VectorXd& raw, double minimum_noise, bool deterministic,
                         Eigen::VectorXd* grad) {
  return GpMapLoss(x, y, is_categorical, minimum_noise, deterministic)(raw, grad);
}

namespace {

// The loss as LBFGSpp wants it, remembering the best point evaluated.
struct Loss {
  GpMapLoss loss;
  double best = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_raw;

  double operator()(const Eigen::VectorXd& raw, Eigen::VectorXd& grad) {
    double f = loss(raw, &grad);
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
  Loss loss{GpMapLoss(x, y, is_categorical, minimum_noise, deterministic), std::numeric_limits<double>::infinity(),
            raw};
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
