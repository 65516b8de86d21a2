// Contract suite run over every Sampler (Optuna's parametrised sampler
// tests): domains, types, log handling, seed reproducibility, resume.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>

#include "search/gp_sampler.h"
#include "search/random_sampler.h"
#include "search/tpe_sampler.h"
#include "tests/search/sampler_test_util.h"

namespace tune {
namespace {

using testing::MakeTrial;
using testing::Num;
using testing::RunSequential;

struct RandomFactory {
  static std::unique_ptr<Sampler> Make(uint64_t seed) { return std::make_unique<RandomSampler>(seed); }
};
struct TpeFactory {  // univariate
  static std::unique_ptr<Sampler> Make(uint64_t seed) {
    TpeSamplerOptions o;
    o.seed = seed;
    o.n_startup_trials = 5;
    o.multivariate = false;
    return std::make_unique<TpeSampler>(o);
  }
};
struct MultivariateTpeFactory {
  static std::unique_ptr<Sampler> Make(uint64_t seed) {
    TpeSamplerOptions o;
    o.seed = seed;
    o.n_startup_trials = 5;
    o.multivariate = true;
    return std::make_unique<TpeSampler>(o);
  }
};

struct GpFactory {
  static std::unique_ptr<Sampler> Make(uint64_t seed) {
    GpSamplerOptions o;
    o.seed = seed;
    o.n_startup_trials = 5;
    return std::make_unique<GpSampler>(o);
  }
};

ParamValue S(const char* s) { return ParamValue(std::string(s)); }

// One parameter of every kind the spec parser produces.
SearchSpace EveryKind() {
  SearchSpace s;
  s["uniform"] = FloatDistribution{-2.0, 3.0, false, std::nullopt};
  s["loguniform"] = FloatDistribution{1e-6, 1.0, true, std::nullopt};
  s["quniform"] = FloatDistribution{0.0, 1.0, false, 0.15};  // 0, 0.15, ..., 0.9
  s["qloguniform"] = FloatDistribution{0.001, 1.0, true, 0.001};
  s["randint"] = IntDistribution{-3, 7, false, 1};
  s["qrandint"] = IntDistribution{0, 100, false, 8};
  s["lograndint"] = IntDistribution{1, 1024, true, 1};
  s["choice_str"] = CategoricalDistribution{{S("adam"), S("sgd"), S("adamw")}, false};
  s["choice_num"] = CategoricalDistribution{{ParamValue(int64_t{4}), ParamValue(0.5), ParamValue(true)}, false};
  s["grid"] = CategoricalDistribution{{ParamValue(int64_t{1}), ParamValue(int64_t{2})}, true};
  return s;
}

// A deterministic objective that depends on every parameter.
double Objective(const ParamMap& p) {
  double f = std::pow(Num(p.at("uniform")) - 1.0, 2) + std::abs(std::log10(Num(p.at("loguniform"))) + 3) +
             std::abs(Num(p.at("quniform")) - 0.45) + std::abs(Num(p.at("randint")) - 2) * 0.1 +
             std::abs(std::log2(Num(p.at("lograndint"))) - 5) * 0.1;
  if (std::get<std::string>(p.at("choice_str")) != "sgd") f += 0.5;
  return f;
}

TEMPLATE_TEST_CASE("every suggestion lies in its distribution, with its type", "[sampler][contract]",
                   RandomFactory, TpeFactory, MultivariateTpeFactory, GpFactory) {
  const SearchSpace space = EveryKind();
  auto sampler = TestType::Make(11);
  History history = RunSequential(*sampler, space, 11, 40, Objective);
  // Also sample with pruned, running and failed trials in the history.
  history.push_back(MakeTrial(40, TrialState::kRunning, history[3].params));
  history.push_back(MakeTrial(41, TrialState::kFailed, history[4].params));
  Trial pruned = MakeTrial(42, TrialState::kPruned, history[5].params);
  pruned.intermediate = {{1, 3.0}, {2, 2.5}};
  history.push_back(pruned);
  history = RunSequential(*sampler, space, 11, 20, Objective, history);

  double min_log = 1, max_log = 0;
  for (const Trial& t : history) {
    REQUIRE(t.params.size() == space.size());
    for (const auto& [name, dist] : space) {
      INFO(name << " = " << ParamToString(t.params.at(name)));
      REQUIRE(Contains(dist, t.params.at(name)));
    }
    CHECK(std::holds_alternative<int64_t>(t.params.at("randint")));
    CHECK(std::holds_alternative<int64_t>(t.params.at("lograndint")));
    CHECK(std::holds_alternative<double>(t.params.at("quniform")));
    min_log = std::min(min_log, Num(t.params.at("loguniform")));
    max_log = std::max(max_log, Num(t.params.at("loguniform")));
  }
  // Log domains are explored across decades, not only near the top.
  CHECK(min_log < 1e-4);
  CHECK(max_log > 1e-3);
}

TEMPLATE_TEST_CASE("random draws of a log domain are uniform in log space", "[sampler][contract]",
                   RandomFactory, TpeFactory, MultivariateTpeFactory, GpFactory) {
  // Without history every sampler is in its random phase.
  SearchSpace space;
  space["lr"] = FloatDistribution{1e-6, 1.0, true, std::nullopt};
  space["r"] = IntDistribution{1, 1024, true, 1};
  auto sampler = TestType::Make(3);
  int lr_low = 0, r_low = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    sampler->Reseed(TrialSeed(3, i));
    ParamMap p = SampleTrial(*sampler, space, {});
    lr_low += Num(p.at("lr")) < 1e-3;  // half of the log range
    r_low += Num(p.at("r")) < 32;      // log2: 5 of 10 octaves
  }
  CHECK(lr_low > 0.45 * n);
  CHECK(lr_low < 0.55 * n);
  CHECK(r_low > 0.42 * n);
  CHECK(r_low < 0.58 * n);
}

TEMPLATE_TEST_CASE("same seed and history give the same suggestions", "[sampler][contract]",
                   RandomFactory, TpeFactory, MultivariateTpeFactory, GpFactory) {
  const SearchSpace space = EveryKind();
  auto a = TestType::Make(7), b = TestType::Make(7), c = TestType::Make(8);
  History ha = RunSequential(*a, space, 7, 25, Objective);
  History hb = RunSequential(*b, space, 7, 25, Objective);
  History hc = RunSequential(*c, space, 8, 25, Objective);
  int differ = 0;
  for (int i = 0; i < 25; ++i) {
    CHECK(ha[i].params == hb[i].params);
    differ += ha[i].params != hc[i].params;
  }
  CHECK(differ > 20);
}

TEMPLATE_TEST_CASE("a fresh sampler on a resumed history suggests what the running one would",
                   "[sampler][contract]", RandomFactory, TpeFactory, MultivariateTpeFactory, GpFactory) {
  const SearchSpace space = EveryKind();
  auto sampler = TestType::Make(5);
  History history = RunSequential(*sampler, space, 5, 30, Objective);
  for (int cut : {3, 12, 29}) {
    History prefix(history.begin(), history.begin() + cut);
    auto fresh = TestType::Make(5);
    fresh->Reseed(TrialSeed(5, cut));
    CHECK(SampleTrial(*fresh, space, prefix) == history[cut].params);
  }
}

}  // namespace
}  // namespace tune
