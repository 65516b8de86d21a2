// The GP against Optuna 5.0.0's own numbers (golden/gp_golden_optuna5.json,
// made by golden/make_gp_golden.py): kernel matrices, posterior, marginal
// likelihood, prior and log EI for fixed kernel parameters; the MAP fit on
// fixed data; standard_logei; the coordinates of a mixed space.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "search/gp_acquisition.h"
#include "search/gp_fit.h"
#include "search/gp_space.h"
#include "tests/search/gp_golden_json.h"
#include "tests/search/gp_test_space.h"

namespace tune {
namespace {

nlohmann::json Golden() { return testing::GpGolden("gp_golden_optuna5.json"); }

GpMatrix Matrix(const nlohmann::json& rows) { return testing::GpMatrixFromJson(rows); }

Eigen::VectorXd Vector(const nlohmann::json& v) {
  Eigen::VectorXd out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i].get<double>();
  return out;
}

std::vector<char> Cats(const nlohmann::json& v) {
  std::vector<char> out;
  for (const auto& b : v) out.push_back(b.get<bool>());
  return out;
}

TEST_CASE("kernel, posterior, likelihood, prior and logEI match Optuna 5.0", "[gp][golden]") {
  const nlohmann::json c = Golden()["fixed"];
  GpMatrix x = Matrix(c["x"]), q = Matrix(c["query"]);
  Eigen::VectorXd y = Vector(c["y"]);
  std::vector<char> cats = Cats(c["is_categorical"]);
  GpKernelParams p{Vector(c["inverse_squared_lengthscales"]), c["kernel_scale"], c["noise_var"]};
  Eigen::MatrixXd k = KernelMatrix(x, x, cats, p), kq = KernelMatrix(q, x, cats, p);
  for (int i = 0; i < k.rows(); ++i) {
    for (int m = 0; m < k.cols(); ++m) CHECK(k(i, m) == Approx(c["kernel_train"][i][m].get<double>()).epsilon(1e-12));
  }
  for (int i = 0; i < kq.rows(); ++i) {
    for (int m = 0; m < kq.cols(); ++m) {
      CHECK(kq(i, m) == Approx(c["kernel_query_train"][i][m].get<double>()).epsilon(1e-12));
    }
  }
  GpRegressor gpr(x, y, cats, p);
  CHECK(gpr.MarginalLogLikelihood() == Approx(c["mll"].get<double>()).epsilon(1e-10));
  CHECK(GpLogPrior(p) == Approx(c["log_prior"].get<double>()).epsilon(1e-12));
  REQUIRE(gpr.Cache());
  Eigen::VectorXd mean, var;
  gpr.Posterior(q, &mean, &var);
  Eigen::VectorXd logei = LogEI(gpr, c["threshold"]).Evaluate(q);
  for (int i = 0; i < q.rows(); ++i) {
    CHECK(mean[i] == Approx(c["mean"][i].get<double>()).epsilon(1e-10));
    CHECK(var[i] == Approx(c["var"][i].get<double>()).epsilon(1e-8));
    CHECK(logei[i] == Approx(c["logei"][i].get<double>()).epsilon(1e-8));
  }
}

TEST_CASE("standard logEI matches Optuna 5.0's standard_logei", "[gp][golden]") {
  const nlohmann::json c = Golden()["standard_logei"];
  for (size_t i = 0; i < c["z"].size(); ++i) {
    double z = c["z"][i];
    INFO("z = " << z);
    CHECK(StandardLogEI(z) == Approx(c["value"][i].get<double>()).epsilon(1e-10));
  }
}

TEST_CASE("the MAP fit reaches Optuna 5.0's optimum of the same loss", "[gp][golden]") {
  // A range-for over Golden()["fit"] would outlive the temporary it indexes.
  const nlohmann::json golden = Golden();
  for (const auto& c : golden["fit"]) {
    GpMatrix x = Matrix(c["x"]);
    Eigen::VectorXd y = Vector(c["y"]);
    std::vector<char> cats = Cats(c["is_categorical"]);
    const bool det = c["deterministic"];
    GpRegressor gpr = FitGpRegressor(x, y, cats, kGpMinimumNoise, det);
    double loss = GpNegLogPosterior(x, y, cats, GpRawFromParams(gpr.params(), kGpMinimumNoise), kGpMinimumNoise,
                                    det, nullptr);
    INFO((det ? "deterministic" : "noisy"));
    // Both minimise the same loss from the same start; the optimisers
    // (scipy's L-BFGS-B, LBFGSpp) stop at slightly different points.
    CHECK(loss == Approx(c["loss"].get<double>()).margin(1e-3));
    Eigen::VectorXd w = Vector(c["inverse_squared_lengthscales"]);
    for (int j = 0; j < w.size(); ++j) {
      CHECK(std::log(gpr.params().inverse_squared_lengthscales[j]) == Approx(std::log(w[j])).margin(0.05));
    }
    CHECK(std::log(gpr.params().kernel_scale) == Approx(std::log(c["kernel_scale"].get<double>())).margin(0.05));
    if (!det) CHECK(std::log(gpr.params().noise_var) == Approx(std::log(c["noise_var"].get<double>())).margin(0.1));
  }
}

TEST_CASE("coordinates match Optuna 5.0's normalized params", "[gp][golden]") {
  const nlohmann::json c = Golden()["space"];
  const SearchSpace s = testing::GpTestSpace();
  GpSpace space(s);
  for (size_t t = 0; t < c["params"].size(); ++t) {
    const auto& jp = c["params"][t];
    ParamMap p = {{"a_lr", jp["a_lr"].get<double>()}, {"b_int", jp["b_int"].get<int64_t>()},
                  {"c_choice", jp["c_choice"].get<std::string>()}, {"d_q", jp["d_q"].get<double>()},
                  {"e_logint", jp["e_logint"].get<int64_t>()}};
    auto x = space.Normalize(p);
    REQUIRE(x);
    for (int j = 0; j < 5; ++j) CHECK((*x)[j] == Approx(c["normalized"][t][j].get<double>()).epsilon(1e-12));
  }
}

}  // namespace
}  // namespace tune
