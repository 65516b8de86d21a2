// PED-ANOVA importances against Optuna 5's get_param_importances on the
// same trials (golden numbers from golden/make_ped_anova_golden.py), and
// the properties a user relies on.
#include "search/ped_anova.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tune {
namespace {

using nlohmann::json;

ParamValue ChoiceOf(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.get<int64_t>();
  return v.get<double>();
}

Distribution FromGolden(const json& d) {
  if (d["kind"] == "choice") {
    std::vector<ParamValue> choices;
    for (const json& v : d["choices"]) choices.push_back(ChoiceOf(v));
    return CategoricalDistribution{std::move(choices), false};
  }
  if (d["kind"] == "float") {
    FloatDistribution f{d["low"].get<double>(), d["high"].get<double>(), d["log"].get<bool>(), std::nullopt};
    if (!d["step"].is_null()) f.step = d["step"].get<double>();
    return f;
  }
  return IntDistribution{d["low"].get<int64_t>(), d["high"].get<int64_t>(), d["log"].get<bool>(),
                         d["step"].get<int64_t>()};
}

ParamValue ValueFor(const Distribution& d, const json& v) {
  if (std::holds_alternative<IntDistribution>(d)) return v.get<int64_t>();
  if (std::holds_alternative<FloatDistribution>(d)) return v.get<double>();
  return ChoiceOf(v);
}

TEST_CASE("PED-ANOVA importances match Optuna 5's get_param_importances", "[ped_anova][golden]") {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/tests/search/golden/ped_anova_golden.json");
  REQUIRE(in.good());
  const json golden = json::parse(in);
  REQUIRE(golden["cases"].size() == 5);
  for (const json& c : golden["cases"]) {
    INFO("case " << c["name"].get<std::string>());
    SearchSpace space;
    for (const auto& [name, d] : c["space"].items()) space[name] = FromGolden(d);
    History trials;
    for (const json& t : c["trials"]) {
      Trial trial;
      trial.number = static_cast<int>(trials.size());
      trial.state = TrialState::kCompleted;
      trial.value = t["value"].get<double>();
      for (const auto& [name, v] : t["params"].items()) trial.params[name] = ValueFor(space.at(name), v);
      trials.push_back(trial);
    }
    auto got = PedAnovaImportances(space, trials, c["maximize"].get<bool>());
    INFO(got.status().ToString());
    REQUIRE(got.ok());
    REQUIRE(got->importances.size() == c["importances"].size());
    CHECK(got->trials == static_cast<int>(trials.size()));
    double sum = 0, previous = 2;
    for (const ParamImportance& p : got->importances) {
      INFO("parameter " << p.name);
      const double want = c["importances"][p.name].get<double>();
      CHECK(p.importance == Approx(want).epsilon(1e-9).margin(1e-12));
      CHECK(p.importance <= previous);  // most important first
      previous = p.importance;
      sum += p.importance;
    }
    CHECK(sum == Approx(1.0));
  }
}

Trial Completed(int number, double value, ParamMap params) {
  Trial t;
  t.number = number;
  t.state = TrialState::kCompleted;
  t.value = value;
  t.params = std::move(params);
  return t;
}

TEST_CASE("PED-ANOVA: the parameter that decides the value ranks first, either direction", "[ped_anova]") {
  SearchSpace space = {{"a", FloatDistribution{0, 1, false, std::nullopt}},
                       {"b", FloatDistribution{0, 1, false, std::nullopt}}};
  History low_a, high_a;
  for (int i = 0; i < 100; ++i) {
    // a spread over [0, 1) by a golden-ratio sequence, b by another; the value is a.
    const double a = std::fmod(0.5 + i * 0.6180339887, 1.0), b = std::fmod(0.25 + i * 0.7548776662, 1.0);
    low_a.push_back(Completed(i, a, {{"a", a}, {"b", b}}));
  }
  auto min = PedAnovaImportances(space, low_a, /*maximize=*/false);
  REQUIRE(min.ok());
  CHECK(min->importances[0].name == "a");
  CHECK(min->importances[0].importance > 0.9);
  CHECK(min->trials == 100);
  CHECK(min->top_trials == 10);
  // Maximising the same values looks for high a: a still decides.
  auto max = PedAnovaImportances(space, low_a, /*maximize=*/true);
  REQUIRE(max.ok());
  CHECK(max->importances[0].name == "a");
  CHECK(max->importances[0].importance > 0.9);
}

TEST_CASE("PED-ANOVA: unusable trials are skipped and too few is an error", "[ped_anova]") {
  SearchSpace space = {{"a", FloatDistribution{0, 1, false, std::nullopt}}};
  History trials = {Completed(0, 1.0, {{"a", 0.1}})};
  Trial pruned = Completed(1, 0.5, {{"a", 0.2}});
  pruned.state = TrialState::kPruned;
  trials.push_back(pruned);
  Trial nan = Completed(2, std::nan(""), {{"a", 0.3}});
  trials.push_back(nan);
  auto one = PedAnovaImportances(space, trials, false);
  REQUIRE_FALSE(one.ok());
  CHECK(one.status().code() == StatusCode::kFailedPrecondition);
  CHECK(one.status().message() == "importances need at least 2 completed trials with a finite value, got 1");

  trials.push_back(Completed(3, 2.0, {{"a", 0.9}}));
  auto two = PedAnovaImportances(space, trials, false);
  REQUIRE(two.ok());
  CHECK(two->importances[0].importance == 1.0);
  CHECK(two->trials == 2);
  CHECK(two->top_trials == 1);

  // A value outside the parameter's domain (the spec changed) is named.
  trials.push_back(Completed(4, 3.0, {{"a", 7.0}}));
  auto bad = PedAnovaImportances(space, trials, false);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("'a'") != std::string::npos);

  PedAnovaOptions options;
  options.target_quantile = 1.0;
  CHECK(PedAnovaImportances(space, {}, false, options).status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tune
