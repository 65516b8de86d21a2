// Log expected improvement (search/gp_acquisition.h) against its closed form,
// including the far left tail where the naive formula underflows.
#include <catch2/catch.hpp>
#include <cmath>

#include "search/gp_acquisition.h"

namespace tune {
namespace {

// log(z Phi(z) + phi(z)) in long double (the naive formula, precise while
// phi(z) does not underflow there: z > -150).
double ClosedForm(double z) {
  long double zl = z;
  long double cdf = 0.5L * std::erfc(-zl / std::sqrt(2.0L));
  long double pdf = std::exp(-0.5L * zl * zl) / std::sqrt(2.0L * 3.14159265358979323846L);
  return static_cast<double>(std::log(zl * cdf + pdf));
}

// The asymptotic series for z -> -inf: log(phi(z) / z^2 (1 - 3/z^2 + 15/z^4 - 105/z^6)).
double Asymptotic(double z) {
  double i2 = 1 / (z * z);
  return -0.5 * z * z - 0.5 * std::log(2 * M_PI) + std::log(i2) + std::log1p(-3 * i2 + 15 * i2 * i2 - 105 * i2 * i2 * i2);
}

TEST_CASE("StandardLogEI matches the closed form", "[gp]") {
  for (double z : {5.0, 2.0, 0.5, 0.0, -0.5, -3.0, -10.0, -24.9, -25.1, -30.0, -40.0, -100.0}) {
    INFO("z = " << z);
    CHECK(StandardLogEI(z) == Approx(ClosedForm(z)).epsilon(1e-10));
  }
}

TEST_CASE("StandardLogEI stays finite and exact in far tails where the naive formula underflows", "[gp]") {
  for (double z : {-40.0, -200.0, -1e3, -1e5, -1e8}) {
    INFO("z = " << z);
    double naive = std::log(0.5 * z * std::erfc(-z / std::sqrt(2.0)) + std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI));
    CHECK(!std::isfinite(naive));  // underflows to log(0) (or below 0)
    CHECK(std::isfinite(StandardLogEI(z)));
    CHECK(StandardLogEI(z) == Approx(Asymptotic(z)).epsilon(1e-12));
  }
}

TEST_CASE("the derivative of StandardLogEI matches finite differences on both sides of each branch", "[gp]") {
  for (double z : {3.0, 0.0, -5.0, -24.99, -25.01, -60.0, -99.99, -100.01, -1e3, -1e6}) {
    double h = 1e-5 * std::max(1.0, std::abs(z));
    double fd = (StandardLogEI(z + h) - StandardLogEI(z - h)) / (2 * h);
    INFO("z = " << z);
    CHECK(StandardLogEIDeriv(z) == Approx(fd).epsilon(1e-5));
  }
}

TEST_CASE("LogEI is logei of the posterior, and its gradient matches finite differences", "[gp]") {
  const std::vector<char> cats = {0, 0, 1};
  GpMatrix x(6, 3);
  x << 0.1, 0.2, 0, 0.5, 0.9, 1, 0.8, 0.1, 0, 0.3, 0.6, 2, 0.95, 0.4, 1, 0.0, 0.0, 0;
  Eigen::VectorXd y(6);
  y << -1.0, 0.3, 1.2, -0.2, 0.6, -0.9;
  GpKernelParams p;
  p.inverse_squared_lengthscales = Eigen::Vector3d(4.0, 2.0, 1.0);
  p.kernel_scale = 1.1;
  p.noise_var = 1e-3;
  GpRegressor gpr(x, y, cats, p);
  REQUIRE(gpr.Cache());
  const double f0 = 1.2;
  LogEI acqf(gpr, f0);
  GpMatrix q(3, 3);
  q << 0.7, 0.15, 0, 0.2, 0.5, 2, 0.45, 0.85, 1;
  Eigen::VectorXd mean, var, got = acqf.Evaluate(q);
  gpr.Posterior(q, &mean, &var);
  for (int i = 0; i < 3; ++i) {
    double sigma = std::sqrt(var[i] + 1e-12);
    CHECK(got[i] == Approx(ClosedForm((mean[i] - f0) / sigma) + std::log(sigma)).epsilon(1e-10));
    double grad[3];
    CHECK(acqf.EvaluateWithGrad(q.row(i).data(), grad) == Approx(got[i]).epsilon(1e-12));
    CHECK(grad[2] == 0.0);
    for (int j : {0, 1}) {
      const double h = 1e-6;
      GpMatrix qp = q.row(i), qm = q.row(i);
      qp(0, j) += h, qm(0, j) -= h;
      CHECK(grad[j] == Approx((acqf.Evaluate(qp)[0] - acqf.Evaluate(qm)[0]) / (2 * h)).epsilon(1e-5).margin(1e-6));
    }
  }
}

}  // namespace
}  // namespace tune
