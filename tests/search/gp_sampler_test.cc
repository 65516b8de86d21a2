// GpSampler (search/gp_sampler.h) end to end: it finds minima far better than
// random search on a fixed seed set, is reproducible, handles ints, log
// domains, choices and trials in flight. The contract suite
// (sampler_contract_test.cc) covers domains, types and resume.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "search/gp_sampler.h"
#include "search/random_sampler.h"
#include "tests/search/sampler_test_util.h"

namespace tune {
namespace {

using testing::MakeTrial;
using testing::Num;
using testing::RunSequential;

GpSamplerOptions Options(uint64_t seed) {
  GpSamplerOptions o;
  o.seed = seed;
  return o;
}

double BestValue(const History& h) {
  double best = INFINITY;
  for (const Trial& t : h) best = std::min(best, *t.value);
  return best;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return 0.5 * (v[(v.size() - 1) / 2] + v[v.size() / 2]);
}

// A smooth 2-D bowl with a log-scaled axis; minimum 0 at (lr 1e-3, x 0.3).
SearchSpace Bowl() {
  SearchSpace s;
  s["lr"] = FloatDistribution{1e-5, 1e-1, true, std::nullopt};
  s["x"] = FloatDistribution{-1.0, 1.0, false, std::nullopt};
  return s;
}
double BowlF(const ParamMap& p) {
  double u = std::log10(Num(p.at("lr"))) + 3, v = Num(p.at("x")) - 0.3;
  return u * u + 3 * v * v + 0.5 * u * v;
}

TEST_CASE("GP finds a smooth 2-D minimum far better than random search", "[gp][sampler]") {
  std::vector<double> gp, random;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    GpSampler g(Options(seed));
    RandomSampler r(seed);
    gp.push_back(BestValue(RunSequential(g, Bowl(), seed, 25, BowlF)));
    random.push_back(BestValue(RunSequential(r, Bowl(), seed, 25, BowlF)));
  }
  INFO("median best: gp " << Median(gp) << ", random " << Median(random));
  CHECK(Median(gp) < 1e-3);
  CHECK(Median(gp) < 0.01 * Median(random));
}

TEST_CASE("GP: the same seed and history give the same suggestions", "[gp][sampler]") {
  GpSampler a(Options(3)), b(Options(3)), c(Options(4));
  History ha = RunSequential(a, Bowl(), 3, 16, BowlF);
  History hb = RunSequential(b, Bowl(), 3, 16, BowlF);
  History hc = RunSequential(c, Bowl(), 4, 16, BowlF);
  for (int i = 0; i < 16; ++i) CHECK(ha[i].params == hb[i].params);
  CHECK(ha[15].params != hc[15].params);
}

TEST_CASE("GP handles ints, log ints, quantised floats and choices", "[gp][sampler]") {
  SearchSpace s;
  s["opt"] = CategoricalDistribution{{ParamValue(std::string("sgd")), ParamValue(std::string("adam")),
                                      ParamValue(std::string("adamw"))}, false};
  s["layers"] = IntDistribution{1, 8, false, 1};
  s["rank"] = IntDistribution{1, 256, true, 1};
  s["q"] = FloatDistribution{0.0, 1.0, false, 0.1};
  s["lr"] = FloatDistribution{1e-5, 1e-1, true, std::nullopt};
  auto f = [](const ParamMap& p) {
    double v = std::get<std::string>(p.at("opt")) == "adamw" ? 0.0 : 1.0;
    return v + 0.1 * std::pow(Num(p.at("layers")) - 5, 2) + 0.1 * std::pow(std::log2(Num(p.at("rank"))) - 4, 2) +
           std::pow(Num(p.at("q")) - 0.7, 2) + std::pow(std::log10(Num(p.at("lr"))) + 3, 2);
  };
  int solved = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    GpSampler g(Options(seed));
    History h = RunSequential(g, s, seed, 40, f);
    for (const Trial& t : h) {
      for (const auto& [name, dist] : s) REQUIRE(Contains(dist, t.params.at(name)));
    }
    solved += BestValue(h) < 0.15;
  }
  CHECK(solved >= 3);
}

TEST_CASE("GP does not repeat a trial in flight", "[gp][sampler]") {
  GpSampler g(Options(5));
  History h = RunSequential(g, Bowl(), 5, 15, BowlF);
  g.Reseed(TrialSeed(5, 15));
  ParamMap first = SampleTrial(g, Bowl(), h);
  // The same draw with that suggestion running: the posterior mean stands in
  // for its value, so the expected improvement there vanishes.
  h.push_back(MakeTrial(15, TrialState::kRunning, first));
  g.Reseed(TrialSeed(5, 15));
  ParamMap second = SampleTrial(g, Bowl(), h);
  double dlr = std::abs(std::log10(Num(first.at("lr"))) - std::log10(Num(second.at("lr"))));
  double dx = std::abs(Num(first.at("x")) - Num(second.at("x")));
  CHECK(dlr + dx > 1e-3);
  // Failed and pruned trials are ignored; a trial without a value too.
  History h2(h.begin(), h.end() - 1);
  h2.push_back(MakeTrial(15, TrialState::kFailed, first));
  h2.push_back(MakeTrial(16, TrialState::kPruned, first, 0.0));
  g.Reseed(TrialSeed(5, 15));
  CHECK(SampleTrial(g, Bowl(), h2) == first);
}

TEST_CASE("GP: the startup phase is random, and maximize mirrors minimize", "[gp][sampler]") {
  GpSamplerOptions o = Options(9);
  o.n_startup_trials = 4;
  GpSampler g(o);
  History h = RunSequential(g, Bowl(), 9, 3, BowlF);
  CHECK(g.SampleRelative(Bowl(), h).empty());
  h = RunSequential(g, Bowl(), 9, 1, BowlF, h);
  CHECK(!g.SampleRelative(Bowl(), h).empty());
  // Maximising -f gives the same suggestions as minimising f.
  o.maximize = true;
  GpSampler m(o);
  History hm = RunSequential(m, Bowl(), 9, 10, [](const ParamMap& p) { return -BowlF(p); });
  GpSamplerOptions o2 = Options(9);
  o2.n_startup_trials = 4;
  GpSampler n(o2);
  History hn = RunSequential(n, Bowl(), 9, 10, BowlF);
  for (int i = 0; i < 10; ++i) CHECK(hm[i].params == hn[i].params);
}

TEST_CASE("GP: a fresh sampler suggests what a used one does, trials out of order", "[gp][sampler]") {
  // The used sampler has cached fits of other trial sets (12 still running
  // while later trials completed); the fresh one refits its chain.
  GpSampler used(Options(6));
  History h = RunSequential(used, Bowl(), 6, 20, BowlF);
  h[12].state = TrialState::kRunning;
  h[12].value.reset();
  used.Reseed(TrialSeed(6, 20));
  ParamMap a = SampleTrial(used, Bowl(), h);
  h[12].state = TrialState::kCompleted;
  h[12].value = BowlF(h[12].params);
  used.Reseed(TrialSeed(6, 20));
  ParamMap b = SampleTrial(used, Bowl(), h);
  GpSampler fresh(Options(6));
  fresh.Reseed(TrialSeed(6, 20));
  CHECK(SampleTrial(fresh, Bowl(), h) == b);
  h[12].state = TrialState::kRunning;
  h[12].value.reset();
  GpSampler fresh2(Options(6));
  fresh2.Reseed(TrialSeed(6, 20));
  CHECK(SampleTrial(fresh2, Bowl(), h) == a);
}

TEST_CASE("GP with deterministic_objective still converges", "[gp][sampler]") {
  GpSamplerOptions o = Options(2);
  o.deterministic_objective = true;
  GpSampler g(o);
  CHECK(BestValue(RunSequential(g, Bowl(), 2, 25, BowlF)) < 1e-2);
}

}  // namespace
}  // namespace tune
