// MAP fitting of the kernel parameters (search/gp_fit.h): the prior against
// hand-computed values, the loss gradient against finite differences, and a
// fit that improves the log posterior.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

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
