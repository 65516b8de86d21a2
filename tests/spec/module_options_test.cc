// The one mapping from experiment.json onto each module's options
// (spec/module_options.h): every key lands in its field, and what the file
// leaves out gets the module's own default.
#include <catch2/catch.hpp>

#include <string>

#include "spec/module_options.h"

namespace tune {
namespace {

ExperimentSpec MustParse(const std::string& text) {
  auto spec = ParseExperimentSpec(text, "exp.json");
  INFO(spec.status().message());
  REQUIRE(spec.ok());
  return std::move(spec).value();
}

std::string Spec(const std::string& mode, const std::string& search, const std::string& scheduler) {
  return R"({"name": "m", "objective": {"metric": "loss", "mode": ")" + mode + R"("},
    "parameters": {"x": {"type": "uniform", "low": 0, "high": 1}}, "trial": {"command": ["p"]},
    "search": )" + search + R"(, "scheduler": )" + scheduler + "}";
}

}  // namespace

TEST_CASE("module options: every search key of experiment.json reaches the TPE sampler", "[spec]") {
  const ExperimentSpec spec = MustParse(Spec("max", R"({"algorithm": "tpe", "seed": 11,
      "n_startup_trials": 4, "n_ei_candidates": 30, "n_ei_candidates_numerical": 0, "gamma": 0.3,
      "prior_weight": 2.5, "consider_prior": false, "consider_magic_clip": false,
      "consider_endpoints": true, "multivariate": false, "independent_choices": false,
      "constant_liar": false, "parzen_rules": "optuna3"})", R"({"type": "fifo"})"));
  const TpeSamplerOptions o = TpeSamplerOptionsFrom(spec);
  CHECK(o.n_startup_trials == 4);
  CHECK(o.n_ei_candidates == 30);
  CHECK(o.n_ei_candidates_numerical == 0);
  CHECK(o.gamma == 0.3);
  CHECK(o.prior_weight == 2.5);
  CHECK_FALSE(o.consider_prior);
  CHECK_FALSE(o.consider_magic_clip);
  CHECK(o.consider_endpoints);
  CHECK_FALSE(o.multivariate);
  CHECK_FALSE(o.independent_choices);
  CHECK_FALSE(o.constant_liar);
  CHECK(o.parzen_rules == ParzenRules::kOptuna3);
  CHECK(o.maximize);
  CHECK(o.seed == 11);
}

TEST_CASE("module options: a search without TPE keys gives the sampler's own defaults", "[spec]") {
  const TpeSamplerOptions o =
      TpeSamplerOptionsFrom(MustParse(Spec("min", R"({"algorithm": "tpe"})", R"({"type": "fifo"})")));
  const TpeSamplerOptions defaults;
  CHECK(o.n_startup_trials == defaults.n_startup_trials);
  CHECK(o.n_ei_candidates == defaults.n_ei_candidates);
  CHECK(o.n_ei_candidates_numerical == defaults.n_ei_candidates_numerical);
  CHECK_FALSE(o.gamma.has_value());
  CHECK(o.prior_weight == defaults.prior_weight);
  CHECK(o.consider_prior == defaults.consider_prior);
  CHECK(o.consider_magic_clip == defaults.consider_magic_clip);
  CHECK(o.consider_endpoints == defaults.consider_endpoints);
  CHECK(o.multivariate == defaults.multivariate);
  CHECK(o.independent_choices == defaults.independent_choices);
  CHECK(o.constant_liar == defaults.constant_liar);
  CHECK(o.parzen_rules == ParzenRules::kOptuna5);
  CHECK_FALSE(o.maximize);
}

TEST_CASE("module options: GP keys, the direction and the seed reach the GP sampler", "[spec]") {
  const ExperimentSpec spec = MustParse(Spec(
      "max", R"({"algorithm": "gp", "seed": 5, "n_startup_trials": 3, "deterministic_objective": true})",
      R"({"type": "fifo"})"));
  const GpSamplerOptions o = GpSamplerOptionsFrom(spec);
  CHECK(o.n_startup_trials == 3);
  CHECK(o.deterministic_objective);
  CHECK(o.maximize);
  CHECK(o.seed == 5);
  const GpSamplerOptions d =
      GpSamplerOptionsFrom(MustParse(Spec("min", R"({"algorithm": "gp"})", R"({"type": "fifo"})")));
  const GpSamplerOptions defaults;
  CHECK(d.n_startup_trials == defaults.n_startup_trials);
  CHECK(d.deterministic_objective == defaults.deterministic_objective);
  CHECK_FALSE(d.maximize);
}

TEST_CASE("module options: scheduler keys reach ASHA, with the seed the run passes", "[spec]") {
  const ExperimentSpec spec = MustParse(Spec("max", R"({"algorithm": "random"})",
      R"({"type": "asha", "time_attr": "epoch", "max_t": 81, "grace_period": 3, "reduction_factor": 3,
          "brackets": 2})"));
  const AshaOptions o = AshaOptionsFrom(spec, 1234);
  CHECK(o.time_attr == "epoch");
  CHECK(o.max_t == 81);
  CHECK(o.grace_period == 3);
  CHECK(o.reduction_factor == 3.0);
  CHECK(o.brackets == 2);
  CHECK(o.maximize);
  CHECK(o.seed == 1234);
  CHECK(o.stop_last_trials);  // not a key of experiment.json: the scheduler's default
  CHECK_FALSE(o.choose_bracket);
  CHECK(ValidateAshaOptions(o).ok());
}

TEST_CASE("module options: scheduler keys reach the median stopping rule", "[spec]") {
  const MedianOptions o = MedianOptionsFrom(MustParse(Spec("min", R"({"algorithm": "random"})",
      R"({"type": "median", "time_attr": "epoch", "grace_period": 5, "min_samples_required": 2,
          "hard_stop": false})")));
  CHECK(o.time_attr == "epoch");
  CHECK(o.grace_period == 5.0);
  CHECK(o.min_samples_required == 2);
  CHECK_FALSE(o.maximize);
  CHECK_FALSE(o.hard_stop);
  // Without grace_period: Ray's 60 time units (the parser's default for median).
  const MedianOptions d =
      MedianOptionsFrom(MustParse(Spec("max", R"({"algorithm": "random"})", R"({"type": "median"})")));
  CHECK(d.grace_period == 60.0);
  CHECK(d.min_samples_required == 3);
  CHECK(d.hard_stop);
  CHECK(d.maximize);
}

TEST_CASE("module options: pbt keys, the population, the direction and the seed reach PBT", "[spec]") {
  const std::string text = R"({"name": "m", "objective": {"metric": "loss", "mode": "max"},
    "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2},
                   "lora_r": {"type": "choice", "values": [4, 8]}},
    "trial": {"command": ["lora_train", "--lora-r", "${lora_r}", "--lr", "${lr}"]},
    "limits": {"max_trials": 8},
    "scheduler": {"type": "pbt", "max_t": 300, "perturbation_interval": 25, "burn_in_period": 50,
                  "quantile_fraction": 0.5, "resample_probability": 0.1, "perturbation_factors": [1.5, 0.5],
                  "synch": true, "hyperparam_mutations": {"lr": {"type": "loguniform", "low": 1e-6, "high": 1e-1}}}})";
  const PbtOptions o = PbtOptionsFrom(MustParse(text), 77);
  CHECK(o.max_t == 300);
  CHECK(o.perturbation_interval == 25);
  CHECK(o.burn_in_period == 50);
  CHECK(o.quantile_fraction == 0.5);
  CHECK(o.resample_probability == 0.1);
  CHECK(o.perturbation_factors == std::vector<double>{1.5, 0.5});
  CHECK(o.synch);
  CHECK(o.population == 8);
  CHECK(o.maximize);
  CHECK(o.seed == 77);
  REQUIRE(o.hyperparam_mutations.size() == 1);  // lora_r is not mutated: the spec is accepted
  CHECK(std::get<FloatDistribution>(o.hyperparam_mutations.at("lr")).low == 1e-6);
  CHECK(ValidatePbtOptions(o).ok());

  // Defaults: Ray's, every searched parameter with its own distribution.
  const PbtOptions d = PbtOptionsFrom(MustParse(Spec("min", "{}", R"({"type": "pbt", "max_t": 10})")), 1);
  CHECK(d.perturbation_interval == 20);
  CHECK(d.burn_in_period == 0);
  CHECK(d.quantile_fraction == 0.25);
  CHECK(d.resample_probability == 0.25);
  CHECK(d.perturbation_factors == std::vector<double>{1.2, 0.8});
  CHECK_FALSE(d.synch);
  CHECK_FALSE(d.maximize);
  REQUIRE(d.hyperparam_mutations.count("x") == 1);
  CHECK(std::get<FloatDistribution>(d.hyperparam_mutations.at("x")).high == 1);
  // A list of names takes their search distributions.
  const std::string listed = R"({"name": "m", "objective": {"metric": "loss", "mode": "min"}, "parameters": {"a": {"type": "randint", "low": 1, "high": 9},
      "b": {"type": "choice", "values": ["x", "y"]}}, "trial": {"command": ["p"]},
      "scheduler": {"type": "pbt", "max_t": 10, "hyperparam_mutations": ["b"]}})";
  const PbtOptions l = PbtOptionsFrom(MustParse(listed), 1);
  REQUIRE(l.hyperparam_mutations.size() == 1);
  CHECK(std::holds_alternative<CategoricalDistribution>(l.hyperparam_mutations.at("b")));
}

}  // namespace tune
