// AutoSampler (search/auto_sampler.h): which delegate runs for which
// history, that its suggestion is exactly its delegate's for the same history
// and seed, and that a fresh sampler on a resumed history (crossing the
// hand-over) suggests what the uninterrupted run did.
#include <catch2/catch.hpp>
#include <cmath>

#include "search/auto_sampler.h"
#include "search/gp_sampler.h"
#include "search/nsga2_sampler.h"
#include "search/tpe_sampler.h"
#include "tests/search/sampler_test_util.h"

namespace tune {
namespace {

using testing::MakeTrial;
using testing::Num;
using testing::RunSequential;

SearchSpace Numerical() {
  SearchSpace s;
  s["lr"] = FloatDistribution{1e-5, 1e-1, true, std::nullopt};
  s["x"] = FloatDistribution{-1.0, 1.0, false, std::nullopt};
  s["n"] = IntDistribution{1, 8, false, 1};
  return s;
}
SearchSpace WithChoice() {
  SearchSpace s = Numerical();
  s["opt"] = CategoricalDistribution{{ParamValue{std::string("adam")}, ParamValue{std::string("sgd")},
                                      ParamValue{std::string("lion")}}};
  return s;
}
double F(const ParamMap& p) {
  double u = std::log10(Num(p.at("lr"))) + 3, v = Num(p.at("x")) - 0.3;
  double w = u * u + 3 * v * v + 0.1 * Num(p.at("n"));
  if (auto it = p.find("opt"); it != p.end() && std::get<std::string>(it->second) != "adam") w += 0.5;
  return w;
}

// `completed` completed trials, then one running, one failed and one pruned
// (which the rule does not count).
History Trials(int completed) {
  History h;
  for (int i = 0; i < completed; ++i)
    h.push_back(MakeTrial(i, TrialState::kCompleted, {{"x", 0.01 * (i % 100) - 0.5}}, 1.0));
  for (TrialState s : {TrialState::kRunning, TrialState::kFailed, TrialState::kPruned})
    h.push_back(MakeTrial(static_cast<int>(h.size()), s, {{"x", 0.0}}));
  return h;
}

AutoSamplerOptions SingleObjective(uint64_t seed, int n = 250) {
  AutoSamplerOptions o;
  o.seed = seed;
  o.max_completed_for_gp = n;
  return o;
}
AutoSamplerOptions TwoObjectives(uint64_t seed, int n = 250) {
  AutoSamplerOptions o = SingleObjective(seed, n);
  o.tpe.objectives_maximize = {false, true};
  return o;
}

// The next trial's parameters from `s` for `history`, as the tuner draws them.
ParamMap Next(Sampler& s, const SearchSpace& space, const History& history, uint64_t seed) {
  s.Reseed(TrialSeed(seed, static_cast<int>(history.size())));
  return SampleTrial(s, space, history);
}

// Two objectives of a trial: F and a conflicting one, to maximise.
History RunTwoObjectives(Sampler& s, const SearchSpace& space, uint64_t seed, int n, History h = {}) {
  for (int i = 0; i < n; ++i) {
    int number = static_cast<int>(h.size());
    ParamMap p = Next(s, space, h, seed);
    Trial t = MakeTrial(number, TrialState::kCompleted, p, F(p));
    t.values = {F(p), Num(p.at("x"))};
    h.push_back(std::move(t));
  }
  return h;
}

TEST_CASE("auto: GP below 250 completed trials, TPE from 250 on, one objective", "[auto][sampler]") {
  AutoSampler s(SingleObjective(1));
  CHECK(s.Choose({}) == AutoDelegate::kGp);
  CHECK(s.Choose(Trials(10)) == AutoDelegate::kGp);
  // Running, failed and pruned trials do not count towards the 250.
  CHECK(s.Choose(Trials(249)) == AutoDelegate::kGp);
  CHECK(s.Choose(Trials(250)) == AutoDelegate::kTpe);
  CHECK(s.Choose(Trials(400)) == AutoDelegate::kTpe);
  CHECK(std::string(AutoDelegateName(s.Choose(Trials(250)))) == "tpe");
}

TEST_CASE("auto: TPE throughout with constraints (tune's GP ignores them)", "[auto][sampler]") {
  AutoSamplerOptions o = SingleObjective(1);
  o.constrained = true;
  AutoSampler s(o);
  CHECK(s.Choose({}) == AutoDelegate::kTpe);
  CHECK(s.Choose(Trials(20)) == AutoDelegate::kTpe);
  CHECK(s.Choose(Trials(300)) == AutoDelegate::kTpe);
}

TEST_CASE("auto: several objectives get TPE below 250 completed trials, NSGA-II from 250 on", "[auto][sampler]") {
  AutoSampler s(TwoObjectives(1));
  CHECK(s.Choose({}) == AutoDelegate::kTpe);
  CHECK(s.Choose(Trials(249)) == AutoDelegate::kTpe);
  CHECK(s.Choose(Trials(250)) == AutoDelegate::kNsga2);
  AutoSamplerOptions constrained = TwoObjectives(1);
  constrained.constrained = true;
  CHECK(AutoSampler(constrained).Choose(Trials(250)) == AutoDelegate::kNsga2);
}

TEST_CASE("auto suggests exactly what GP suggests below the hand-over, also with a choice", "[auto][sampler]") {
  for (const SearchSpace& space : {Numerical(), WithChoice()}) {
    const uint64_t seed = 7;
    AutoSampler a(SingleObjective(seed));
    GpSamplerOptions go;
    go.seed = seed;
    GpSampler lone(go);
    // 14 completed trials: past the GP's 10 random startup trials.
    History h = RunSequential(a, space, seed, 14, F);
    History h2 = RunSequential(lone, space, seed, 14, F);
    CHECK(h.size() == h2.size());
    for (size_t i = 0; i < h.size(); ++i) CHECK(h[i].params == h2[i].params);
    REQUIRE(a.Choose(h) == AutoDelegate::kGp);
    const ParamMap next = Next(a, space, h, seed);
    CHECK(next == Next(lone, space, h, seed));
    // Not TPE's suggestion (so the comparison above says something).
    TpeSamplerOptions to;
    to.seed = seed;
    TpeSampler tpe(to);
    CHECK(next != Next(tpe, space, h, seed));
  }
}

TEST_CASE("auto suggests exactly what TPE suggests from the hand-over on", "[auto][sampler]") {
  const uint64_t seed = 3;
  const SearchSpace space = WithChoice();
  // A history of 30 completed trials, drawn by TPE; hand-over at 20.
  TpeSamplerOptions to;
  to.seed = seed;
  TpeSampler drawer(to);
  History h = RunSequential(drawer, space, seed, 30, F);
  AutoSampler a(SingleObjective(seed, 20));
  REQUIRE(a.Choose(h) == AutoDelegate::kTpe);
  TpeSampler lone(to);
  GpSamplerOptions go;
  go.seed = seed;
  GpSampler gp(go);
  for (int k = 20; k <= 30; k += 5) {
    History prefix(h.begin(), h.begin() + k);
    const ParamMap next = Next(a, space, prefix, seed);
    CHECK(next == Next(lone, space, prefix, seed));
    CHECK(next != Next(gp, space, prefix, seed));
  }
}

TEST_CASE("auto with two objectives suggests what TPE, then NSGA-II, suggest", "[auto][sampler]") {
  const uint64_t seed = 5;
  const SearchSpace space = Numerical();
  AutoSampler a(TwoObjectives(seed, 15));
  TpeSamplerOptions to;
  to.seed = seed;
  to.objectives_maximize = {false, true};
  TpeSampler tpe(to);
  Nsga2SamplerOptions no;
  no.seed = seed;
  no.maximize = {false, true};
  no.population_size = 50;
  Nsga2Sampler nsga2(no);
  History h = RunTwoObjectives(tpe, space, seed, 60);
  History below(h.begin(), h.begin() + 12), above(h.begin(), h.begin() + 55);
  REQUIRE(a.Choose(below) == AutoDelegate::kTpe);
  REQUIRE(a.Choose(above) == AutoDelegate::kNsga2);
  CHECK(Next(a, space, below, seed) == Next(tpe, space, below, seed));
  // Trial 55 is of NSGA-II generation 1: a child of the parents it selects
  // from the TPE trials of generation 0.
  const ParamMap next = Next(a, space, above, seed);
  CHECK(next == Next(nsga2, space, above, seed));
  CHECK(next != Next(tpe, space, above, seed));
}

TEST_CASE("auto resumed across the GP-to-TPE hand-over suggests what the uninterrupted run did", "[auto][sampler]") {
  const uint64_t seed = 11;
  const SearchSpace space = WithChoice();
  AutoSampler whole(SingleObjective(seed, 15));
  History h = RunSequential(whole, space, seed, 22, F);
  for (int cut : {12, 15, 18}) {
    AutoSampler resumed(SingleObjective(seed, 15));
    History prefix(h.begin(), h.begin() + cut);
    History again = RunSequential(resumed, space, seed, 22 - cut, F, prefix);
    REQUIRE(again.size() == h.size());
    for (size_t i = static_cast<size_t>(cut); i < h.size(); ++i) {
      INFO("cut " << cut << ", trial " << i);
      CHECK(again[i].params == h[i].params);
    }
  }
  // The run used both delegates.
  CHECK(whole.Choose(History(h.begin(), h.begin() + 14)) == AutoDelegate::kGp);
  CHECK(whole.Choose(History(h.begin(), h.begin() + 15)) == AutoDelegate::kTpe);
}

}  // namespace
}  // namespace tune
