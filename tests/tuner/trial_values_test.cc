// A multi-objective experiment's spec, and a finished trial's objective and
// constraint values computed from the reports that count
// (tuner/trial_values.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "spec/experiment_spec.h"
#include "tuner/trial_values.h"

using namespace tune;

namespace {

const char kSpec[] = R"({
  "name": "mo",
  "objective": [{"metric": "eval_loss", "mode": "min"},
                {"metric": "tokens_per_s", "mode": "max", "scope": "best", "ref": 100}],
  "constraints": [{"metric": "peak_mem_gb", "max": 20}, {"metric": "adapter_mb", "min": 1, "max": 8}],
  "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2}},
  "search": {"algorithm": "nsga2", "population_size": 10},
  "scheduler": {"type": "asha", "metric": "tokens_per_s", "max_t": 10},
  "trial": {"command": ["prog"]}
})";

StoredReport Report(int attempt, int64_t step, std::map<std::string, double> values, std::string excluded = "") {
  StoredReport r;
  r.attempt = attempt;
  r.report.step = step;
  r.report.values = std::move(values);
  r.excluded = std::move(excluded);
  return r;
}

}  // namespace

TEST_CASE("spec: a list of objectives, constraints and the scheduler's metric", "[spec][multi-objective]") {
  auto spec = ParseExperimentSpec(kSpec, "mo.json");
  INFO(spec.status().message());
  REQUIRE(spec.ok());
  REQUIRE(spec->objectives.size() == 2);
  CHECK(IsMultiObjective(*spec));
  CHECK(HasTrialValues(*spec));
  CHECK(spec->objectives[1].mode == Mode::kMax);
  CHECK(spec->objectives[1].scope == Scope::kBest);
  CHECK(spec->objectives[1].ref == 100);
  // Early stopping ranks on scheduler.metric: it is the spec's objective.
  CHECK(spec->objective.metric == "tokens_per_s");
  CHECK(spec->search.algorithm == "nsga2");
  CHECK(spec->search.nsga2.population_size == 10);
  CHECK(spec->search.nsga2.crossover_prob == 0.9);
  CHECK_FALSE(spec->search.nsga2.mutation_prob.has_value());
  REQUIRE(spec->constraints.size() == 2);
  CHECK(spec->constraints[0].max == 20);
  CHECK_FALSE(spec->constraints[0].min.has_value());

  // One objective as an object: as before, and no values kept per trial.
  auto single = ParseExperimentSpec(R"({"name": "one", "objective": {"metric": "loss", "mode": "min", "goal": 1},
      "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}}, "trial": {"command": ["p"]}})", "one.json");
  REQUIRE(single.ok());
  CHECK(single->objectives.size() == 1);
  CHECK(single->objective.metric == "loss");
  CHECK(single->objective.goal == 1);
  CHECK_FALSE(IsMultiObjective(*single));
  CHECK_FALSE(HasTrialValues(*single));
}

TEST_CASE("spec: PBT with several objectives ranks on scheduler.metric, and needs it", "[spec][multi-objective]") {
  const std::string base = R"({"name": "mo-pbt",
    "objective": [{"metric": "eval_loss", "mode": "min"}, {"metric": "adapter_mb", "mode": "min"}],
    "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2}},
    "limits": {"max_trials": 4}, "trial": {"command": ["prog"]}, )";
  auto pbt = ParseExperimentSpec(base + R"("scheduler": {"type": "pbt", "metric": "eval_loss", "max_t": 40}})", "p.json");
  INFO(pbt.status().message());
  REQUIRE(pbt.ok());
  CHECK(pbt->objective.metric == "eval_loss");
  auto missing = ParseExperimentSpec(base + R"("scheduler": {"type": "pbt", "max_t": 40}})", "p.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().rfind("p.json: scheduler.metric: expected the objective that pbt ranks", 0) == 0);
}

TEST_CASE("constraint values follow Optuna's sign: at most 0 satisfied, else the excess", "[spec][multi-objective]") {
  ConstraintSpec max{"m", std::nullopt, 20.0};
  CHECK(ConstraintValue(max, 15) == -5);
  CHECK(ConstraintValue(max, 20) == 0);
  CHECK(ConstraintValue(max, 23.5) == 3.5);
  ConstraintSpec band{"m", 1.0, 8.0};
  CHECK(ConstraintValue(band, 0.5) == 0.5);
  CHECK(ConstraintValue(band, 4) == -3);  // the nearer bound: min(4 - 1, 8 - 4)
  CHECK(ConstraintValue(band, 9) == 1);
  CHECK(std::isnan(ConstraintValue(band, std::numeric_limits<double>::quiet_NaN())));
}

TEST_CASE("a finished trial's values: each objective's scope, constraints at the last step, only reports that count",
          "[tuner][multi-objective]") {
  auto spec = ParseExperimentSpec(kSpec, "mo.json");
  REQUIRE(spec.ok());
  const std::vector<StoredReport> reports = {
      Report(0, 1, {{"eval_loss", 9}, {"tokens_per_s", 999}, {"peak_mem_gb", 99}, {"adapter_mb", 5}}),  // attempt 0
      Report(1, 1, {{"eval_loss", 3}, {"tokens_per_s", 120}, {"peak_mem_gb", 18}}),
      Report(1, 2, {{"eval_loss", 2.5}, {"tokens_per_s", 150}, {"adapter_mb", 0.25}}),
      Report(1, 3, {{"eval_loss", 0.1}, {"tokens_per_s", 900}}, "after pause"),  // does not count
      Report(1, 3, {{"eval_loss", 2}, {"tokens_per_s", 140}, {"peak_mem_gb", 21}}),
  };
  TrialValues v = ComputeTrialValues(*spec, reports, 1);
  CHECK(v.missing.empty());
  // eval_loss: the last report; tokens_per_s (scope best, max): 150.
  CHECK(v.values == std::vector<double>{2, 150});
  // peak_mem_gb 21 at the last step (1 over 20); adapter_mb 0.25 (0.75 under 1).
  CHECK(v.constraints == std::vector<double>{1, 0.75});

  // A metric never reported in the attempt is named.
  TrialValues none = ComputeTrialValues(*spec, {Report(1, 1, {{"eval_loss", 3}})}, 1);
  CHECK(none.missing == "the objective metric 'tokens_per_s'");
  TrialValues no_constraint =
      ComputeTrialValues(*spec, {Report(1, 1, {{"eval_loss", 3}, {"tokens_per_s", 1}, {"adapter_mb", 2}})}, 1);
  CHECK(no_constraint.missing == "the constraint metric 'peak_mem_gb'");
}
