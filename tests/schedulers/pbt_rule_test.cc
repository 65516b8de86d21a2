// The PBT rule (schedulers/pbt_rule.h) against tables worked out from Ray
// Tune's python/ray/tune/schedulers/pbt.py (_quantiles, _explore), and the
// fixes to it: rounding (ray#65747) and clamping (ray#11936).
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "schedulers/pbt_rule.h"

namespace tune {
namespace pbt {
namespace {

std::vector<Scored> Population(const std::vector<double>& scores) {
  std::vector<Scored> out;
  for (size_t i = 0; i < scores.size(); ++i) out.push_back({static_cast<TrialId>(100 + i), scores[i]});
  return out;
}

TEST_CASE("Quantile sizes follow Ray's _quantiles for n = 1..10", "[pbt]") {
  // int(math.ceil(n * q)), lowered to int(math.floor(n / 2)) when above
  // n / 2; no quantiles for n <= 1. Computed with Python 3.
  const std::vector<size_t> q25 = {0, 1, 1, 1, 2, 2, 2, 2, 3, 3};
  const std::vector<size_t> q50 = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5};
  for (size_t n = 1; n <= 10; ++n) {
    INFO("n = " << n);
    CHECK(QuantileSize(n, 0.25) == q25[n - 1]);
    CHECK(QuantileSize(n, 0.5) == q50[n - 1]);
    std::vector<double> scores;
    for (size_t i = 0; i < n; ++i) scores.push_back(static_cast<double>((i * 7) % n));  // a permutation
    QuantileSplit s = Quantiles(Population(scores), 0.25);
    CHECK(s.lower.size() == q25[n - 1]);
    CHECK(s.upper.size() == (n <= 1 ? 0 : q25[n - 1]));
  }
  // The same double arithmetic as Python: 25 * 0.28 is 7.000000000000001.
  CHECK(QuantileSize(25, 0.28) == 8);
  CHECK(QuantileSize(0, 0.25) == 0);
}

TEST_CASE("Quantiles: sorted by score, ties in add order, worst first", "[pbt]") {
  // Scores 3, 1, 4, 1, 5, 9, 2, 6 (larger is better): sorted ids
  // 101 (1), 103 (1), 106 (2), 100 (3), 102 (4), 104 (5), 107 (6), 105 (9).
  QuantileSplit s = Quantiles(Population({3, 1, 4, 1, 5, 9, 2, 6}), 0.25);
  CHECK(s.lower == std::vector<TrialId>{101, 103});
  CHECK(s.upper == std::vector<TrialId>{107, 105});
  s = Quantiles(Population({3, 1, 4, 1, 5, 9, 2, 6}), 0.5);
  CHECK(s.lower == std::vector<TrialId>{101, 103, 106, 100});
  CHECK(s.upper == std::vector<TrialId>{102, 104, 107, 105});
  // All tied: add order decides.
  s = Quantiles(Population({1, 1, 1, 1}), 0.25);
  CHECK(s.lower == std::vector<TrialId>{100});
  CHECK(s.upper == std::vector<TrialId>{103});
  // NaN is below every score.
  s = Quantiles(Population({0.5, NAN, -3, 2}), 0.25);
  CHECK(s.lower == std::vector<TrialId>{101});
  CHECK(s.upper == std::vector<TrialId>{103});
  // One trial: nothing (Ray returns [], []).
  s = Quantiles(Population({1}), 0.5);
  CHECK(s.lower.empty());
  CHECK(s.upper.empty());
  // q = 0: Python's trials[:0] and trials[-0:] - no one below, everyone above.
  s = Quantiles(Population({1, 2, 3}), 0);
  CHECK(s.lower.empty());
  CHECK(s.upper.size() == 3);
}

TEST_CASE("Integers are rounded after a factor, not truncated (ray#65747)", "[pbt]") {
  const Distribution d = IntDistribution{0, 1000, false, 1};
  struct Row {
    int64_t value;
    double factor;
    int64_t ours;
    int64_t ray;  // int(value * factor)
  };
  const std::vector<Row> table = {
      {1, 0.8, 1, 0}, {1, 1.2, 1, 1},  {2, 0.8, 2, 1},   {3, 1.2, 4, 3},
      {4, 1.2, 5, 4}, {5, 0.8, 4, 4},  {32, 0.8, 26, 25}, {32, 1.2, 38, 38},
      {0, 1.2, 0, 0}, {7, 0.5, 4, 3},  // 3.5 rounds half away from zero
  };
  for (const Row& r : table) {
    INFO(r.value << " * " << r.factor);
    CHECK(Perturb(d, ParamValue(r.value), r.factor) == ParamValue(r.ours));
    CHECK(static_cast<int64_t>(static_cast<double>(r.value) * r.factor) == r.ray);
  }
}

TEST_CASE("Values are clamped into their bounds and snapped to their grid (ray#11936)", "[pbt]") {
  // uniform(0, 1): 0.9 * 1.2 = 1.08 -> 1.
  CHECK(Perturb(FloatDistribution{0, 1, false, {}}, 0.9, 1.2) == ParamValue(1.0));
  CHECK(Perturb(FloatDistribution{0, 1, false, {}}, 0.5, 0.8) == ParamValue(0.4));
  // loguniform(1e-4, 1e-2): below low -> low.
  CHECK(Perturb(FloatDistribution{1e-4, 1e-2, true, {}}, 1e-4, 0.8) == ParamValue(1e-4));
  CHECK(Perturb(FloatDistribution{1e-4, 1e-2, true, {}}, 1e-2, 1.2) == ParamValue(1e-2));
  // quniform(0, 0.9, 0.1): Ray gives 1.08 (ray#12717); ours the top of the grid.
  CHECK(Perturb(FloatDistribution{0, 0.9, false, 0.1}, 0.9, 1.2) == ParamValue(0.9));
  CHECK(Perturb(FloatDistribution{0, 0.9, false, 0.1}, 0.5, 1.2) == ParamValue(0.6));
  CHECK(Perturb(FloatDistribution{0, 0.9, false, 0.1}, 0.3, 0.8) == ParamValue(0.2));  // 0.24
  // randint(1, 11): [1, 10].
  CHECK(Perturb(IntDistribution{1, 10, false, 1}, ParamValue(int64_t{10}), 1.2) == ParamValue(int64_t{10}));
  CHECK(Perturb(IntDistribution{1, 10, false, 1}, ParamValue(int64_t{1}), 0.5) == ParamValue(int64_t{1}));
  // qrandint(0, 100, 10): 30 * 1.2 = 36 -> 40; 50 * 0.8 = 40.
  CHECK(Perturb(IntDistribution{0, 100, false, 10}, ParamValue(int64_t{30}), 1.2) == ParamValue(int64_t{40}));
  CHECK(Perturb(IntDistribution{0, 100, false, 10}, ParamValue(int64_t{50}), 0.8) == ParamValue(int64_t{40}));
  CHECK(Perturb(IntDistribution{0, 100, false, 10}, ParamValue(int64_t{100}), 1.2) == ParamValue(int64_t{100}));
}

TEST_CASE("choice moves to an adjacent value in declared order, staying at the ends", "[pbt]") {
  CategoricalDistribution c;
  c.choices = {ParamValue(int64_t{1}), ParamValue(int64_t{10}), ParamValue(int64_t{100}), ParamValue(std::string("x"))};
  CHECK(Shift(c, int64_t{1}, -1) == ParamValue(int64_t{1}));  // Ray: "shift left (noop)"
  CHECK(Shift(c, int64_t{1}, +1) == ParamValue(int64_t{10}));
  CHECK(Shift(c, int64_t{100}, -1) == ParamValue(int64_t{10}));
  CHECK(Shift(c, int64_t{100}, +1) == ParamValue(std::string("x")));
  CHECK(Shift(c, std::string("x"), +1) == ParamValue(std::string("x")));  // not wrapped (Katib wraps)

  // Without resampling, both directions are drawn about equally often and
  // the operation is named as Ray names it.
  std::map<std::string, int> ops;
  for (uint64_t key = 0; key < 2000; ++key) {
    Draws draws(key);
    Explored e = ExploreValue(c, int64_t{10}, 0.0, {1.2, 0.8}, draws);
    ops[e.operation]++;
    CHECK((e.value == ParamValue(int64_t{1}) || e.value == ParamValue(int64_t{100})));
  }
  CHECK(ops.size() == 2);
  CHECK(ops["shift left"] > 900);
  CHECK(ops["shift right"] > 900);
  Draws draws(7);
  bool noop_seen = false;
  for (int i = 0; i < 50; ++i) {
    Explored e = ExploreValue(c, int64_t{1}, 0.0, {1.2}, draws);
    if (e.operation == "shift left (noop)") noop_seen = e.value == ParamValue(int64_t{1});
  }
  CHECK(noop_seen);
}

TEST_CASE("Resample with resample_probability, else a factor from perturbation_factors", "[pbt]") {
  const Distribution d = FloatDistribution{0, 100, false, {}};
  int resampled = 0, up = 0, down = 0;
  for (uint64_t key = 0; key < 4000; ++key) {
    Draws draws(DrawKey(3, static_cast<int>(key), 20, 0));
    Explored e = ExploreValue(d, 50.0, 0.25, {1.2, 0.8}, draws);
    if (e.operation == "resample") {
      ++resampled;
      CHECK(Contains(d, e.value));
    } else if (e.operation == "* 1.2") {
      ++up;
      CHECK(e.value == ParamValue(60.0));
    } else {
      ++down;
      CHECK(e.operation == "* 0.8");
      CHECK(e.value == ParamValue(40.0));
    }
  }
  CHECK(std::abs(resampled - 1000) < 120);  // 4000 * 0.25
  CHECK(std::abs(up - down) < 200);
  // Probability 1: always resampled; 0: never.
  for (uint64_t key = 0; key < 100; ++key) {
    Draws a(key), b(key);
    CHECK(ExploreValue(d, 50.0, 1.0, {1.2, 0.8}, a).operation == "resample");
    CHECK(ExploreValue(d, 50.0, 0.0, {1.2, 0.8}, b).operation != "resample");
  }
  // A value outside the domain is resampled even with probability 0 (Ray
  // does this for a list).
  Draws draws(11);
  Explored e = ExploreValue(IntDistribution{1, 10, false, 1}, ParamValue(2.5), 0.0, {1.2}, draws);
  CHECK(e.operation == "resample");
  CHECK(Contains(IntDistribution{1, 10, false, 1}, e.value));
}

TEST_CASE("Explore changes only the mutated parameters and is a function of its key", "[pbt]") {
  SearchSpace mutations = {{"lr", FloatDistribution{1e-5, 1e-1, true, {}}}, {"layers", IntDistribution{1, 8, false, 1}}};
  ParamMap donor = {{"lr", 1e-3}, {"layers", int64_t{4}}, {"optimizer", std::string("adam")}};
  for (uint64_t key = 0; key < 50; ++key) {
    Draws a(DrawKey(1, 2, 40, 0)), b(DrawKey(1, 2, 40, 0));
    std::vector<std::string> ops;
    ParamMap x = Explore(donor, mutations, 0.25, {1.2, 0.8}, a, &ops);
    ParamMap y = Explore(donor, mutations, 0.25, {1.2, 0.8}, b);
    CHECK(x == y);
    CHECK(x.at("optimizer") == ParamValue(std::string("adam")));
    CHECK(Contains(mutations.at("lr"), x.at("lr")));
    CHECK(Contains(mutations.at("layers"), x.at("layers")));
    REQUIRE(ops.size() == 2);
    CHECK(ops[0].rfind("layers: 4 -> ", 0) == 0);
  }
  // Other keys draw other values.
  std::set<double> lrs;
  for (int n = 0; n < 20; ++n) {
    Draws d(DrawKey(1, n, 40, 0));
    lrs.insert(std::get<double>(Explore(donor, mutations, 0.25, {1.2, 0.8}, d).at("lr")));
  }
  CHECK(lrs.size() >= 2);
}

}  // namespace
}  // namespace pbt
}  // namespace tune
