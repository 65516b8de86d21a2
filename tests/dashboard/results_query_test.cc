// The read-side queries that `tune best`/`tune trials`/`tune importance`/
// `tune status` (tuner/report.cc) and the dashboard's JSON share
// (dashboard/results_query.h): one answer for both.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dashboard/results_query.h"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

TrialRecord Record(int number, TrialState state, std::optional<double> value, ParamMap params = {}) {
  TrialRecord r;
  r.trial.id = number + 1;
  r.trial.number = number;
  r.trial.state = state;
  r.trial.value = value;
  r.trial.params = std::move(params);
  return r;
}

}  // namespace

TEST_CASE("results query: the best trial is the best finite value of a completed trial, the first among equals",
          "[dashboard][results_query]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<TrialRecord> records = {
      Record(0, TrialState::kPruned, 0.01),    // not completed: never a candidate
      Record(1, TrialState::kCompleted, 0.5),
      Record(2, TrialState::kCompleted, nan),  // NaN and infinities are not values to rank
      Record(3, TrialState::kCompleted, -inf),
      Record(4, TrialState::kCompleted, 0.2),
      Record(5, TrialState::kCompleted, 0.2),  // equal to 4: 4 stays
      Record(6, TrialState::kRunning, 0.1),
      Record(7, TrialState::kCompleted, std::nullopt),
      Record(8, TrialState::kCompleted, inf),
      Record(9, TrialState::kCompleted, 0.9),
  };
  const TrialRecord* min = BestTrial(records, Mode::kMin);
  REQUIRE(min != nullptr);
  CHECK(min->trial.number == 4);
  const TrialRecord* max = BestTrial(records, Mode::kMax);
  REQUIRE(max != nullptr);
  CHECK(max->trial.number == 9);
  CHECK(BestTrial({Record(0, TrialState::kFailed, 1.0), Record(1, TrialState::kCompleted, nan)}, Mode::kMin) ==
        nullptr);
  CHECK(BestTrial({}, Mode::kMax) == nullptr);
}

TEST_CASE("results query: attempts count from the first start", "[dashboard][results_query]") {
  TrialRecord r = Record(0, TrialState::kPending, std::nullopt);
  CHECK(AttemptsOf(r) == 0);
  r.started_at = 1.0;
  CHECK(AttemptsOf(r) == 1);
  r.trial.attempt = 2;
  CHECK(AttemptsOf(r) == 3);
}

TEST_CASE("results query: parameters keep their types in JSON", "[dashboard][results_query]") {
  const ParamMap params = {{"i", int64_t{3}}, {"f", 3.0}, {"s", std::string("adamw")}, {"b", true}};
  CHECK(ParamsJson(params).dump() == R"({"b":true,"f":3.0,"i":3,"s":"adamw"})");
  CHECK(ParamJson(ParamValue(int64_t{-2})).dump() == "-2");
  CHECK(ParamsJson({}).dump() == "{}");
}

TEST_CASE("results query: importances over the stored spec's parameters, as one JSON shape",
          "[dashboard][results_query]") {
  auto spec = ParseExperimentSpec(R"({"name": "imp", "objective": {"metric": "loss", "mode": "min"},
      "parameters": {"x": {"type": "uniform", "low": 0, "high": 1},
                     "y": {"type": "uniform", "low": 0, "high": 1}},
      "trial": {"command": ["p"]}})", "exp.json");
  REQUIRE(spec.ok());
  // The value follows x alone; y is noise that does not matter.
  std::vector<TrialRecord> records;
  for (int i = 0; i < 40; ++i) {
    const double x = (i % 20) / 20.0, y = std::fmod(i * 0.37, 1.0);
    records.push_back(Record(i, TrialState::kCompleted, x, {{"x", x}, {"y", y}}));
  }
  records.push_back(Record(40, TrialState::kFailed, std::nullopt, {{"x", 0.5}, {"y", 0.5}}));
  auto result = ImportancesOf(*spec, records);
  REQUIRE(result.ok());
  CHECK(result->trials == 40);
  Json j = {{"experiment", "imp"}};
  AddImportanceJson(*result, &j);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"experiment", "method", "trials", "top_trials", "importances"});
  CHECK(j["method"] == "ped-anova");
  CHECK(j["trials"] == 40);
  CHECK(j["top_trials"] == result->top_trials);
  REQUIRE(j["importances"].size() == 2);
  CHECK(j["importances"][0]["parameter"] == "x");
  CHECK(j["importances"][0]["importance"].get<double>() > j["importances"][1]["importance"].get<double>());

  // Fewer than 2 usable trials: PED-ANOVA's own error.
  auto few = ImportancesOf(*spec, {records[0]});
  REQUIRE_FALSE(few.ok());
  CHECK(few.status().code() == StatusCode::kFailedPrecondition);
}

}  // namespace tune
