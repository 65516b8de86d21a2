// The GP's kernel and regressor (search/gp_kernel.h, search/gp_regressor.h):
// kernel values against hand-computed numbers, the posterior against a direct
// solve, gradients against finite differences, the marginal likelihood
// against its closed form, and trials in flight.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "search/gp_regressor.h"

namespace tune {
namespace {

GpMatrix RandomPoints(int n, int d, uint64_t seed, const std::vector<char>& cats) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  GpMatrix x(n, d);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < d; ++j) x(i, j) = cats[j] ? std::floor(3 * u(rng)) : u(rng);
  }
  return x;
}

GpKernelParams Params(std::vector<double> w, double scale, double noise) {
  GpKernelParams p;
  p.inverse_squared_lengthscales = Eigen::Map<Eigen::VectorXd>(w.data(), static_cast<Eigen::Index>(w.size()));
  p.kernel_scale = scale;
  p.noise_var = noise;
  return p;
}

TEST_CASE("Matern 5/2 matches hand-computed values and its derivative", "[gp]") {
  CHECK(Matern52(0.0) == 1.0);
  // exp(-sqrt5) (5/3 + sqrt5 + 1) and exp(-sqrt(5/4)) (5/12 + sqrt(5/4) + 1).
  CHECK(Matern52(1.0) == Approx(0.5239941088318203).epsilon(1e-14));
  CHECK(Matern52(0.25) == Approx(0.8286491424181255).epsilon(1e-14));
  CHECK(Matern52Deriv(0.0) == Approx(-5.0 / 6.0));
  for (double r2 : {1e-4, 0.1, 0.7, 2.0, 9.0}) {
    double h = 1e-6 * std::max(r2, 1e-3);
    double fd = (Matern52(r2 + h) - Matern52(r2 - h)) / (2 * h);
    CHECK(Matern52Deriv(r2) == Approx(fd).epsilon(1e-6));
  }
}

TEST_CASE("the kernel matrix equals the kernel of each pair", "[gp]") {
  const std::vector<char> cats = {0, 1, 0, 1};
  GpMatrix x1 = RandomPoints(9, 4, 4, cats), x2 = RandomPoints(13, 4, 5, cats);
  GpKernelParams p = Params({2.5, 0.3, 7.0, 1.1}, 0.9, 0.1);
  Eigen::MatrixXd k = KernelMatrix(x1, x2, cats, p);
  REQUIRE(k.rows() == 9);
  REQUIRE(k.cols() == 13);
  for (int i = 0; i < 9; ++i) {
    for (int m = 0; m < 13; ++m) {
      double r2 = WeightedSquaredDistance(x1.row(i).data(), x2.row(m).data(), cats, p.inverse_squared_lengthscales);
      CHECK(k(i, m) == Approx(0.9 * Matern52(r2)).epsilon(1e-14));
    }
  }
}

TEST_CASE("the kernel sums weighted squared differences and a Hamming term for choices", "[gp]") {
  const std::vector<char> cats = {0, 0, 1};
  GpMatrix x1(1, 3), x2(2, 3);
  x1 << 0.1, 0.2, 0;
  x2 << 0.4, 0.6, 1,  // choice differs: r2 = 2*0.09 + 0.5*0.16 + 1.5 = 1.76
      0.4, 0.6, 0;    // same choice: r2 = 0.26
  Eigen::MatrixXd k = KernelMatrix(x1, x2, cats, Params({2.0, 0.5, 1.5}, 1.7, 0.1));
  CHECK(k(0, 0) == Approx(0.603893830759644).epsilon(1e-13));
  CHECK(k(0, 1) == Approx(1.3989515586450916).epsilon(1e-13));
  // Choice indices 0 and 2 are as far apart as 0 and 1.
  GpMatrix x3(1, 3);
  x3 << 0.4, 0.6, 2;
  CHECK(KernelMatrix(x1, x3, cats, Params({2.0, 0.5, 1.5}, 1.7, 0.1))(0, 0) == Approx(k(0, 0)));
}

TEST_CASE("the posterior equals a direct solve, and its gradient finite differences", "[gp]") {
  const std::vector<char> cats = {0, 1, 0};
  GpMatrix x = RandomPoints(12, 3, 1, cats);
  Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(12, -1, 2).array().sin();
  GpKernelParams p = Params({3.0, 0.7, 0.4}, 1.3, 0.05);
  GpRegressor gpr(x, y, cats, p);
  REQUIRE(gpr.Cache());
  GpMatrix q = RandomPoints(5, 3, 2, cats);
  Eigen::MatrixXd c = KernelMatrix(x, x, cats, p);
  c.diagonal().array() += p.noise_var;
  Eigen::MatrixXd cinv = c.inverse();
  Eigen::MatrixXd kq = KernelMatrix(q, x, cats, p);
  Eigen::VectorXd mean, var;
  gpr.Posterior(q, &mean, &var);
  for (int i = 0; i < 5; ++i) {
    CHECK(mean[i] == Approx(kq.row(i).dot(cinv * y)).margin(1e-10));
    CHECK(var[i] == Approx(p.kernel_scale - kq.row(i).dot(cinv * kq.row(i).transpose())).margin(1e-10));
    Eigen::VectorXd mean1, var1;  // one point alone (a vector solve) as in the batch
    gpr.Posterior(q.row(i), &mean1, &var1);
    CHECK(mean1[0] == Approx(mean[i]).margin(1e-12));
    CHECK(var1[0] == Approx(var[i]).margin(1e-12));
    double m1 = 0, v1 = 0, dm[3], dv[3];
    gpr.PosteriorWithGrad(q.row(i).data(), &m1, &v1, dm, dv);
    CHECK(m1 == Approx(mean[i]).margin(1e-12));
    CHECK(v1 == Approx(var[i]).margin(1e-12));
    CHECK(dm[1] == 0.0);  // choices have no gradient
    for (int j : {0, 2}) {
      const double h = 1e-6;
      GpMatrix qp = q.row(i), qm = q.row(i);
      qp(0, j) += h, qm(0, j) -= h;
      Eigen::VectorXd mp, vp, mm, vm;
      gpr.Posterior(qp, &mp, &vp);
      gpr.Posterior(qm, &mm, &vm);
      CHECK(dm[j] == Approx((mp[0] - mm[0]) / (2 * h)).margin(1e-6));
      CHECK(dv[j] == Approx((vp[0] - vm[0]) / (2 * h)).margin(1e-6));
    }
  }
}

TEST_CASE("the marginal log likelihood matches its closed form", "[gp]") {
  const std::vector<char> cats = {0, 0};
  GpMatrix x = RandomPoints(8, 2, 3, cats);
  Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(8, 0, 1).array().square();
  GpKernelParams p = Params({1.5, 4.0}, 0.8, 0.02);
  Eigen::MatrixXd c = KernelMatrix(x, x, cats, p);
  c.diagonal().array() += p.noise_var;
  double expected = -0.5 * std::log(c.determinant()) - 0.5 * y.dot(c.inverse() * y);
  CHECK(GpRegressor(x, y, cats, p).MarginalLogLikelihood() == Approx(expected).epsilon(1e-10));
}

TEST_CASE("trials in flight keep the posterior mean and shrink the variance there", "[gp]") {
  const std::vector<char> cats = {0, 0};
  GpMatrix x = RandomPoints(10, 2, 4, cats);
  Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(10, -1, 1);
  GpRegressor gpr(x, y, cats, Params({2.0, 2.0}, 1.0, 1e-4));
  REQUIRE(gpr.Cache());
  GpMatrix running(2, 2);
  running << 0.31, 0.77, 0.9, 0.05;
  Eigen::VectorXd mean0, var0, mean1, var1;
  gpr.Posterior(running, &mean0, &var0);
  REQUIRE(gpr.AppendRunning(running));
  CHECK(gpr.x().rows() == 12);
  gpr.Posterior(running, &mean1, &var1);
  for (int i = 0; i < 2; ++i) {
    CHECK(mean1[i] == Approx(mean0[i]).margin(1e-6));
    CHECK(var1[i] < 0.01 * var0[i] + 1e-4);
  }
}

}  // namespace
}  // namespace tune
