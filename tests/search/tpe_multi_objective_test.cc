// TPE with several objectives and with constraints (search/tpe_split.h):
// the below/above split on hand-worked histories (whole fronts, then the
// hypervolume subset selection on the front that does not fit), l(x)'s
// weights, constraints (feasible first, then by violation), the split
// against Optuna 5.0.0's _split_trials (golden/tpe_split_golden_optuna5.json,
// made by golden/make_tpe_split_golden.py), single-objective draws
// unchanged, determinism, and MOTPE against random search on ZDT1.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/pareto.h"
#include "search/random_sampler.h"
#include "search/tpe_sampler.h"
#include "search/tpe_split.h"
#include "tests/search/sampler_test_util.h"

namespace tune {
namespace {

using testing::MakeTrial;
using testing::Num;

Trial Completed(int number, std::vector<double> values, std::vector<double> constraints = {}) {
  Trial t = MakeTrial(number, TrialState::kCompleted, {});
  t.values = std::move(values);
  t.constraints = std::move(constraints);
  return t;
}

Trial Single(int number, double value, std::vector<double> constraints = {}) {
  Trial t = MakeTrial(number, TrialState::kCompleted, {}, value);
  t.constraints = std::move(constraints);
  return t;
}

TpeSamplerOptions Objectives(std::vector<bool> maximize) {
  TpeSamplerOptions o;
  o.objectives_maximize = std::move(maximize);
  return o;
}

// The numbers of the trials that TpeSplitter puts below (and checks that
// every other ranked trial is above).
std::set<int> Below(const History& history, const TpeSamplerOptions& options, int* n = nullptr) {
  TpeSplitter splitter(options);
  TpeGroups groups;
  splitter.Split(history, &groups);
  REQUIRE(groups.group.size() == history.size());
  std::set<int> below;
  for (size_t i = 0; i < history.size(); ++i)
    if (groups.group[i] == 1) below.insert(history[i].number);
  if (n) *n = groups.n;
  return below;
}

TEST_CASE("gamma, l(x)'s weights, the HSSP reference point and violations follow Optuna 5.0", "[tpe][mo]") {
  CHECK(DefaultGammaMultiObjective(0) == 0);
  CHECK(DefaultGammaMultiObjective(1) == 1);
  CHECK(DefaultGammaMultiObjective(11) == 2);
  CHECK(DefaultGammaMultiObjective(1000) == 100);  // no cap at 25
  CHECK(DefaultGamma(1000) == 25);
  // One objective: Optuna's default_weights; several: ones.
  CHECK(BelowWeights(30, false) == DefaultWeights(30));
  CHECK(BelowWeights(30, false).front() < 1);
  CHECK(BelowWeights(30, true) == std::vector<double>(30, 1.0));
  CHECK(BelowWeights(3, true) == std::vector<double>(3, 1.0));
  // _get_reference_point: the worst of each objective, 10% further out
  // whatever its sign, and EPS for 0.
  Losses ref = HsspReferencePoint({{1, -2, 0}, {3, -4, 0}});
  CHECK(ref[0] == Approx(3.3));
  CHECK(ref[1] == Approx(-1.8));
  CHECK(ref[2] == 1e-12);
  Trial t;
  CHECK(ConstraintViolation(t) == 0);
  t.constraints = {-1, 0.5, 0, 2};
  CHECK(ConstraintViolation(t) == 2.5);
  t.constraints = {-1, std::nan("")};
  CHECK(std::isinf(ConstraintViolation(t)));
}

// 30 completed trials (3 below): the front {(0,0)} fits; the next front
// {(1,6), (2,3.5), (3,2), (6,1.5)} does not, and greedy HSSP with reference
// point 1.1 * (6, 6) = (6.6, 6.6) takes (3,2) first (contribution 3.6 * 4.6
// = 16.56, against 4.6 * 3.1 = 14.26 for (2,3.5), 3.36 for (1,6) and 3.06
// for (6,1.5)), then (2,3.5) (exclusive box [2,3] x [3.5,6.6] = 3.1, against
// 1.2 for (1,6) and 0.3 for (6,1.5)), then (1,6) (0.6 against 0.3).
History TwoObjectiveHistory(bool maximize_second) {
  const double s = maximize_second ? -1 : 1;
  History h;
  const std::vector<std::vector<double>> front = {{1, 6}, {2, 3.5}, {3, 2}, {6, 1.5}};
  for (const auto& p : front) h.push_back(Completed(static_cast<int>(h.size()), {p[0], s * p[1]}));
  h.push_back(Completed(static_cast<int>(h.size()), {0, 0}));
  while (h.size() < 30) {
    const double k = static_cast<double>(h.size());
    h.push_back(Completed(static_cast<int>(h.size()), {10 + k, s * (40 - k)}));
  }
  return h;
}

TEST_CASE("2 objectives: whole fronts go below, HSSP picks from the front that does not fit", "[tpe][mo]") {
  for (bool maximize_second : {false, true}) {
    INFO("second objective maximised " << maximize_second);
    History h = TwoObjectiveHistory(maximize_second);
    int n = 0;
    CHECK(Below(h, Objectives({false, maximize_second}), &n) == std::set<int>{1, 2, 4});
    CHECK(n == 30);
  }
}

TEST_CASE("2 objectives: gamma's n counts pruned trials, which follow the completed ones", "[tpe][mo]") {
  History h = TwoObjectiveHistory(false);
  h.push_back(MakeTrial(30, TrialState::kRunning, {}));
  h.push_back(MakeTrial(31, TrialState::kFailed, {}));
  Trial pruned = MakeTrial(32, TrialState::kPruned, {});
  pruned.intermediate[5] = -100;
  h.push_back(pruned);
  // n = 31 (the running and failed trials do not count), n_below =
  // ceil(3.1) = 4 completed trials (every completed one ranks before a
  // pruned one): (0,0), then 3 of the second front.
  int n = 0;
  CHECK(Below(h, Objectives({false, false}), &n) == std::set<int>{0, 1, 2, 4});
  CHECK(n == 31);
  // A completed trial without every objective is not counted.
  Trial partial = Completed(33, {0.5});
  h.push_back(partial);
  CHECK(Below(h, Objectives({false, false}), &n) == std::set<int>{0, 1, 2, 4});
  CHECK(n == 31);
}

TEST_CASE("several objectives: pruned trials rank by the deepest step, running ones stay above", "[tpe][mo]") {
  // 3 completed trials, 7 pruned, 2 running: n = 10.
  History h;
  h.push_back(Completed(0, {1, 2}));
  h.push_back(Completed(1, {2, 1}));
  h.push_back(Completed(2, {3, 3}));
  const int steps[] = {4, 9, 9, 1, 7, 3, 9};
  for (int k = 0; k < 7; ++k) {
    Trial t = MakeTrial(3 + k, TrialState::kPruned, {});
    // The value is that of the objective early stopping ranks on: unused.
    t.intermediate[steps[k]] = 10.0 - k;
    h.push_back(t);
  }
  h.push_back(MakeTrial(10, TrialState::kRunning, {}));
  h.push_back(MakeTrial(11, TrialState::kPaused, {}));
  TpeSamplerOptions o = Objectives({false, false});
  o.gamma = 0.5;
  int n = 0;
  // 5 below: the 3 completed, then the pruned at step 9 with the lowest
  // numbers (4 and 5; 9 is the third).
  CHECK(Below(h, o, &n) == std::set<int>{0, 1, 2, 4, 5});
  CHECK(n == 10);
  o.gamma = 1.0;  // every ranked trial below, the running ones never
  CHECK(Below(h, o).size() == 10);
}

// 30 completed trials (3 below): (0,0,0) alone on the first front; the
// second {a=(1,4,4), b=(4,1.2,4), c=(4,4,1), d=(2,2,5)} does not fit.
// Reference 1.1 * (4, 4, 5) = (4.4, 4.4, 5.5). Alone: a 3.4*0.4*1.5 = 2.04,
// b 0.4*3.2*1.5 = 1.92, c 0.4*0.4*4.5 = 0.72, d 2.4*2.4*0.5 = 2.88: d first.
// Then a 2.04 - 0.48 (its overlap with d, 2.4*0.4*0.5) = 1.56, b 1.92 - 0.48
// = 1.44, c 0.72 - 0.08 = 0.64: a.
TEST_CASE("3 objectives: whole fronts, then HSSP", "[tpe][mo]") {
  History h;
  h.push_back(Completed(0, {4, 1.2, 4}));  // b
  h.push_back(Completed(1, {1, 4, 4}));    // a
  h.push_back(Completed(2, {4, 4, 1}));    // c
  h.push_back(Completed(3, {0, 0, 0}));
  h.push_back(Completed(4, {2, 2, 5}));    // d
  while (h.size() < 30) {
    const double k = static_cast<double>(h.size());
    h.push_back(Completed(static_cast<int>(h.size()), {10 + k, 40 - k, 5 + k}));
  }
  CHECK(Below(h, Objectives({false, false, false})) == std::set<int>{1, 3, 4});
  // The same with the third objective maximised and its values negated.
  for (Trial& t : h) t.values[2] = -t.values[2];
  CHECK(Below(h, Objectives({false, false, true})) == std::set<int>{1, 3, 4});
}

TEST_CASE("constraints: infeasible trials are below only when feasible ones run out, by violation", "[tpe][constraints]") {
  SECTION("one objective") {
    // 20 completed (2 below): the 8 infeasible ones have the best values.
    History h;
    for (int i = 0; i < 8; ++i) h.push_back(Single(i, i, {-1, 0.5 + i}));
    for (int i = 8; i < 20; ++i) h.push_back(Single(i, 100 - i, {-1, 0}));
    CHECK(Below(h, TpeSamplerOptions{}) == std::set<int>{18, 19});
    // One feasible trial left: the other one below is the least violating
    // infeasible one (violation 0.1 + 0.2 against 0.5 + i and 3.25).
    for (int i = 9; i < 20; ++i) h[i].constraints = {3, 0.25};
    h[5].constraints = {0.1, 0.2};
    CHECK(Below(h, TpeSamplerOptions{}) == std::set<int>{5, 8});
    // A pruned feasible trial ranks before every infeasible one.
    Trial pruned = MakeTrial(20, TrialState::kPruned, {});
    pruned.intermediate[1] = 1000;
    h.push_back(pruned);
    h.push_back(Single(21, 0, {std::nan("")}));  // NaN: infinitely violated
    h.push_back(Single(22, 0, {-2}));
    h.push_back(Single(23, 0, {-2}));
    int n = 0;
    CHECK(Below(h, TpeSamplerOptions{}, &n) == std::set<int>{8, 22, 23});  // n = 24: 3 below
    CHECK(n == 24);
    TpeSamplerOptions o;
    o.gamma = 0.25;  // 6 below: 3 feasible completed, the pruned one, then by violation
    CHECK(Below(h, o) == std::set<int>{8, 22, 23, 20, 5, 0});
  }
  SECTION("two objectives") {
    History h = TwoObjectiveHistory(false);
    // The first front made infeasible: the three below come from the rest.
    h[4].constraints = {1};
    h[2].constraints = {0.5};
    for (size_t i = 0; i < h.size(); ++i)
      if (h[i].constraints.empty()) h[i].constraints = {-1};
    CHECK(Below(h, Objectives({false, false})) == std::set<int>{0, 1, 3});
    // All but two infeasible: those two, then the least violating one.
    for (size_t i = 0; i < h.size(); ++i) h[i].constraints = {1.0 + static_cast<double>(i)};
    h[7].constraints = {-1};
    h[9].constraints = {0};
    h[20].constraints = {0.5};
    CHECK(Below(h, Objectives({false, false})) == std::set<int>{7, 9, 20});
  }
}

TEST_CASE("the split matches Optuna 5.0.0's _split_trials", "[tpe][mo][golden]") {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/tests/search/golden/tpe_split_golden_optuna5.json");
  REQUIRE(in);
  const nlohmann::json golden = nlohmann::json::parse(in);
  REQUIRE(golden["optuna"] == "5.0.0");
  REQUIRE(golden["cases"].size() >= 8);
  for (const auto& c : golden["cases"]) {
    INFO(c["name"].get<std::string>());
    const std::vector<bool> maximize = c["maximize"].get<std::vector<bool>>();
    TpeSamplerOptions o;
    if (maximize.size() > 1)
      o.objectives_maximize = maximize;
    else
      o.maximize = maximize[0];
    History h;
    for (const auto& jt : c["trials"]) {
      const std::string state = jt["state"];
      Trial t = MakeTrial(jt["number"], *ParseTrialState(state == "complete" ? "completed" : state), {});
      if (jt.contains("values")) {
        const std::vector<double> values = jt["values"].get<std::vector<double>>();
        if (maximize.size() > 1)
          t.values = values;
        else
          t.value = values[0];
      }
      if (jt.contains("intermediate"))
        for (const auto& sv : jt["intermediate"]) t.intermediate[sv[0].get<int64_t>()] = sv[1].get<double>();
      if (jt.contains("constraints")) t.constraints = jt["constraints"].get<std::vector<double>>();
      h.push_back(t);
    }
    const std::vector<int> expected = c["below"].get<std::vector<int>>();
    CHECK(Below(h, o) == std::set<int>(expected.begin(), expected.end()));
  }
}

// A fixed mixed history (completed, pruned with intermediate values,
// failed and running trials) and what TpeSampler suggested for it before
// it learnt several objectives and constraints (recorded from that code):
// without constraints the single-objective draws must not change.
SearchSpace FixedSpace() {
  SearchSpace s;
  s["x"] = FloatDistribution{0.0, 1.0, false, std::nullopt};
  s["y"] = FloatDistribution{1e-3, 1.0, true, std::nullopt};
  s["n"] = IntDistribution{1, 8, false, 1};
  s["c"] = CategoricalDistribution{
      {ParamValue(std::string("a")), ParamValue(std::string("b")), ParamValue(std::string("c"))}, false};
  return s;
}

double Frac(double v) { return v - std::floor(v); }

History FixedHistory(int n_trials) {
  History h;
  const char* choices[] = {"a", "b", "c"};
  for (int i = 0; i < n_trials; ++i) {
    Trial t;
    t.id = i + 1;
    t.number = i;
    const double u1 = Frac(0.6180339887498949 * (i + 1)), u2 = Frac(0.7548776662466927 * (i + 1) + 0.1);
    const double u3 = Frac(0.5698402909980532 * (i + 1) + 0.3);
    const int n = 1 + static_cast<int>(u3 * 8) % 8;
    t.params["x"] = u1;
    t.params["y"] = std::exp(std::log(1e-3) * (1 - u2));
    t.params["n"] = static_cast<int64_t>(n);
    t.params["c"] = std::string(choices[i % 3]);
    const double v = std::pow(u1 - 0.3, 2) + std::pow(u2 - 0.6, 2) + 0.01 * (i % 3) + 0.005 * n;
    if (i >= n_trials - 3) {
      t.state = TrialState::kRunning;
    } else if (i % 13 == 7) {
      t.state = TrialState::kFailed;
    } else if (i % 11 == 5) {
      t.state = TrialState::kPruned;
      t.intermediate[0] = 2 * v;
      t.intermediate[1 + i % 3] = v;
    } else {
      t.state = TrialState::kCompleted;
      t.value = v;
    }
    h.push_back(t);
  }
  return h;
}

struct Recorded {
  int n_trials, mode, seed;
  double x, y;
  int64_t n;
  const char* c;
};

// mode 0: defaults; 1: univariate; 2: independent_choices false; 3: maximize.
const Recorded kRecorded[] = {
    {30, 0, 0, 0.12787195077351615, 0.0285182426420247, 3, "b"},
    {30, 0, 1, 0.13798657957455598, 0.027573662847575276, 4, "b"},
    {30, 0, 2, 0.22132020166000568, 0.049758060795432643, 4, "b"},
    {30, 1, 0, 0.18118287152277188, 0.043644566689982865, 3, "b"},
    {30, 1, 1, 0.2000970450123149, 0.054069253243267577, 4, "b"},
    {30, 1, 2, 0.19990699785704319, 0.055041388842808278, 4, "b"},
    {30, 2, 0, 0.38178366009552644, 0.059415358964311604, 4, "b"},
    {30, 2, 1, 0.34577974852093252, 0.050606392473780702, 6, "b"},
    {30, 2, 2, 0.10062863046044061, 0.02578878468248769, 3, "b"},
    {30, 3, 0, 0.95832118483576201, 0.0037925101582913291, 2, "c"},
    {30, 3, 1, 0.85105573225725617, 0.0044330773818880478, 4, "c"},
    {30, 3, 2, 0.90357758436269564, 0.0038733640920486099, 7, "c"},
    {63, 0, 0, 0.33106463659052643, 0.045937277854187775, 8, "b"},
    {63, 0, 1, 0.11862946591411891, 0.056944082795582829, 8, "b"},
    {63, 0, 2, 0.24327520810980202, 0.032001497347745031, 3, "b"},
    {63, 1, 0, 0.17685471164493788, 0.025683044257582447, 4, "b"},
    {63, 1, 1, 0.18170067869187517, 0.026188151284847819, 4, "b"},
    {63, 1, 2, 0.17868250737437358, 0.020855817696408593, 4, "b"},
    {63, 2, 0, 0.18194120326724514, 0.034156711920002095, 8, "a"},
    {63, 2, 1, 0.12444623105715133, 0.042587403136436719, 8, "a"},
    {63, 2, 2, 0.14700199167634342, 0.025063048595594127, 8, "a"},
    {63, 3, 0, 0.86295432089714552, 0.0012246060414856273, 4, "a"},
    {63, 3, 1, 0.89475703098920656, 0.0013409112597163638, 7, "a"},
    {63, 3, 2, 0.83908322589779682, 0.0011462224860497772, 8, "a"},
};

TEST_CASE("one objective without constraints: the same draws as before constraints existed", "[tpe][constraints]") {
  const SearchSpace space = FixedSpace();
  for (const Recorded& r : kRecorded) {
    INFO("trials " << r.n_trials << " mode " << r.mode << " seed " << r.seed);
    const History h = FixedHistory(r.n_trials);
    TpeSamplerOptions o;
    o.seed = static_cast<uint64_t>(r.seed);
    if (r.mode == 1) o.multivariate = false;
    if (r.mode == 2) o.independent_choices = false;
    if (r.mode == 3) o.maximize = true;
    TpeSampler sampler(o);
    sampler.Reseed(TrialSeed(o.seed, r.n_trials));
    const ParamMap p = SampleTrial(sampler, space, h);
    CHECK(std::get<double>(p.at("x")) == r.x);
    CHECK(std::get<double>(p.at("y")) == r.y);
    CHECK(std::get<int64_t>(p.at("n")) == r.n);
    CHECK(std::get<std::string>(p.at("c")) == r.c);
  }
}

// ZDT1 on 3 parameters: f1 = x0, f2 = g (1 - sqrt(f1 / g)), g = 1 + 9 mean(x1, x2).
std::vector<double> Zdt1(const ParamMap& p) {
  const double x0 = Num(p.at("x0")), x1 = Num(p.at("x1")), x2 = Num(p.at("x2"));
  const double g = 1 + 9 * (x1 + x2) / 2;
  return {x0, g * (1 - std::sqrt(x0 / g))};
}

SearchSpace Cube3() {
  SearchSpace s;
  for (const char* name : {"x0", "x1", "x2"}) s[name] = FloatDistribution{0.0, 1.0, false, std::nullopt};
  return s;
}

// Runs n trials of `sampler` on ZDT1 as the tuner does; every third trial
// is infeasible when `constrained` (x0 > 0.8: constraint x0 - 0.8).
History RunZdt1(Sampler& sampler, uint64_t seed, int n, bool constrained = false) {
  const SearchSpace space = Cube3();
  History h;
  for (int i = 0; i < n; ++i) {
    sampler.Reseed(TrialSeed(seed, i));
    Trial t = MakeTrial(i, TrialState::kCompleted, SampleTrial(sampler, space, h));
    t.values = Zdt1(t.params);
    if (constrained) t.constraints = {Num(t.params.at("x0")) - 0.8};
    h.push_back(std::move(t));
  }
  return h;
}

double Zdt1Hypervolume(const History& h) {
  std::vector<Losses> points;
  for (const Trial& t : h)
    if (IsFeasible(t)) points.push_back(t.values);
  return Hypervolume(points, {1.1, 11});
}

TEST_CASE("the same history and seed give the same multi-objective suggestion (resume)", "[tpe][mo]") {
  TpeSamplerOptions o = Objectives({false, false});
  o.seed = 3;
  TpeSampler a(o);
  const History h = RunZdt1(a, 3, 40, true);
  // A fresh sampler (resume) and the one that made the history agree.
  TpeSampler b(o);
  for (int number : {40, 41}) {
    a.Reseed(TrialSeed(3, number));
    b.Reseed(TrialSeed(3, number));
    const ParamMap pa = SampleTrial(a, Cube3(), h);
    const ParamMap pb = SampleTrial(b, Cube3(), h);
    CHECK(pa == pb);
  }
  // A copy of the history (other addresses, same trials) too.
  const History copy = h;
  b.Reseed(TrialSeed(3, 40));
  a.Reseed(TrialSeed(3, 40));
  CHECK(SampleTrial(a, Cube3(), h) == SampleTrial(b, Cube3(), copy));
}

TEST_CASE("MOTPE beats random search on ZDT1 in hypervolume after 200 trials", "[tpe][mo][slow]") {
  // The options' defaults, univariate, and Optuna 5.0's own defaults with
  // several objectives (univariate, 24 candidates).
  for (int config = 0; config < 3; ++config) {
    INFO("config " << config);
    double tpe_sum = 0, random_sum = 0;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      TpeSamplerOptions o = Objectives({false, false});
      o.seed = seed;
      o.multivariate = config == 0;
      if (config == 2) o.n_ei_candidates_numerical = 0;
      TpeSampler tpe(o);
      RandomSampler random(seed);
      const double hv_tpe = Zdt1Hypervolume(RunZdt1(tpe, seed, 200));
      const double hv_random = Zdt1Hypervolume(RunZdt1(random, seed, 200));
      INFO("seed " << seed << ": TPE " << hv_tpe << " random " << hv_random);
      CHECK(hv_tpe > hv_random);
      tpe_sum += hv_tpe;
      random_sum += hv_random;
    }
    CHECK(tpe_sum > random_sum);
  }
}

TEST_CASE("MOTPE with a constraint keeps to the feasible region", "[tpe][mo][constraints]") {
  TpeSamplerOptions o = Objectives({false, false});
  o.seed = 7;
  TpeSampler tpe(o);
  const History h = RunZdt1(tpe, 7, 120, true);
  int infeasible_late = 0;
  for (int i = 60; i < 120; ++i) infeasible_late += !IsFeasible(h[i]);
  // Random search would put ~12 of 60 there (x0 > 0.8).
  CHECK(infeasible_late < 6);
}

}  // namespace
}  // namespace tune
