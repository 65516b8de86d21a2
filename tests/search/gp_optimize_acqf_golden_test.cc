// The acquisition optimiser against Optuna 5.0.0's
// (golden/gp_acqf_golden_optuna5.json, made by
// golden/make_gp_acqf_golden.py): on the same data and kernel parameters,
// LocalSearchMixed from Optuna's starting points and OptimizeAcqf with the
// best trial as the warm start reach the log EI that Optuna's
// local_search_mixed_batched and optimize_acqf_mixed reach (on a 6-d
// continuous space, and on a space with every kind of discrete parameter).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "search/gp_optimize_acqf.h"
#include "tests/search/gp_golden_json.h"
#include "tests/search/gp_test_space.h"

namespace tune {
namespace {

nlohmann::json Golden() { return testing::GpGolden("gp_acqf_golden_optuna5.json"); }

GpMatrix Matrix(const nlohmann::json& rows) { return testing::GpMatrixFromJson(rows); }

SearchSpace UnitCube(int d) {
  SearchSpace s;
  for (int i = 0; i < d; ++i) s["x" + std::to_string(i)] = FloatDistribution{0.0, 1.0, false, std::nullopt};
  return s;
}

struct Case {
  GpSpace space;
  GpRegressor gpr;
  double threshold;
};

Case Load(const nlohmann::json& c, const SearchSpace& space) {
  GpKernelParams p;
  p.inverse_squared_lengthscales = Eigen::Map<const Eigen::VectorXd>(
      c["inverse_squared_lengthscales"].get<std::vector<double>>().data(),
      static_cast<Eigen::Index>(c["inverse_squared_lengthscales"].size()));
  p.kernel_scale = c["kernel_scale"].get<double>();
  p.noise_var = c["noise_var"].get<double>();
  std::vector<char> cats;
  for (const auto& b : c["is_categorical"]) cats.push_back(b.get<bool>());
  std::vector<double> y = c["y"].get<std::vector<double>>();
  GpRegressor gpr(Matrix(c["x"]), Eigen::Map<Eigen::VectorXd>(y.data(), static_cast<Eigen::Index>(y.size())), cats, p);
  REQUIRE(gpr.Cache());
  return {GpSpace(space), std::move(gpr), c["threshold"].get<double>()};
}

// Every discrete coordinate of `x` on its grid, every coordinate in [0, 1].
bool OnGrid(const GpSpace& space, const std::vector<double>& x) {
  for (int j = 0; j < space.dim(); ++j) {
    if (!(x[j] >= 0 && x[j] <= std::max(1.0, static_cast<double>(space.DiscreteChoices(j).size())))) return false;
  }
  for (int j : space.discrete_indices()) {
    const auto& grid = space.DiscreteChoices(j);
    if (std::find(grid.begin(), grid.end(), x[j]) == grid.end()) return false;
  }
  return true;
}

void CheckCase(const nlohmann::json& c, const SearchSpace& search_space) {
  Case k = Load(c, search_space);
  LogEI acqf(k.gpr, k.threshold);
  const int d = k.space.dim();

  // The same log EI at Optuna's maximisers.
  for (const auto& run : c["optimize"]) {
    std::vector<double> x = run["x"].get<std::vector<double>>();
    CHECK(acqf.Evaluate(Eigen::Map<GpMatrix>(x.data(), 1, d))[0] ==
          Approx(run["value"].get<double>()).margin(1e-7));
  }

  // Local searches from Optuna's starting points end at least as high.
  for (size_t i = 0; i < c["local_starts"].size(); ++i) {
    std::vector<double> x = c["local_starts"][i].get<std::vector<double>>();
    double value = LocalSearchMixed(acqf, k.space, x, 1e-4);
    INFO("start " << i << ": tune " << value << ", Optuna " << c["local_value"][i].get<double>());
    CHECK(value >= c["local_value"][i].get<double>() - 1e-3);
    CHECK(OnGrid(k.space, x));
  }

  // The whole optimiser, the best trial as the warm start (GPSampler's call).
  Eigen::Index best = 0;
  k.gpr.y().maxCoeff(&best);
  std::vector<std::vector<double>> warm{std::vector<double>(k.gpr.x().row(best).data(), k.gpr.x().row(best).data() + d)};
  double optuna_best = -INFINITY;
  for (const auto& run : c["optimize"]) optuna_best = std::max(optuna_best, run["value"].get<double>());
  for (uint64_t seed = 0; seed < 5; ++seed) {
    std::mt19937_64 rng(seed);
    double value = 0;
    std::vector<double> x = OptimizeAcqf(acqf, k.space, warm, AcqfOptimizerOptions{}, rng, &value);
    INFO("seed " << seed << ": tune " << value << ", Optuna's best " << optuna_best);
    CHECK(value >= optuna_best - 1e-3);
    CHECK(OnGrid(k.space, x));
  }
}

TEST_CASE("local search and acqf optimiser reach Optuna 5.0's log EI on a continuous space", "[gp][golden]") {
  CheckCase(Golden()["continuous"], UnitCube(6));
}

TEST_CASE("local search and acqf optimiser reach Optuna 5.0's log EI on a mixed space", "[gp][golden]") {
  CheckCase(Golden()["mixed"], testing::GpTestSpace());
}

}  // namespace
}  // namespace tune
