// Pareto arithmetic (core/pareto.h) against values worked out by hand from
// Optuna 5.0's rules (optuna/study/_multi_objective.py,
// optuna/samplers/nsgaii/_elite_population_selection_strategy.py,
// optuna/_hypervolume/), and hypervolume against a brute-force cell count.
#include "core/pareto.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

namespace tune {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST_CASE("ToLosses negates maximised objectives and makes NaN the worst value", "[core][pareto]") {
  Losses l = ToLosses({1, 2, kNaN, kNaN}, {false, true, true, false});
  CHECK(l[0] == 1);
  CHECK(l[1] == -2);
  CHECK(l[2] == kInf);
  CHECK(l[3] == kInf);
}

TEST_CASE("Dominates: better somewhere and no worse anywhere, with ties and NaN", "[core][pareto]") {
  CHECK(Dominates({1, 2}, {2, 3}));
  CHECK(Dominates({1, 2}, {1, 3}));  // a tie in one objective
  CHECK_FALSE(Dominates({1, 3}, {1, 2}));
  CHECK_FALSE(Dominates({1, 2}, {1, 2}));  // equal points
  CHECK_FALSE(Dominates({1, 3}, {2, 2}));
  CHECK_FALSE(Dominates({2, 2}, {1, 3}));
  // NaN is +infinity: it never dominates through that objective...
  CHECK_FALSE(Dominates({1, kNaN}, {2, 3}));
  // ...and is beaten by any number there.
  CHECK(Dominates({1, 3}, {1, kNaN}));
  CHECK_FALSE(Dominates({1, kNaN}, {1, kNaN}));
  CHECK_FALSE(Dominates({1, kNaN}, {1, kInf}));  // the same value
}

TEST_CASE("ConstrainedDominates: feasible first, then the smaller violation", "[core][pareto]") {
  CHECK(ConstrainedDominates({5, 5}, 0, {1, 1}, 0.1));
  CHECK_FALSE(ConstrainedDominates({1, 1}, 0.1, {5, 5}, 0));
  CHECK(ConstrainedDominates({5, 5}, 0.1, {1, 1}, 0.2));
  CHECK_FALSE(ConstrainedDominates({1, 1}, 0.2, {5, 5}, 0.1));
  CHECK_FALSE(ConstrainedDominates({1, 1}, 0.2, {5, 5}, 0.2));
  CHECK(ConstrainedDominates({1, 1}, 0, {2, 2}, 0));
  CHECK_FALSE(ConstrainedDominates({1, 1}, 0, {1, 1}, 0));
  CHECK_FALSE(ConstrainedDominates({1, 1}, kNaN, {5, 5}, 0.5));  // NaN: an infinite violation
}

// A(1,5) B(2,3) C(3,1) D(2,4) E(4,4) F(2,3)=B G(5,5):
// front 0 = A B C F; D (dominated by B) is front 1; E (by D) 2; G (by E) 3.
const std::vector<Losses> kPoints = {{1, 5}, {2, 3}, {3, 1}, {2, 4}, {4, 4}, {2, 3}, {5, 5}};

TEST_CASE("NonDominatedRanks sorts into fronts, equal points sharing a rank", "[core][pareto]") {
  CHECK(NonDominatedRanks(kPoints) == std::vector<int>{0, 0, 0, 1, 2, 0, 3});
  // Three objectives: (2,2,3) is dominated by (1,2,3), (3,3,3) by (2,2,3).
  CHECK(NonDominatedRanks({{1, 2, 3}, {2, 1, 3}, {3, 3, 1}, {2, 2, 3}, {3, 3, 3}}) ==
        std::vector<int>{0, 0, 0, 1, 2});
  // One objective: the distinct values in order.
  CHECK(NonDominatedRanks({{3}, {1}, {3}, {2}}) == std::vector<int>{2, 0, 2, 1});
  // NaN as +infinity: (1, NaN) is dominated by (1, 2).
  CHECK(NonDominatedRanks({{1, kNaN}, {1, 2}}) == std::vector<int>{1, 0});
  CHECK(NonDominatedRanks({}).empty());
}

TEST_CASE("NonDominatedRanks with n_below stops once that many distinct points are ranked", "[core][pareto]") {
  // Front 0 holds 3 distinct points (B and F are one): 3 < 4, so front 1 (D)
  // is ranked too; E and G then share rank 2.
  CHECK(NonDominatedRanks(kPoints, {}, 4) == std::vector<int>{0, 0, 0, 1, 2, 0, 2});
  // 3 distinct points reach n_below = 3: everything else is rank 1.
  CHECK(NonDominatedRanks(kPoints, {}, 3) == std::vector<int>{0, 0, 0, 1, 1, 0, 1});
  CHECK(NonDominatedRanks(kPoints, {}, 0) == NonDominatedRanks(kPoints));
}

TEST_CASE("NonDominatedRanks with violations: feasible fronts first, then by violation", "[core][pareto]") {
  // B, E, G infeasible. Feasible A C D F: F dominates D -> A C F rank 0, D
  // rank 1. Infeasible after rank 1: E (0.2) rank 2, B and G (0.5) rank 3.
  std::vector<double> violations = {0, 0.5, 0, 0, 0.2, 0, 0.5};
  CHECK(NonDominatedRanks(kPoints, violations) == std::vector<int>{0, 3, 0, 1, 2, 0, 3});
  // n_below 5: the 4 feasible points leave 1 to rank among the infeasible.
  CHECK(NonDominatedRanks(kPoints, violations, 5) == std::vector<int>{0, 3, 0, 1, 2, 0, 3});
  // n_below 3: reached by the feasible front 0; D gets 1, and every
  // infeasible point one rank after the feasible ones (Optuna's rule).
  CHECK(NonDominatedRanks(kPoints, violations, 3) == std::vector<int>{0, 2, 0, 1, 2, 0, 2});
  // All violated: by violation alone, whatever the objectives.
  CHECK(NonDominatedRanks({{1, 1}, {0, 0}, {2, 2}}, {0.3, 0.4, 0.3}) == std::vector<int>{0, 1, 0});
  // All zero violations: the unconstrained sort.
  CHECK(NonDominatedRanks(kPoints, std::vector<double>(7, 0.0)) == NonDominatedRanks(kPoints));
}

TEST_CASE("ParetoFront keeps every copy of a front point", "[core][pareto]") {
  CHECK(ParetoFront(kPoints) == std::vector<size_t>{0, 1, 2, 5});
  CHECK(ParetoFront({{1, 1, 1}, {0, 2, 2}, {1, 1, 1}, {2, 2, 2}}) == std::vector<size_t>{0, 1, 2});
  CHECK(ParetoFront({{2}, {1}, {1}}) == std::vector<size_t>{1, 2});
  CHECK(ParetoFront({{1, kNaN}, {1, 5}}) == std::vector<size_t>{1});
  CHECK(ParetoFront({}).empty());
}

TEST_CASE("CrowdingDistance: boundary points infinite, inner ones the normalised gap", "[core][pareto]") {
  // Objective 0: 1 2 4 5 (range 4): inf, 3/4, 3/4, inf.
  // Objective 1: 5 3 2 1 (range 4): inf, 3/4, 2/4, inf.
  std::vector<Losses> front = {{1, 5}, {2, 3}, {4, 2}, {5, 1}};
  std::vector<double> d = CrowdingDistance(front);
  CHECK(d[0] == kInf);
  CHECK(d[1] == Approx(1.5));
  CHECK(d[2] == Approx(1.25));
  CHECK(d[3] == kInf);
  // Sorted by objective 1 last: 3 2 1 0; by distance ascending (stable):
  // 2 1 3 0; reversed: 0 3 1 2.
  CHECK(CrowdingDistanceSort(front) == std::vector<size_t>{0, 3, 1, 2});

  // An objective with one value adds nothing; the other: 2 3 5, range 3.
  d = CrowdingDistance({{1, 2}, {1, 3}, {1, 5}});
  CHECK(d[0] == kInf);
  CHECK(d[1] == Approx(1.0));
  CHECK(d[2] == kInf);
  // Every value equal: 0 everywhere.
  CHECK(CrowdingDistance({{1, 1}, {1, 1}}) == std::vector<double>{0, 0});
  // Infinite values: inf - inf counts as 0, never NaN; the range is that of
  // the finite values.
  d = CrowdingDistance({{0, kInf}, {1, 1}, {3, 0}, {2, kInf}});
  for (double x : d) CHECK_FALSE(std::isnan(x));
  // Objective 0 in order 0 1 3 2 (values 0 1 2 3, range 3): 1 and 3 get 2/3.
  // Objective 1 in order 2(0) 1(1) 0(inf) 3(inf), range 1: 3 has inf on
  // both sides (0), 1 and 0 inf above them.
  CHECK(d[3] == Approx(2.0 / 3.0));
  CHECK(d[1] == kInf);
  CHECK(CrowdingDistance({}).empty());
}

TEST_CASE("CrowdingDistance: ties get their distance by the order the earlier sorts left", "[core][pareto]") {
  // Objective 0: 2 3 1 4 -> order 2 0 1 3 (range 3): 2 inf, 0 (3-1)/3,
  // 1 (4-2)/3, 3 inf. Objective 1: 0 0 5 -1 -> order 3 0 1 2 (0 before 1,
  // as objective 0 left them; range 6): 3 inf, 0 (0+1)/6, 1 (5-0)/6, 2 inf.
  std::vector<double> d = CrowdingDistance({{2, 0}, {3, 0}, {1, 5}, {4, -1}});
  CHECK(d[0] == Approx(2.0 / 3 + 1.0 / 6));
  CHECK(d[1] == Approx(2.0 / 3 + 5.0 / 6));
  CHECK(d[2] == kInf);
  CHECK(d[3] == kInf);
  // With objective 0 swapped for the tied pair, the gaps swap too.
  d = CrowdingDistance({{3, 0}, {2, 0}, {1, 5}, {4, -1}});
  CHECK(d[0] == Approx(2.0 / 3 + 5.0 / 6));
  CHECK(d[1] == Approx(2.0 / 3 + 1.0 / 6));
}

TEST_CASE("Hypervolume in 2-D against the hand-computed union of boxes", "[core][pareto]") {
  // Boxes to (4,4): 3 + 4 + 3, pairwise 2 + 1 + 2, all three 1: 6.
  CHECK(Hypervolume({{1, 3}, {2, 2}, {3, 1}}, {4, 4}) == Approx(6));
  // A dominated point, a duplicate, points on or past the reference, NaN:
  // nothing more.
  CHECK(Hypervolume({{1, 3}, {2, 2}, {3, 1}, {2.5, 2.5}, {2, 2}, {4, 0}, {5, 0}, {0, kNaN}}, {4, 4}) ==
        Approx(6));
  CHECK(Hypervolume({{1, 1}}, {3, 2}) == Approx(2));
  CHECK(Hypervolume({}, {1, 1}) == 0);
  CHECK(Hypervolume({{5, 5}}, {1, 1}) == 0);
  CHECK(Hypervolume({{0, 0}}, {1, kInf}) == kInf);
  CHECK(Hypervolume({{0, -kInf}}, {1, 1}) == kInf);
}

TEST_CASE("Hypervolume in 3-D against hand-computed inclusion-exclusion", "[core][pareto]") {
  // Boxes to (4,4,4): 6 each; pairwise intersections (2,3,3), (3,2,3),
  // (3,3,2): 2 each; all three (3,3,3): 1. 18 - 6 + 1 = 13.
  CHECK(Hypervolume({{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, {4, 4, 4}) == Approx(13));
  CHECK(Hypervolume({{0, 0, 0}}, {1, 2, 3}) == Approx(6));
  // Ties in two coordinates: 4 + 4 - 2.
  CHECK(Hypervolume({{1, 1, 2}, {1, 2, 1}}, {3, 3, 3}) == Approx(6));
  // The same x: (1,2,0) and (1,1,1) to (3,3,3): 2*1*3 + 2*2*2 - 2*1*2 = 10.
  CHECK(Hypervolume({{1, 2, 0}, {1, 1, 1}}, {3, 3, 3}) == Approx(10));
}

// Unit cells [c, c+1)^d of the grid below `ref` covered by some point's box.
double CountCells(const std::vector<Losses>& points, int side, size_t d) {
  double count = 0;
  std::vector<int> cell(d, 0);
  while (true) {
    for (const Losses& p : points) {
      bool in = true;
      for (size_t k = 0; k < d && in; ++k) in = p[k] <= cell[k];
      if (in) { count += 1; break; }
    }
    size_t k = 0;
    while (k < d && ++cell[k] == side) cell[k++] = 0;
    if (k == d) break;
  }
  return count;
}

TEST_CASE("Hypervolume in 2, 3 and 4-D equals a brute-force count of grid cells", "[core][pareto]") {
  std::mt19937 rng(7);
  const int side = 6;
  for (size_t d : {2u, 3u, 4u}) {
    for (int rep = 0; rep < 20; ++rep) {
      std::uniform_int_distribution<int> coord(0, side - 1), size(1, 12);
      std::vector<Losses> pts(static_cast<size_t>(size(rng)), Losses(d));
      for (Losses& p : pts)
        for (double& v : p) v = coord(rng);
      Losses ref(d, side);
      INFO("d=" << d << " rep=" << rep);
      CHECK(Hypervolume(pts, ref) == Approx(CountCells(pts, side, d)));
    }
  }
}

TEST_CASE("Hypervolume of 4 objectives by hand", "[core][pareto]") {
  // (0,1,1,1) and (1,0,1,1) to (2,2,2,2): 2 + 2 - 1 (the box from (1,1,1,1)).
  CHECK(Hypervolume({{0, 1, 1, 1}, {1, 0, 1, 1}}, {2, 2, 2, 2}) == Approx(3));
}

TEST_CASE("SolveHssp in 2-D picks the largest contribution, then updates", "[core][pareto]") {
  // To (5,5): boxes of (4,1) 4, (1,4) 4, (2,2) 9 -> (2,2) first. Then
  // (1,4) keeps (2-1)*(5-4) = 1 and (4,1) keeps (5-4)*(2-1) = 1: a tie, won
  // by the lexicographically first, (1,4).
  std::vector<Losses> pts = {{4, 1}, {1, 4}, {2, 2}};
  CHECK(SolveHssp(pts, 1, {5, 5}) == std::vector<size_t>{2});
  CHECK(SolveHssp(pts, 2, {5, 5}) == std::vector<size_t>{2, 1});
  CHECK(SolveHssp(pts, 3, {5, 5}) == std::vector<size_t>{0, 1, 2});
}

TEST_CASE("SolveHssp in 3-D picks greedily by contribution", "[core][pareto]") {
  // d (0,3.5,3.5): box 1; a (1,2,3), b (2,3,1), c (3,1,2): 6 each -> a
  // (first in order). Then b: 6 - 2 = 4, c: 6 - 2 = 4, d: 1 - 0.75 -> b.
  // Then c: 6 - (2 + 2 - 1) = 3, d: 1 - 0.75 -> c.
  std::vector<Losses> pts = {{0, 3.5, 3.5}, {3, 1, 2}, {2, 3, 1}, {1, 2, 3}};
  Losses ref = {4, 4, 4};
  CHECK(SolveHssp(pts, 1, ref) == std::vector<size_t>{3});
  CHECK(SolveHssp(pts, 2, ref) == std::vector<size_t>{3, 2});
  CHECK(SolveHssp(pts, 3, ref) == std::vector<size_t>{3, 2, 1});
}

TEST_CASE("SolveHssp with duplicates and special cases, as Optuna", "[core][pareto]") {
  // Exactly subset_size distinct points: the first index of each, lexsorted.
  CHECK(SolveHssp({{2, 0}, {1, 1}, {1, 1}}, 2, {3, 3}) == std::vector<size_t>{1, 0});
  // Fewer distinct points: each one's first index plus the first duplicates.
  CHECK(SolveHssp({{1, 1}, {1, 1}, {1, 1}, {2, 0}}, 3, {3, 3}) == std::vector<size_t>{0, 1, 3});
  // A reference that is not finite: the first distinct points, lexsorted.
  CHECK(SolveHssp({{3, 0}, {1, 2}, {2, 1}}, 2, {kInf, 4}) == std::vector<size_t>{1, 2});
  // A duplicate is never picked twice while distinct points are left.
  CHECK(SolveHssp({{1, 3}, {1, 3}, {3, 1}, {2, 2}}, 2, {4, 4}) == std::vector<size_t>{3, 0});
}

TEST_CASE("SolveHssp's greedy subset matches exhaustive greedy in 4-D", "[core][pareto]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  // Points on the simplex x1 + ... + x4 = 1: one front.
  std::vector<Losses> pts;
  for (int i = 0; i < 12; ++i) {
    Losses p(4);
    double s = 0;
    for (double& v : p) s += (v = u(rng));
    for (double& v : p) v /= s;
    pts.push_back(p);
  }
  Losses ref(4, 1.1);
  std::vector<size_t> got = SolveHssp(pts, 5, ref);
  // Plain greedy without the lazy bound.
  std::vector<Losses> chosen;
  std::vector<bool> used(pts.size(), false);
  for (size_t k = 0; k < 5; ++k) {
    double base = Hypervolume(chosen, ref), best = -1;
    size_t arg = 0;
    for (size_t i = 0; i < pts.size(); ++i) {
      if (used[i]) continue;
      chosen.push_back(pts[i]);
      double c = Hypervolume(chosen, ref) - base;
      chosen.pop_back();
      if (c > best + 1e-12) { best = c; arg = i; }
    }
    used[arg] = true;
    chosen.push_back(pts[arg]);
    CHECK(got[k] == arg);
  }
}

}  // namespace
}  // namespace tune
