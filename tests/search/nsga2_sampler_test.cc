// Nsga2Sampler (search/nsga2_sampler.h): generation 0 at random, the parent
// populations of a small table worked out from Optuna 5.0's rules
// (optuna/samplers/nsgaii/_elite_population_selection_strategy.py,
// _crossover.py, _child_generation_strategy.py), tournaments, crossover and
// mutation with their probabilities forced, constrained dominance, and
// resume safety.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "search/nsga2_sampler.h"
#include "tests/search/sampler_test_util.h"

namespace tune {
namespace {

using testing::MakeTrial;
using testing::Num;

Nsga2SamplerOptions Options(int population, std::vector<bool> maximize = {false, false}) {
  Nsga2SamplerOptions o;
  o.population_size = population;
  o.maximize = std::move(maximize);
  return o;
}

Trial Done(int number, std::vector<double> values, std::vector<double> constraints = {}) {
  // Parameters that name the trial: x = number + 0.25, n = 10 * number,
  // c = the number-th letter.
  ParamMap p;
  p["x"] = number + 0.25;
  p["n"] = int64_t{10} * number;
  p["c"] = std::string(1, static_cast<char>('a' + number));
  Trial t = MakeTrial(number, TrialState::kCompleted, p);
  t.values = std::move(values);
  t.constraints = std::move(constraints);
  return t;
}

SearchSpace Space() {
  SearchSpace s;
  s["x"] = FloatDistribution{0, 20, false, std::nullopt};
  s["n"] = IntDistribution{0, 200, false, 1};
  std::vector<ParamValue> letters;
  for (char ch = 'a'; ch <= 'z'; ++ch) letters.push_back(std::string(1, ch));
  s["c"] = CategoricalDistribution{letters, false};
  return s;
}

// Population 4. Generation 0: t0..t3, generation 1: t4..t7 (minimise both).
//   t0 (1,9)  t1 (2,10)  t2 (6,7)  t3 (9,1)
//   t4 (3,5)  t5 (5,6)   t6 (11,11) t7 (10,2)
// Parents of generation 1: the elite 4 of t0..t3: all of them.
// Parents of generation 2: elite of t4..t7 then t0..t3: front 0 = t4 t0 t3
// (3 < 4, all in); front 1 = t5 t7 t1 (t5 by t4, t7 by t3, t1 by t0) is cut
// to 1 by crowding distance: t5 gets 1 + 1, t7 and t1 infinity; sorted by
// objective 1 last the front reads t7 t5 t1, by distance (stable) t5 t7
// t1, reversed t1 t7 t5: t1. Front 2 = t2 t6. Parents: t0 t1 t3 t4.
History Table() {
  return {Done(0, {1, 9}), Done(1, {2, 10}), Done(2, {6, 7}), Done(3, {9, 1}),
          Done(4, {3, 5}), Done(5, {5, 6}),  Done(6, {11, 11}), Done(7, {10, 2})};
}

TEST_CASE("Nsga2Sampler: generation 0 is drawn at random, within bounds", "[search][nsga2]") {
  SearchSpace space;
  space["lr"] = FloatDistribution{1e-5, 1e-1, true, std::nullopt};
  space["x"] = FloatDistribution{-1, 1, false, 0.25};
  space["r"] = IntDistribution{4, 64, false, 4};
  space["opt"] = CategoricalDistribution{{std::string("adam"), std::string("sgd"), int64_t{3}}, false};
  Nsga2Sampler sampler(Options(4));
  History h = {Done(0, {1, 1}), Done(1, {2, 2})};  // the next trial, 2, is in generation 0
  std::set<double> lrs;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    sampler.Reseed(seed);
    CHECK(sampler.SampleRelative(sampler.RelativeSpace(space, h), h).empty());
    ParamMap p = SampleTrial(sampler, space, h);
    for (const auto& [name, dist] : space) CHECK(Contains(dist, p.at(name)));
    lrs.insert(std::get<double>(p.at("lr")));
  }
  CHECK(lrs.size() == 200);
  CHECK(*lrs.begin() < 1e-4);   // log-uniform reaches the low decades
  CHECK(*lrs.rbegin() > 1e-2);
  CHECK(sampler.ParentPopulation(h, 0).empty());
}

TEST_CASE("Nsga2Sampler: generations and parent populations of the table", "[search][nsga2]") {
  Nsga2Sampler sampler(Options(4));
  History h = Table();
  CHECK(sampler.Generation(3) == 0);
  CHECK(sampler.Generation(4) == 1);
  CHECK(sampler.Generation(8) == 2);
  CHECK(sampler.ParentPopulation(h, 1) == std::vector<int>{0, 1, 2, 3});
  CHECK(sampler.ParentPopulation(h, 2) == std::vector<int>{0, 1, 3, 4});

  SECTION("a maximised objective: the same fronts, but crowding ties read the raw values") {
    // Objective 1 negated and maximised: the losses are the same; the raw
    // values of front 1 sort t1 t5 t7, so by distance t5 t1 t7, reversed
    // t7 t1 t5: t7 survives instead of t1 (as in Optuna).
    History m = h;
    for (Trial& t : m) t.values[1] = -t.values[1];
    Nsga2Sampler max_sampler(Options(4, {false, true}));
    CHECK(max_sampler.ParentPopulation(m, 2) == std::vector<int>{0, 3, 4, 7});
  }
  SECTION("pruned, failed and running trials are never parents") {
    // t4 pruned: front 0 = t5 t0 t3, front 1 = t7 t1 t2, where t2 gets
    // 1 + 1 and t1 survives (t7 t2 t1 by objective 1, reversed t1 t7 t2).
    History p = h;
    p[4].state = TrialState::kPruned;
    CHECK(sampler.ParentPopulation(p, 2) == std::vector<int>{0, 1, 3, 5});
    p[4].state = TrialState::kRunning;
    CHECK(sampler.ParentPopulation(p, 2) == std::vector<int>{0, 1, 3, 5});
    p[4].state = TrialState::kFailed;
    CHECK(sampler.ParentPopulation(p, 2) == std::vector<int>{0, 1, 3, 5});
    // A completed trial without every objective does not count either.
    p[4].state = TrialState::kCompleted;
    p[4].values = {3};
    CHECK(sampler.ParentPopulation(p, 2) == std::vector<int>{0, 1, 3, 5});
    // Completed again: the cache follows.
    CHECK(sampler.ParentPopulation(h, 2) == std::vector<int>{0, 1, 3, 4});
  }
  SECTION("a generation with no completed trial passes its parents on") {
    History f = h;
    for (int i = 4; i < 8; ++i) f[static_cast<size_t>(i)].state = TrialState::kFailed;
    Nsga2Sampler fresh(Options(4));
    CHECK(fresh.ParentPopulation(f, 2) == std::vector<int>{0, 1, 2, 3});
    CHECK(fresh.ParentPopulation(f, 3) == std::vector<int>{0, 1, 2, 3});
  }
  SECTION("constraints: infeasible trials rank after every feasible one") {
    // t0 (0.5) and t4 (0.1) infeasible. Feasible fronts: t5 t1 t3, then
    // t7 t2 (cut to one: both infinite, t7 t2 by objective 1, reversed:
    // t2), then t6; t4 and t0 after them.
    History c = h;
    for (Trial& t : c) t.constraints = {-1.0};
    c[0].constraints = {0.5};
    c[4].constraints = {0.1};
    CHECK(sampler.ParentPopulation(c, 1) == std::vector<int>{0, 1, 2, 3});
    CHECK(sampler.ParentPopulation(c, 2) == std::vector<int>{1, 2, 3, 5});
  }
}

TEST_CASE("Nsga2Sampler: parent populations match Optuna 5.0.0's NSGAIISampler", "[search][nsga2][golden]") {
  // golden/nsga2_golden_optuna5.json (made by golden/make_nsga2_golden.py):
  // random histories full of ties, random directions, constraints in half.
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/tests/search/golden/nsga2_golden_optuna5.json");
  REQUIRE(in.good());
  const nlohmann::json golden = nlohmann::json::parse(in);
  REQUIRE(golden["cases"].size() >= 50);
  int index = 0;
  for (const auto& c : golden["cases"]) {
    INFO("case " << index++);
    Nsga2SamplerOptions o;
    o.population_size = c["population_size"].get<int>();
    o.maximize = c["maximize"].get<std::vector<bool>>();
    auto values = c["values"].get<std::vector<std::vector<double>>>();
    auto constraints = c["constraints"].get<std::vector<std::vector<double>>>();
    History h;
    for (size_t i = 0; i < values.size(); ++i) {
      Trial t = MakeTrial(static_cast<int>(i), TrialState::kCompleted, {});
      t.values = values[i];
      if (!constraints.empty()) t.constraints = constraints[i];
      h.push_back(t);
    }
    Nsga2Sampler sampler(o);
    auto parents = c["parents"].get<std::vector<std::vector<int>>>();
    for (size_t g = 0; g < parents.size(); ++g)
      CHECK(sampler.ParentPopulation(h, static_cast<int>(g) + 1) == parents[g]);
  }
}

TEST_CASE("Nsga2Sampler: the binary tournament rule", "[search][nsga2]") {
  const std::vector<bool> min2 = {false, false};
  CHECK(FirstWinsTournament({1, 1}, {}, {2, 2}, {}, min2, false));
  CHECK_FALSE(FirstWinsTournament({2, 2}, {}, {1, 1}, {}, min2, false));
  CHECK_FALSE(FirstWinsTournament({1, 3}, {}, {3, 1}, {}, min2, false));  // neither: the second
  CHECK_FALSE(FirstWinsTournament({1, 1}, {}, {1, 1}, {}, min2, false));
  CHECK(FirstWinsTournament({1, 5}, {}, {1, 3}, {}, {false, true}, false));
  // Constrained: feasible first, then the smaller summed violation.
  CHECK(FirstWinsTournament({9, 9}, {0, -1}, {1, 1}, {0.5, -1}, min2, true));
  CHECK_FALSE(FirstWinsTournament({1, 1}, {0.5}, {9, 9}, {0}, min2, true));
  CHECK(FirstWinsTournament({9, 9}, {0.2, 0.2}, {1, 1}, {0.5, -3}, min2, true));
  CHECK_FALSE(FirstWinsTournament({1, 1}, {0.3, 0.3}, {9, 9}, {0.5, -3}, min2, true));
  CHECK(FirstWinsTournament({1, 1}, {0}, {2, 2}, {-1}, min2, true));
}

// The trial whose parameters `p` are, or -1 if they mix trials.
int SourceOf(const ParamMap& p) {
  int from_x = static_cast<int>(std::floor(std::get<double>(p.at("x"))));
  if (std::get<int64_t>(p.at("n")) != 10 * from_x) return -1;
  if (std::get<std::string>(p.at("c")) != std::string(1, static_cast<char>('a' + from_x))) return -1;
  return from_x;
}

TEST_CASE("Nsga2Sampler: a child with crossover and mutation forced", "[search][nsga2]") {
  History h = Table();  // the next trial, 8, is in generation 2: parents t0 t1 t3 t4
  SearchSpace space = Space();
  const std::set<int> parents = {0, 1, 3, 4};

  SECTION("no crossover, no mutation: a copy of a parent drawn uniformly") {
    Nsga2SamplerOptions o = Options(4);
    o.crossover_prob = 0;
    o.mutation_prob = 0;
    Nsga2Sampler sampler(o);
    std::map<int, int> count;
    for (uint64_t seed = 0; seed < 2000; ++seed) {
      sampler.Reseed(seed);
      ParamMap p = sampler.SampleRelative(sampler.RelativeSpace(space, h), h);
      REQUIRE(p.size() == 3);
      int from = SourceOf(p);
      REQUIRE(parents.count(from));
      ++count[from];
    }
    for (int t : parents) CHECK(count[t] == Approx(500).margin(100));
  }
  SECTION("crossover with swapping 1: the first parent, the tournament's winner") {
    // Among t0 (1,9), t1 (2,10), t3 (9,1), t4 (3,5) only t0 dominates t1:
    // the winner is the second candidate except for (t0, t1), so t0 wins
    // 4/16 + 1/16, t1 4/16 - 1/16, t3 and t4 4/16.
    Nsga2SamplerOptions o = Options(4);
    o.crossover_prob = 1;
    o.swapping_prob = 1;
    o.mutation_prob = 0;
    Nsga2Sampler sampler(o);
    std::map<int, int> count;
    const int n = 4000;
    for (uint64_t seed = 0; seed < n; ++seed) {
      sampler.Reseed(seed);
      int from = SourceOf(sampler.SampleRelative(sampler.RelativeSpace(space, h), h));
      REQUIRE(parents.count(from));
      ++count[from];
    }
    CHECK(count[0] == Approx(n * 5.0 / 16).margin(120));
    CHECK(count[1] == Approx(n * 3.0 / 16).margin(120));
    CHECK(count[3] == Approx(n * 4.0 / 16).margin(120));
    CHECK(count[4] == Approx(n * 4.0 / 16).margin(120));
  }
  SECTION("crossover with swapping 0.5: every parameter from one of two distinct parents") {
    Nsga2SamplerOptions o = Options(4);
    o.crossover_prob = 1;
    o.mutation_prob = 0;
    Nsga2Sampler sampler(o);
    int mixed = 0;
    for (uint64_t seed = 0; seed < 500; ++seed) {
      sampler.Reseed(seed);
      ParamMap p = sampler.SampleRelative(sampler.RelativeSpace(space, h), h);
      std::set<int> from = {static_cast<int>(std::floor(std::get<double>(p.at("x")))),
                            static_cast<int>(std::get<int64_t>(p.at("n")) / 10),
                            std::get<std::string>(p.at("c"))[0] - 'a'};
      for (int t : from) CHECK(parents.count(t));
      CHECK(from.size() <= 2);
      if (from.size() == 2) ++mixed;
    }
    // Each child mixes its two parents unless all three draws agree (1/4).
    CHECK(mixed == Approx(375).margin(50));
  }
  SECTION("mutation 1: every parameter left to SampleIndependent") {
    Nsga2SamplerOptions o = Options(4);
    o.mutation_prob = 1;
    Nsga2Sampler sampler(o);
    sampler.Reseed(3);
    CHECK(sampler.SampleRelative(sampler.RelativeSpace(space, h), h).empty());
  }
  SECTION("the default mutation probability is 1 / number of parameters") {
    Nsga2Sampler sampler(Options(4));
    size_t kept = 0;
    const int n = 3000;
    for (uint64_t seed = 0; seed < n; ++seed) {
      sampler.Reseed(seed);
      kept += sampler.SampleRelative(sampler.RelativeSpace(space, h), h).size();
    }
    CHECK(static_cast<double>(kept) / (3.0 * n) == Approx(2.0 / 3).margin(0.02));
  }
}

TEST_CASE("Nsga2Sampler: a parent population of one trial is crossed with itself", "[search][nsga2]") {
  History h = {Done(0, {1, 1})};
  h.push_back(MakeTrial(1, TrialState::kFailed, {}));
  Nsga2SamplerOptions o = Options(2);
  o.crossover_prob = 1;
  o.mutation_prob = 0;
  Nsga2Sampler sampler(o);
  SearchSpace space = Space();
  REQUIRE(sampler.ParentPopulation(h, 1) == std::vector<int>{0});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    sampler.Reseed(seed);
    CHECK(sampler.SampleRelative(sampler.RelativeSpace(space, h), h) == h[0].params);
  }
}

TEST_CASE("Nsga2Sampler: constrained dominance makes feasible parents win", "[search][nsga2]") {
  // Generation 0 of population 4; the next trial, 4, has all four as parents.
  // t0 and t1 are far better but infeasible (violations 1 and 2).
  History h = {Done(0, {0, 0}, {1}), Done(1, {0.1, 0.1}, {2}), Done(2, {5, 5}, {0}), Done(3, {6, 4}, {-1})};
  Nsga2SamplerOptions o = Options(4);
  o.crossover_prob = 1;
  o.swapping_prob = 1;  // the child is its first parent
  o.mutation_prob = 0;
  SearchSpace space = Space();
  auto count_feasible = [&](const History& history) {
    Nsga2Sampler sampler(o);
    REQUIRE(sampler.ParentPopulation(history, 1) == std::vector<int>{0, 1, 2, 3});
    int feasible = 0;
    for (uint64_t seed = 0; seed < 4000; ++seed) {
      sampler.Reseed(seed);
      int from = SourceOf(sampler.SampleRelative(sampler.RelativeSpace(space, history), history));
      if (from == 2 || from == 3) ++feasible;
    }
    return feasible;
  };
  // Constrained: an infeasible first parent only when both candidates are
  // infeasible (1/4).
  CHECK(count_feasible(h) == Approx(3000).margin(120));
  // The same objectives without constraints: t2 or t3 only when both
  // candidates are (1/4).
  History plain = h;
  for (Trial& t : plain) t.constraints.clear();
  CHECK(count_feasible(plain) == Approx(1000).margin(120));
}

// A 2-objective problem on Space(): x near 4 against x near 14, n and c as
// penalties.
std::vector<double> Objectives(const ParamMap& p) {
  double x = std::get<double>(p.at("x")), n = Num(p.at("n"));
  double c = std::get<std::string>(p.at("c"))[0] - 'a';
  return {(x - 4) * (x - 4) + n / 50 + c / 10, (x - 14) * (x - 14) + n / 50 + c / 5};
}

History Run(Nsga2Sampler& sampler, const SearchSpace& space, uint64_t seed, int n, History h = {}) {
  for (int i = 0; i < n; ++i) {
    int number = static_cast<int>(h.size());
    sampler.Reseed(TrialSeed(seed, number));
    ParamMap p = SampleTrial(sampler, space, h);
    Trial t = MakeTrial(number, TrialState::kCompleted, p);
    t.values = Objectives(p);
    if (number % 7 == 3) t.state = TrialState::kFailed, t.values.clear();
    h.push_back(std::move(t));
  }
  return h;
}

TEST_CASE("Nsga2Sampler: a child's parameters come from two parents except mutations", "[search][nsga2]") {
  SearchSpace space;
  for (const char* name : {"a", "b", "c", "d"}) space[name] = FloatDistribution{0, 1, false, std::nullopt};
  Nsga2Sampler sampler(Options(6));
  History h;
  int fresh = 0, total = 0;
  for (int number = 0; number < 120; ++number) {
    sampler.Reseed(TrialSeed(5, number));
    ParamMap p = SampleTrial(sampler, space, h);
    for (const auto& [name, dist] : space) REQUIRE(Contains(dist, p.at(name)));
    if (sampler.Generation(number) > 0) {
      std::vector<int> parent_numbers = sampler.ParentPopulation(h, sampler.Generation(number));
      REQUIRE_FALSE(parent_numbers.empty());
      // Which parents hold each value; values held by none were mutated.
      std::vector<std::set<int>> holders;
      for (const auto& [name, v] : p) {
        std::set<int> who;
        for (int q : parent_numbers)
          if (ParamEquals(h[static_cast<size_t>(q)].params.at(name), v)) who.insert(q);
        if (who.empty()) ++fresh;
        else holders.push_back(who);
        ++total;
      }
      bool two_cover = false;
      for (int a : parent_numbers)
        for (int b : parent_numbers) {
          bool all = true;
          for (const auto& who : holders) all = all && (who.count(a) || who.count(b));
          two_cover = two_cover || all;
        }
      CHECK(two_cover);
    }
    Trial t = MakeTrial(number, TrialState::kCompleted, p);
    double a = std::get<double>(p["a"]), b = std::get<double>(p["b"]);
    t.values = {a + b, 2 - a - b * b};
    h.push_back(std::move(t));
  }
  // Mutation 1/4 per parameter.
  CHECK(static_cast<double>(fresh) / total == Approx(0.25).margin(0.06));
}

TEST_CASE("Nsga2Sampler: the same seed and history give the same suggestion", "[search][nsga2]") {
  SearchSpace space = Space();
  Nsga2Sampler first(Options(6));
  History h = Run(first, space, 9, 40);
  // Generation 6 is well past the random one.
  first.Reseed(TrialSeed(9, 40));
  ParamMap a = SampleTrial(first, space, h);
  Nsga2Sampler fresh(Options(6));  // a resumed run: no cache
  fresh.Reseed(TrialSeed(9, 40));
  ParamMap b = SampleTrial(fresh, space, h);
  CHECK(a == b);
  CHECK(first.ParentPopulation(h, 6) == fresh.ParentPopulation(h, 6));

  SECTION("a trial that completes later changes the parents for both alike") {
    History running = h;
    running[32].state = TrialState::kRunning;  // generation 5
    Nsga2Sampler warm(Options(6));
    warm.ParentPopulation(h, 6);  // cached on the finished history
    for (const History* hist : {&running, &h, &running}) {
      Nsga2Sampler cold(Options(6));
      CHECK(warm.ParentPopulation(*hist, 6) == cold.ParentPopulation(*hist, 6));
      warm.Reseed(TrialSeed(9, 40));
      cold.Reseed(TrialSeed(9, 40));
      CHECK(SampleTrial(warm, space, *hist) == SampleTrial(cold, space, *hist));
    }
  }
  SECTION("a cache left by a shorter history is not reused past its generation") {
    Nsga2Sampler warm(Options(6));
    History changed = h;
    changed[8].values = {0, 0};  // generation 1: changes every later parent population
    warm.ParentPopulation(h, 6);
    warm.ParentPopulation(changed, 2);
    Nsga2Sampler cold(Options(6));
    CHECK(warm.ParentPopulation(changed, 6) == cold.ParentPopulation(changed, 6));
  }
}

TEST_CASE("Nsga2Sampler: distributions are respected over a run", "[search][nsga2]") {
  SearchSpace space;
  space["lr"] = FloatDistribution{1e-5, 1e-1, true, std::nullopt};
  space["x"] = FloatDistribution{-1, 1, false, 0.25};
  space["r"] = IntDistribution{4, 64, false, 4};
  space["k"] = IntDistribution{1, 1024, true, 1};
  space["opt"] = CategoricalDistribution{{std::string("adam"), std::string("sgd"), int64_t{3}}, false};
  space["fixed"] = CategoricalDistribution{{std::string("only")}, false};
  Nsga2Sampler sampler(Options(5, {false, true, false}));
  CHECK(sampler.RelativeSpace(space, {}).count("fixed") == 0);
  History h;
  for (int number = 0; number < 80; ++number) {
    sampler.Reseed(TrialSeed(2, number));
    ParamMap p = SampleTrial(sampler, space, h);
    for (const auto& [name, dist] : space) REQUIRE(Contains(dist, p.at(name)));
    Trial t = MakeTrial(number, TrialState::kCompleted, p);
    double lr = std::get<double>(p["lr"]);
    t.values = {std::log10(lr) + 3, Num(p["r"]) - Num(p["k"]) / 100, std::get<double>(p["x"])};
    h.push_back(std::move(t));
  }
  CHECK_FALSE(sampler.ParentPopulation(h, 15).empty());
}

TEST_CASE("Nsga2Sampler: one objective (Trial::value) works as Optuna's single-direction NSGA-II", "[search][nsga2]") {
  SearchSpace space;
  space["x"] = FloatDistribution{-5, 5, false, std::nullopt};
  space["y"] = FloatDistribution{-5, 5, false, std::nullopt};
  auto objective = [](const ParamMap& p) {
    double x = std::get<double>(p.at("x")), y = std::get<double>(p.at("y"));
    return x * x + y * y;
  };
  Nsga2Sampler sampler(Options(5, {}));
  History h = testing::RunSequential(sampler, space, 4, 40, objective);
  // Generation 8's parents are the 5 best so far (one objective: the
  // fronts are the values in order).
  std::vector<double> sorted;
  for (const Trial& t : h) sorted.push_back(*t.value);
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> parents = sampler.ParentPopulation(h, 8);
  REQUIRE(parents.size() == 5);
  for (int n : parents) CHECK(*h[static_cast<size_t>(n)].value <= sorted[4]);
  // Resumed: a fresh sampler suggests what the running one does.
  Nsga2Sampler fresh(Options(5, {}));
  sampler.Reseed(TrialSeed(4, 40));
  fresh.Reseed(TrialSeed(4, 40));
  CHECK(SampleTrial(sampler, space, h) == SampleTrial(fresh, space, h));
}

TEST_CASE("Nsga2Sampler: sampling cost at 200, 2000 and 10000 trials", "[.bench][nsga2]") {
  SearchSpace space = Space();
  for (int n : {200, 2000, 10000}) {
    Nsga2Sampler sampler(Options(50));
    History h = Run(sampler, space, 1, n);
    auto t0 = std::chrono::steady_clock::now();
    const int reps = 20;
    for (int r = 0; r < reps; ++r) {
      sampler.Reseed(TrialSeed(1, n));
      SampleTrial(sampler, space, h);
    }
    double warm = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
    t0 = std::chrono::steady_clock::now();
    Nsga2Sampler fresh(Options(50));
    fresh.Reseed(TrialSeed(1, n));
    SampleTrial(fresh, space, h);
    double cold = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cout << n << " trials: " << warm << " ms per suggestion (cached), " << cold
              << " ms for a fresh sampler (resume)\n";
  }
}

}  // namespace
}  // namespace tune
