// Parzen estimator: log densities against Optuna's _ParzenEstimator (golden
// numbers from golden/make_parzen_golden.py), and sampling properties.
#include "search/parzen_estimator.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "search/tpe_sampler.h"

namespace tune {
namespace {

Distribution FromJson(const nlohmann::json& p) {
  std::string type = p["type"];
  if (type == "categorical") {
    CategoricalDistribution c;
    const int64_t n = p["n"].get<int64_t>();
    c.choices.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) c.choices[static_cast<size_t>(i)] = i;
    return c;
  }
  if (type == "float") {
    FloatDistribution f{p["low"], p["high"], p["log"], std::nullopt};
    if (!p["step"].is_null()) f.step = p["step"].get<double>();
    return f;
  }
  IntDistribution i{p["low"], p["high"], p["log"], p["step"]};
  return i;
}

// One golden file per Optuna release whose bandwidth rule we implement.
void CheckGoldenFile(const std::string& file, ParzenRules rules) {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/tests/search/golden/" + file);
  REQUIRE(in.good());
  nlohmann::json golden = nlohmann::json::parse(in);
  REQUIRE(golden["cases"].size() >= 10);
  for (const auto& c : golden["cases"]) {
    std::vector<Distribution> dists;
    std::vector<ParzenDimension> axes;
    std::vector<std::string> names;
    for (const auto& p : c["params"]) {
      dists.push_back(FromJson(p));
      axes.push_back(ParzenDimensionOf(dists.back(), rules));
      names.push_back(p["name"]);
    }
    const size_t d = names.size();
    const size_t n = c["observations"][names[0]].size();
    const size_t m = c["points"][names[0]].size();
    std::vector<double> obs(n * d), pts(m * d);
    for (size_t j = 0; j < d; ++j) {
      for (size_t i = 0; i < n; ++i)
        obs[i * d + j] = ToParzenCoordinate(dists[j], c["observations"][names[j]][i].get<double>());
      for (size_t i = 0; i < m; ++i)
        pts[i * d + j] = ToParzenCoordinate(dists[j], c["points"][names[j]][i].get<double>());
    }
    ParzenEstimatorOptions o;
    o.consider_prior = c["options"]["consider_prior"];
    o.prior_weight = c["options"]["prior_weight"];
    o.consider_magic_clip = c["options"]["consider_magic_clip"];
    o.consider_endpoints = c["options"]["consider_endpoints"];
    o.multivariate = c["options"]["multivariate"];
    o.rules = rules;
    ParzenEstimator pe(axes, obs, DefaultWeights(static_cast<int>(n)), o);
    std::vector<double> got;
    pe.LogPdf(pts, &got);
    REQUIRE(got.size() == m);
    for (size_t i = 0; i < m; ++i) {
      INFO(file << " case " << c["name"] << " point " << i);
      CHECK(got[i] == Approx(c["log_pdf"][i].get<double>()).epsilon(1e-9).margin(1e-9));
    }
  }
}

TEST_CASE("ParzenEstimator log-density matches Optuna 3.1", "[parzen][golden]") {
  CheckGoldenFile("parzen_golden.json", ParzenRules::kOptuna3);
}

TEST_CASE("ParzenEstimator log-density matches Optuna 5 (neighbour-gap bandwidths)",
          "[parzen][golden]") {
  CheckGoldenFile("parzen_golden_optuna5.json", ParzenRules::kOptuna5);
}

TEST_CASE("DefaultWeights and DefaultGamma follow Optuna", "[parzen]") {
  CHECK(DefaultWeights(0).empty());
  CHECK(DefaultWeights(3) == std::vector<double>{1, 1, 1});
  auto w = DefaultWeights(30);  // 5-point ramp from 1/30 to 1, then 25 ones
  REQUIRE(w.size() == 30);
  CHECK(w[0] == Approx(1.0 / 30));
  CHECK(w[2] == Approx((1.0 / 30 + 1) / 2));
  CHECK(w[4] == Approx(1.0));
  CHECK(w[29] == 1.0);
  CHECK(DefaultWeights(26)[0] == Approx(1.0 / 26));
  CHECK(DefaultGamma(1) == 1);
  CHECK(DefaultGamma(10) == 1);
  CHECK(DefaultGamma(11) == 2);
  CHECK(DefaultGamma(1000) == 25);
}

TEST_CASE("ParzenEstimator samples stay in the domain and follow the density", "[parzen]") {
  std::vector<ParzenDimension> axes(3);
  axes[0] = {ParzenDimension::Kind::kContinuous, -1.0, 2.0, 0, 0};
  axes[1] = {ParzenDimension::Kind::kDiscrete, 1.0, 9.0, 2.0, 0};
  axes[2] = {ParzenDimension::Kind::kCategorical, 0, 0, 0, 3};
  std::vector<double> obs = {1.9, 9, 2, 1.8, 9, 2, 1.95, 7, 2, -0.9, 1, 0};
  for (bool multivariate : {false, true}) {
    ParzenEstimatorOptions o;
    o.multivariate = multivariate;
    ParzenEstimator pe(axes, obs, {1, 1, 1, 1}, o);
    std::mt19937_64 rng(5);
    std::vector<double> x;
    pe.Sample(rng, 4000, &x);
    int near_top = 0, choice2 = 0;
    for (size_t i = 0; i < 4000; ++i) {
      double a = x[i * 3], b = x[i * 3 + 1], c = x[i * 3 + 2];
      REQUIRE(a >= -1.0);
      REQUIRE(a <= 2.0);
      REQUIRE(b >= 1.0);
      REQUIRE(b <= 9.0);
      REQUIRE(std::fmod(b - 1.0, 2.0) == 0.0);
      REQUIRE((c == 0 || c == 1 || c == 2));
      near_top += a > 1.0;
      choice2 += c == 2;
    }
    // Three of four observations sit near 1.9 with choice 2.
    CHECK(near_top > 2000);
    CHECK(choice2 > 2000);
    // Samples are drawn where the density is high: the sample mean of log p
    // beats that of uniform points.
    std::vector<double> lp;
    pe.LogPdf(x, &lp);
    double mean_sampled = 0;
    for (double v : lp) mean_sampled += v / lp.size();
    std::vector<double> u;
    for (int i = 0; i < 1000; ++i) {
      u.push_back(-1.0 + 3.0 * (i + 0.5) / 1000);
      u.push_back(1.0 + 2.0 * (i % 5));
      u.push_back(i % 3);
    }
    pe.LogPdf(u, &lp);
    double mean_uniform = 0;
    for (double v : lp) mean_uniform += v / lp.size();
    CHECK(mean_sampled > mean_uniform + 0.5);
  }
}

TEST_CASE("log ints are discrete cells in log space under Optuna 5's rules", "[parzen]") {
  const Distribution r = IntDistribution{1, 64, true, 1};
  const ParzenDimension dim5 = ParzenDimensionOf(r, ParzenRules::kOptuna5);
  const ParzenDimension dim3 = ParzenDimensionOf(r, ParzenRules::kOptuna3);
  CHECK(dim5.kind == ParzenDimension::Kind::kDiscrete);
  CHECK(dim5.log);
  CHECK(dim3.kind == ParzenDimension::Kind::kContinuous);
  std::vector<double> obs;
  for (double v : {4.0, 8.0, 8.0, 32.0, 1.0, 2.0}) obs.push_back(ToParzenCoordinate(r, v));
  for (bool multivariate : {false, true}) {
    ParzenEstimatorOptions o;
    o.multivariate = multivariate;
    ParzenEstimator pe({dim5}, obs, DefaultWeights(static_cast<int>(obs.size())), o);
    // A probability mass function over the 64 values.
    std::vector<double> all, lp;
    for (int v = 1; v <= 64; ++v) all.push_back(ToParzenCoordinate(r, v));
    pe.LogPdf(all, &lp);
    double total = 0;
    for (double v : lp) total += std::exp(v);
    CHECK(total == Approx(1.0).epsilon(1e-12));
    // Cells are wider in log space at the small values: 1 outweighs 64.
    CHECK(lp[0] > lp[63]);
    // Samples land on the grid, as coordinates of integers.
    std::mt19937_64 rng(11);
    std::vector<double> x;
    pe.Sample(rng, 2000, &x);
    for (double c : x) {
      const double v = std::exp(c);
      REQUIRE(std::abs(v - std::round(v)) < 1e-9);
      REQUIRE(std::round(v) >= 1);
      REQUIRE(std::round(v) <= 64);
    }
  }
}

TEST_CASE("ParzenEstimator densities sum to one over a discrete domain", "[parzen]") {
  std::vector<ParzenDimension> axes(2);
  axes[0] = {ParzenDimension::Kind::kDiscrete, 0.0, 1.0, 0.25, 0};
  axes[1] = {ParzenDimension::Kind::kCategorical, 0, 0, 0, 4};
  std::vector<double> obs = {0.25, 1, 0.25, 3, 1.0, 1, 0.0, 0};
  for (bool multivariate : {false, true}) {
    ParzenEstimatorOptions o;
    o.multivariate = multivariate;
    ParzenEstimator pe(axes, obs, {1, 2, 1, 1}, o);
    std::vector<double> all;
    for (int a = 0; a <= 4; ++a)
      for (int c = 0; c < 4; ++c) {
        all.push_back(0.25 * a);
        all.push_back(c);
      }
    std::vector<double> lp;
    pe.LogPdf(all, &lp);
    double total = 0;
    for (double v : lp) total += std::exp(v);
    CHECK(total == Approx(1.0).epsilon(1e-12));
  }
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

TEST_CASE("windowed one-dimensional log-density equals the full mixture sum", "[parzen]") {
  // A second, single-choice categorical axis contributes log 1 = 0 but turns
  // the windowed fast path off: both estimators must agree.
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> u(0, 1);
  for (int n : {30, 300, 3000}) {
    std::vector<double> obs1, obs2, w = DefaultWeights(n);
    for (int i = 0; i < n; ++i) {
      // Clustered observations, as TPE produces them, plus a spread.
      double x = i % 3 == 0 ? u(rng) : 0.3 + 0.02 * u(rng);
      obs1.push_back(x);
      obs2.push_back(x);
      obs2.push_back(0);
    }
    ParzenDimension cont{ParzenDimension::Kind::kContinuous, 0.0, 1.0, 0, 0};
    ParzenDimension one{ParzenDimension::Kind::kCategorical, 0, 0, 0, 1};
    ParzenEstimatorOptions o;
    ParzenEstimator fast({cont}, obs1, w, o), full({cont, one}, obs2, w, o);
    std::vector<double> x1, x2, lp1, lp2;
    for (int i = 0; i <= 200; ++i) {
      x1.push_back(i / 200.0);
      x2.push_back(i / 200.0);
      x2.push_back(0);
    }
    fast.LogPdf(x1, &lp1);
    full.LogPdf(x2, &lp2);
    for (size_t i = 0; i < lp1.size(); ++i) {
      INFO("n " << n << " x " << x1[i]);
      CHECK(lp1[i] == Approx(lp2[i]).epsilon(1e-11));
    }
  }
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

TEST_CASE("product log-density with many kernels still sums to one over a discrete domain",
          "[parzen]") {
  // 300 kernels: several L1 chunks of the streaming log-sum-exp, and the
  // per-centre index of discrete axes, with a shared (Scott) bandwidth and
  // with Optuna 5's neighbour gaps (a few widths per grid point).
  std::vector<ParzenDimension> axes(3);
  axes[0] = {ParzenDimension::Kind::kDiscrete, 0.0, 1.0, 0.25, 0};
  axes[1] = {ParzenDimension::Kind::kCategorical, 0, 0, 0, 4};
  axes[2] = {ParzenDimension::Kind::kDiscrete, 1.0, 8.0, 1.0, 0};
  std::mt19937_64 rng(3);
  std::vector<double> obs;
  const int n = 300;
  for (int i = 0; i < n; ++i) {
    obs.push_back(0.25 * static_cast<double>(rng() % 5));
    obs.push_back(static_cast<double>(rng() % 4));
    obs.push_back(1.0 + static_cast<double>(rng() % 8));
  }
  for (int mode = 0; mode < 4; ++mode) {
    ParzenEstimatorOptions o;
    o.multivariate = mode % 2 == 1;
    o.rules = mode < 2 ? ParzenRules::kOptuna3 : ParzenRules::kOptuna5;
    ParzenEstimator pe(axes, obs, DefaultWeights(n), o);
    std::vector<double> all;
    for (int a = 0; a <= 4; ++a)
      for (int c = 0; c < 4; ++c)
        for (int v = 1; v <= 8; ++v) {
          all.push_back(0.25 * a);
          all.push_back(c);
          all.push_back(v);
        }
    std::vector<double> lp;
    pe.LogPdf(all, &lp);
    double total = 0;
    for (double v : lp) total += std::exp(v);
    CHECK(total == Approx(1.0).epsilon(1e-12));
  }
}

}  // namespace
}  // namespace tune
