// MAP fitting of the kernel parameters (search/gp_fit.h): the prior against
// hand-computed values, the loss and its gradient against a dense reference
// formula and finite differences, C^-1 from the Cholesky factor
// (search/gp_cholesky.h) against a direct solve, and a fit that improves the
// log posterior.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "search/gp_cholesky.h"
#include "search/gp_fit.h"

namespace tune {
namespace {

struct Data {
  GpMatrix x;
  Eigen::VectorXd y;
  std::vector<char> cats;
};

// A smooth function of a long and a short lengthscale plus a choice, with a
// little noise, standardised.
Data MakeData(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, 0.01);
  Data d{GpMatrix(n, 3), Eigen::VectorXd(n), {0, 0, 1}};
  for (int i = 0; i < n; ++i) {
    d.x(i, 0) = u(rng), d.x(i, 1) = u(rng), d.x(i, 2) = std::floor(2 * u(rng));
    d.y[i] = std::sin(6 * d.x(i, 0)) + 0.2 * d.x(i, 1) + 0.5 * d.x(i, 2) + noise(rng);
  }
  d.y = (d.y.array() - d.y.mean()) / std::sqrt((d.y.array() - d.y.mean()).square().mean());
  return d;
}

// The loss and gradient written out densely, as the fit first computed them:
// the full kernel matrix, W = alpha alpha^T - C^-1 by a direct solve, and
// sum_ik W_ik dC_ik/dtheta per parameter over all n^2 entries.
double ReferenceLoss(const Data& d, const Eigen::VectorXd& raw, bool deterministic, Eigen::VectorXd* grad) {
  const Eigen::Index n = d.x.rows(), dims = d.x.cols();
  const GpKernelParams p = GpParamsFromRaw(raw, kGpMinimumNoise, deterministic);
  Eigen::MatrixXd k(n, n), dk(n, n);
  std::vector<Eigen::MatrixXd> sqd(dims, Eigen::MatrixXd(n, n));
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index m = 0; m < n; ++m) {
      double r2 = 0;
      for (Eigen::Index j = 0; j < dims; ++j) {
        sqd[j](i, m) = SquaredDiff(d.x(i, j), d.x(m, j), d.cats[j]);
        r2 += p.inverse_squared_lengthscales[j] * sqd[j](i, m);
      }
      k(i, m) = p.kernel_scale * Matern52(r2);
      dk(i, m) = p.kernel_scale * Matern52Deriv(r2);
    }
  }
  Eigen::MatrixXd c = k + p.noise_var * Eigen::MatrixXd::Identity(n, n);
  Eigen::LLT<Eigen::MatrixXd> llt(c);
  Eigen::VectorXd alpha = llt.solve(d.y);
  Eigen::MatrixXd l = llt.matrixL();
  double loss = l.diagonal().array().log().sum() + 0.5 * d.y.dot(alpha) - GpLogPrior(p);
  Eigen::MatrixXd w = alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(n, n));
  grad->resize(dims + 2);
  for (Eigen::Index j = 0; j < dims; ++j) {
    double wj = p.inverse_squared_lengthscales[j];
    (*grad)[j] = -0.5 * wj * w.cwiseProduct(dk.cwiseProduct(sqd[j])).sum() - (0.1 / wj - 0.1 * wj);
  }
  (*grad)[dims] = -0.5 * w.cwiseProduct(k).sum() - (1.0 - p.kernel_scale);
  double e = p.noise_var - kGpMinimumNoise;
  (*grad)[dims + 1] = deterministic ? 0.0 : -0.5 * w.trace() * e - (0.1 / p.noise_var - 30.0) * e;
  return loss;
}

TEST_CASE("C^-1 from the Cholesky factor equals a direct solve, leaving the upper triangle", "[gp]") {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0, 1);
  for (int n : {1, 2, 7, 16, 17, 40, 97}) {
    Eigen::MatrixXd a(n, n);
    for (int i = 0; i < n * n; ++i) a.data()[i] = z(rng);
    Eigen::MatrixXd c = a * a.transpose() + 0.1 * Eigen::MatrixXd::Identity(n, n);
    Eigen::LLT<Eigen::MatrixXd> llt(c);
    Eigen::MatrixXd expected = llt.solve(Eigen::MatrixXd::Identity(n, n));
    Eigen::MatrixXd m = llt.matrixL();
    m.triangularView<Eigen::StrictlyUpper>().setConstant(7.0);
    CholeskyInverseInPlace(m);
    INFO("n = " << n);
    Eigen::MatrixXd got = m.selfadjointView<Eigen::Lower>();
    CHECK((got - expected).norm() <= 1e-9 * expected.norm());
    if (n > 1) CHECK((m.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().array() == 7.0).count() ==
                     n * (n - 1) / 2);
  }
}

TEST_CASE("the loss and gradient over cached pair distances equal the dense formula", "[gp]") {
  // Two continuous and two choice coordinates; n spans the recursion's leaf size.
  for (int n : {2, 15, 61}) {
    std::mt19937_64 rng(n);
    std::uniform_real_distribution<double> u(0, 1);
    Data d{GpMatrix(n, 4), Eigen::VectorXd(n), {0, 1, 0, 1}};
    for (int i = 0; i < n; ++i) {
      d.x(i, 0) = u(rng), d.x(i, 1) = std::floor(3 * u(rng)), d.x(i, 2) = u(rng), d.x(i, 3) = std::floor(2 * u(rng));
      d.y[i] = std::sin(5 * d.x(i, 0)) + d.x(i, 1) * d.x(i, 2) + 0.1 * u(rng);
    }
    for (bool deterministic : {false, true}) {
      GpMapLoss loss(d.x, d.y, d.cats, kGpMinimumNoise, deterministic);
      for (int trial = 0; trial < 3; ++trial) {
        Eigen::VectorXd raw(6);
        for (int j = 0; j < 6; ++j) raw[j] = 2 * u(rng) - 1;
        raw[5] -= 4;  // noise about 1e-2
        Eigen::VectorXd grad, expected_grad;
        double f = loss(raw, &grad), expected = ReferenceLoss(d, raw, deterministic, &expected_grad);
        INFO("n = " << n << (deterministic ? " (deterministic)" : "") << ", raw = " << raw.transpose());
        CHECK(f == Approx(expected).epsilon(1e-11).margin(1e-11));
        CHECK(loss(raw, nullptr) == f);
        for (int j = 0; j < 6; ++j) CHECK(grad[j] == Approx(expected_grad[j]).epsilon(1e-9).margin(1e-9));
        CHECK(GpNegLogPosterior(d.x, d.y, d.cats, raw, kGpMinimumNoise, deterministic, nullptr) == f);
      }
    }
  }
}

TEST_CASE("the prior is Optuna's default_log_prior", "[gp]") {
  GpKernelParams p;
  p.inverse_squared_lengthscales = Eigen::Vector2d(2.0, 0.5);
  p.kernel_scale = 1.5;
  p.noise_var = 0.01;
  // -(0.05 + 0.2) - (0.2 + 0.05) + log 1.5 - 1.5 + 0.1 log 0.01 - 0.3
  double expected = -0.5 + std::log(1.5) - 1.5 + 0.1 * std::log(0.01) - 0.3;
  CHECK(GpLogPrior(p) == Approx(expected).epsilon(1e-14));
}

TEST_CASE("the loss gradient matches finite differences", "[gp]") {
  Data d = MakeData(15, 1);
  for (bool deterministic : {false, true}) {
    Eigen::VectorXd raw(5);
    raw << 0.3, -1.0, 0.5, 0.2, -3.0;
    Eigen::VectorXd grad;
    double f = GpNegLogPosterior(d.x, d.y, d.cats, raw, kGpMinimumNoise, deterministic, &grad);
    REQUIRE(std::isfinite(f));
    for (int j = 0; j < 5; ++j) {
      const double h = 1e-6;
      Eigen::VectorXd rp = raw, rm = raw;
      rp[j] += h, rm[j] -= h;
      double fd = (GpNegLogPosterior(d.x, d.y, d.cats, rp, kGpMinimumNoise, deterministic, nullptr) -
                   GpNegLogPosterior(d.x, d.y, d.cats, rm, kGpMinimumNoise, deterministic, nullptr)) /
                  (2 * h);
      INFO("parameter " << j << (deterministic ? " (deterministic)" : ""));
      // With the noise at 1e-6, C is ill-conditioned: a looser match.
      CHECK(grad[j] == Approx(fd).margin(1e-5).epsilon(deterministic ? 1e-4 : 1e-5));
    }
    if (deterministic) CHECK(grad[4] == 0.0);
  }
}

TEST_CASE("MAP fitting improves the log posterior and finds the relevant lengthscales", "[gp]") {
  Data d = MakeData(30, 2);
  Eigen::VectorXd start = Eigen::VectorXd::Zero(5);
  start[4] = std::log(1.0 - 0.99 * kGpMinimumNoise);
  double before = GpNegLogPosterior(d.x, d.y, d.cats, start, kGpMinimumNoise, false, nullptr);
  GpRegressor gpr = FitGpRegressor(d.x, d.y, d.cats, kGpMinimumNoise, false);
  const GpKernelParams& p = gpr.params();
  double after = GpNegLogPosterior(d.x, d.y, d.cats, GpRawFromParams(p, kGpMinimumNoise), kGpMinimumNoise, false,
                                   nullptr);
  CHECK(after < before - 5);
  // A local optimum: every coordinate step of 0.05 makes it worse.
  Eigen::VectorXd raw = GpRawFromParams(p, kGpMinimumNoise);
  for (int j = 0; j < 5; ++j) {
    for (double s : {-0.05, 0.05}) {
      Eigen::VectorXd r = raw;
      r[j] += s;
      CHECK(GpNegLogPosterior(d.x, d.y, d.cats, r, kGpMinimumNoise, false, nullptr) > after - 1e-6);
    }
  }
  // x0 (sin(6 x)) varies faster than x1 (linear): a larger inverse lengthscale.
  CHECK(p.inverse_squared_lengthscales[0] > 3 * p.inverse_squared_lengthscales[1]);
  CHECK(p.noise_var < 0.05);
  // The fitted regressor is cached and interpolates its data closely.
  Eigen::VectorXd mean, var;
  gpr.Posterior(d.x, &mean, &var);
  CHECK((mean - d.y).cwiseAbs().maxCoeff() < 0.2);
}

TEST_CASE("a deterministic objective fixes the noise at its minimum", "[gp]") {
  Data d = MakeData(20, 3);
  GpRegressor gpr = FitGpRegressor(d.x, d.y, d.cats, kGpMinimumNoise, true);
  CHECK(gpr.params().noise_var == kGpMinimumNoise);
  CHECK(gpr.params().kernel_scale > 0);
}

}  // namespace
}  // namespace tune
