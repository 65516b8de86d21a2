// `"search": {"algorithm": "auto"}` from experiment.json to the sampler
// (spec/experiment_spec.cc, tuner/components.cc MakeSampler): the options
// it takes, and the AutoSampler it builds for one objective, constraints and
// several objectives (the rule itself: tests/search/auto_sampler_test.cc).
#include <catch2/catch.hpp>

#include "search/auto_sampler.h"
#include "spec/experiment_spec.h"
#include "tuner/components.h"

using namespace tune;

namespace {

std::string Spec(const std::string& objective, const std::string& search, const std::string& extra = "") {
  return R"({"name": "a", "objective": )" + objective + R"(,
    "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2},
                   "opt": {"type": "choice", "values": ["adam", "sgd"]}},
    "search": )" + search + extra + R"(, "trial": {"command": ["prog"]}})";
}

AutoSampler& MustBuildAuto(const std::string& text, std::unique_ptr<Sampler>* holder) {
  auto spec = ParseExperimentSpec(text, "auto.json");
  INFO(spec.status().message());
  REQUIRE(spec.ok());
  CHECK(spec->search.algorithm == "auto");
  auto sampler = MakeSampler(*spec);
  REQUIRE(sampler.ok());
  *holder = std::move(sampler).value();
  auto* a = dynamic_cast<AutoSampler*>(holder->get());
  REQUIRE(a != nullptr);
  return *a;
}

History Completed(int n) {
  History h(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    h[static_cast<size_t>(i)].number = i;
    h[static_cast<size_t>(i)].state = TrialState::kCompleted;
  }
  return h;
}

}  // namespace

TEST_CASE("spec: algorithm auto builds an AutoSampler with the seed and the objective's direction", "[spec][auto]") {
  std::unique_ptr<Sampler> holder;
  AutoSampler& a = MustBuildAuto(
      Spec(R"({"metric": "acc", "mode": "max"})",
           R"({"algorithm": "auto", "seed": 9, "points_to_evaluate": [{"lr": 0.001, "opt": "adam"}]})"),
      &holder);
  CHECK(a.options().seed == 9);
  CHECK(a.options().gp.maximize);
  CHECK(a.options().tpe.maximize);
  CHECK_FALSE(a.options().constrained);
  CHECK(a.options().max_completed_for_gp == 250);
  CHECK(a.Choose(Completed(249)) == AutoDelegate::kGp);
  CHECK(a.Choose(Completed(250)) == AutoDelegate::kTpe);
}

TEST_CASE("spec: algorithm auto with constraints, and with several objectives", "[spec][auto]") {
  std::unique_ptr<Sampler> h1, h2;
  AutoSampler& constrained = MustBuildAuto(
      Spec(R"({"metric": "loss", "mode": "min"})", R"({"algorithm": "auto"})",
           R"(, "constraints": [{"metric": "mem", "max": 20}])"),
      &h1);
  CHECK(constrained.options().constrained);
  CHECK(constrained.Choose({}) == AutoDelegate::kTpe);
  AutoSampler& multi = MustBuildAuto(
      Spec(R"([{"metric": "loss", "mode": "min"}, {"metric": "tps", "mode": "max"}])", R"({"algorithm": "auto"})"),
      &h2);
  CHECK(multi.options().tpe.objectives_maximize == std::vector<bool>{false, true});
  CHECK(multi.Choose(Completed(10)) == AutoDelegate::kTpe);
  CHECK(multi.Choose(Completed(250)) == AutoDelegate::kNsga2);
}

TEST_CASE("spec: algorithm auto refuses the options of the samplers it picks", "[spec][auto]") {
  for (const char* key : {R"("n_startup_trials": 5)", R"("gamma": 0.2)", R"("population_size": 10)"}) {
    auto spec = ParseExperimentSpec(
        Spec(R"({"metric": "loss", "mode": "min"})", std::string(R"({"algorithm": "auto", )") + key + "}"), "auto.json");
    INFO(key);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.status().message().find("for algorithm \"auto\"") != std::string::npos);
  }
}
