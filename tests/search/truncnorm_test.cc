#include "search/truncnorm.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

namespace tune {
namespace {

double Phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

TEST_CASE("LogNdtr matches log(Phi) and the tail expansion", "[truncnorm]") {
  for (double z : {-25.0, -10.0, -3.0, -0.5, 0.0, 0.7, 4.0})
    CHECK(truncnorm::LogNdtr(z) == Approx(std::log(Phi(z))).epsilon(1e-12));
  // Right tail: log Phi(z) = log1p(-Phi(-z)) ~ -Phi(-z), below double epsilon.
  CHECK(truncnorm::LogNdtr(8.0) == Approx(-Phi(-8.0)).epsilon(1e-6));
  // Continuity across the switch to the asymptotic series at z = -30.
  double below = truncnorm::LogNdtr(-30.000001), above = truncnorm::LogNdtr(-29.999999);
  CHECK(below < above);
  // d/dz log Phi(z) = phi(z)/Phi(z) = 30.0333 at z = -30.
  CHECK(above - below == Approx(30.0333 * 2e-6).epsilon(1e-4));
  // Far tail: log Phi(z) ~ -z^2/2 - log(-z sqrt(2 pi)).
  double z = -200;
  CHECK(truncnorm::LogNdtr(z) ==
        Approx(-0.5 * z * z - std::log(-z * std::sqrt(2 * M_PI)) + std::log1p(-1 / (z * z)))
            .epsilon(1e-12));
}

TEST_CASE("LogGaussMass is the log of the interval's mass, also in the tails", "[truncnorm]") {
  CHECK(truncnorm::LogGaussMass(-1, 1) == Approx(std::log(Phi(1) - Phi(-1))).epsilon(1e-12));
  CHECK(truncnorm::LogGaussMass(0.5, 2) == Approx(std::log(Phi(2) - Phi(0.5))).epsilon(1e-12));
  CHECK(truncnorm::LogGaussMass(-3, -2) == Approx(std::log(Phi(-2) - Phi(-3))).epsilon(1e-12));
  // Symmetry and a far-tail cell that naive subtraction would return as -inf.
  CHECK(truncnorm::LogGaussMass(40, 41) == Approx(truncnorm::LogGaussMass(-41, -40)).epsilon(1e-14));
  double far = truncnorm::LogGaussMass(40, 40.5);
  CHECK(std::isfinite(far));
  CHECK(far == Approx(truncnorm::LogNdtr(-40)).epsilon(1e-3));
  CHECK(truncnorm::LogGaussMass(1, 1) == -std::numeric_limits<double>::infinity());
}

TEST_CASE("Ndtri inverts Phi", "[truncnorm]") {
  for (double p : {1e-300, 1e-20, 1e-5, 0.01, 0.02425, 0.3, 0.5, 0.8, 0.99, 1 - 1e-10}) {
    double z = truncnorm::Ndtri(p);
    CHECK(Phi(z) == Approx(p).epsilon(1e-12));
  }
  CHECK(truncnorm::Ndtri(0.5) == Approx(0).margin(1e-15));
}

TEST_CASE("Ppf is the truncated quantile and stays inside [a, b]", "[truncnorm]") {
  struct Case { double a, b; };
  for (Case c : {Case{-1, 1}, Case{-0.2, 3}, Case{0.5, 2}, Case{-50, -49}, Case{-3, 100},
                 Case{-100, 0}, Case{20, 21}}) {
    double prev = -INFINITY;
    for (double q : {1e-9, 0.1, 0.5, 0.9, 1 - 1e-9}) {
      double z = truncnorm::Ppf(q, c.a, c.b);
      CHECK(z >= c.a);
      CHECK(z <= c.b);
      CHECK(z >= prev);  // monotone in q
      prev = z;
      // The mass left of z is q of the interval's mass.
      double got = std::exp(truncnorm::LogGaussMass(c.a, z) - truncnorm::LogGaussMass(c.a, c.b));
      if (z > c.a) CHECK(got == Approx(q).epsilon(1e-6).margin(1e-12));
    }
  }
}

TEST_CASE("LogPdf integrates to one over [a, b]", "[truncnorm]") {
  const double a = -0.5, b = 2.0;
  const int n = 20000;
  double sum = 0, h = (b - a) / n;
  for (int i = 0; i < n; ++i) sum += std::exp(truncnorm::LogPdf(a + (i + 0.5) * h, a, b)) * h;
  CHECK(sum == Approx(1.0).epsilon(1e-6));
  CHECK(truncnorm::LogPdf(b + 0.1, a, b) == -std::numeric_limits<double>::infinity());
}

TEST_CASE("LogGaussMassBatch agrees with LogGaussMass", "[truncnorm]") {
  // Kernel-like intervals a <= 0 <= b over the ranges TPE uses, plus a few
  // the vectorised path hands to the scalar one.
  std::vector<double> a, b;
  for (double x = 0; x <= 40; x += 0.0137) {
    a.push_back(-x);
    b.push_back(std::fmod(7.3 * x, 13.0));
    a.push_back(-std::fmod(3.1 * x, 11.0));
    b.push_back(x);
  }
  a.insert(a.end(), {0.5, -3.0, -1.0, 2.0});
  b.insert(b.end(), {1.5, -2.0, -1.0, 2.0});
  std::vector<double> got(a.size());
  truncnorm::LogGaussMassBatch(a.data(), b.data(), static_cast<int>(a.size()), got.data());
  for (size_t i = 0; i < a.size(); ++i) {
    const double want = truncnorm::LogGaussMass(a[i], b[i]);
    if (std::isinf(want)) {
      CHECK(got[i] == want);
    } else {
      INFO("a=" << a[i] << " b=" << b[i]);
      CHECK(std::abs(got[i] - want) <= 4e-16 + 4e-15 * std::abs(want));
    }
  }
}

}  // namespace
}  // namespace tune
