// Pareto dominance, non-dominated sorting, crowding distance and
// hypervolume: the arithmetic of multi-objective tuning, shared by the
// samplers (search/nsga2_sampler.h, search/tpe_sampler.h), `tune best`, the
// dashboard and the report.
//
// Every function works on losses: each objective to be minimised. Callers
// turn a trial's raw values into losses with ToLosses (maximised objectives
// negated). NaN in a loss counts as +infinity (the worst value), so a point
// with NaN never dominates through that objective; equal values tie.
//
// Follows Optuna 5.0 (optuna/study/_multi_objective.py,
// optuna/samplers/nsgaii/_elite_population_selection_strategy.py,
// optuna/_hypervolume/), cited per function in pareto.cc.
#pragma once

#include <cstddef>
#include <vector>

namespace tune {

using Losses = std::vector<double>;

// `values` with maximised objectives negated and NaN made +infinity.
// maximize.size() must equal values.size().
Losses ToLosses(const std::vector<double>& values, const std::vector<bool>& maximize);

// True if `a` dominates `b`: no worse in every objective and better in at
// least one. Equal points do not dominate each other. Sizes must match.
bool Dominates(const Losses& a, const Losses& b);

// Optuna's constrained dominance (_constrained_dominates): with
// `violation_a`/`violation_b` the summed positive constraint values (0 when
// feasible), a feasible point dominates an infeasible one, two infeasible
// points compare by violation (smaller dominates), two feasible ones by
// Dominates. A NaN violation is infeasible and counts as +infinity (Optuna
// refuses NaN constraints).
bool ConstrainedDominates(const Losses& a, double violation_a, const Losses& b, double violation_b);

// Non-dominated sorting (Optuna's _fast_non_domination_rank): rank 0 for
// the Pareto front, 1 for the front of what is left, and so on. With
// `violations` (one per point, or empty for none), feasible points (0) are
// ranked first as above and infeasible ones after them by increasing
// violation (equal violations share a rank). With n_below > 0 ranking may
// stop once at least n_below distinct points have a rank (Optuna counts
// distinct points; n_below <= 0: no limit); the rest then get (the last
// rank given) + 1. With violations, n_below counts the feasible points
// first; when they reach it, every infeasible point gets the same rank
// (Optuna's, again). A violation of NaN counts as +infinity. One objective:
// ranks are simply the distinct values in increasing order (n_below unused).
std::vector<int> NonDominatedRanks(const std::vector<Losses>& points,
                                   const std::vector<double>& violations = {}, int n_below = -1);

// Indices (ascending) of the points that no other point dominates; equal
// points are all kept.
std::vector<size_t> ParetoFront(const std::vector<Losses>& points);

// NSGA-II crowding distance of each point of one front (Optuna's
// _calc_crowding_distance): the points are sorted by each objective in turn
// (stable sorts, each starting from the order the previous one left); an
// objective in which every point has the same value adds nothing; otherwise
// the first and last point in that order get +infinity and every other one
// the gap between its two neighbours' values (0 when they are equal),
// divided by the range of the finite values (1 when that is not positive);
// the per-objective terms are summed. The distance does not depend on the
// sign of an objective except among tied values (which of the tied points
// is first): the NSGA-II sampler passes values oriented as the user's raw
// values, as Optuna does.
std::vector<double> CrowdingDistance(const std::vector<Losses>& front);

// Optuna's _crowding_distance_sort: the indices of `front` by decreasing
// crowding distance, ties in the reverse of the order the objective sorts
// above left them (Optuna sorts stably by distance, then reverses). NSGA-II's
// elite selection keeps the first of these from the front it cuts.
std::vector<size_t> CrowdingDistanceSort(const std::vector<Losses>& front);

// The hypervolume dominated by `points` and bounded by `reference` (exact;
// Optuna's compute_hypervolume). Points not strictly better than the
// reference in every objective add nothing (Optuna raises on a point worse
// than the reference; callers here need not filter). 0 when no point is
// left; +infinity when the reference is not finite (Optuna's rule) or a
// point has a loss of -infinity. 2-D: Optuna's sort sweep, O(n log n);
// 3-D: a sweep with a staircase, O(n log n); 4-D and more: slices along the
// last objective, O(n^2 log n) for 4.
double Hypervolume(const std::vector<Losses>& points, const Losses& reference);

// Greedy hypervolume subset selection (Optuna's _solve_hssp, used by
// multi-objective TPE): indices of `subset_size` points of `points` chosen
// one at a time by largest hypervolume contribution w.r.t. `reference`,
// returned in the order chosen; ties go to the lexicographically smallest
// point; of equal points only the first (smallest index) is a candidate.
// As Optuna: subset_size >= points.size() gives every index (ascending);
// fewer distinct points than subset_size gives every distinct point's first
// index plus the first duplicates (ascending); a reference that is not
// finite, or exactly subset_size distinct points, gives the first
// subset_size distinct points in lexicographic order. `points` should be
// one front (no point dominates another), as Optuna's callers pass: the 2-D
// contribution update relies on it, and with dominated points (3-D and up)
// the contributions left after the front is chosen are all 0, among which
// Optuna's choice is rounding noise.
std::vector<size_t> SolveHssp(const std::vector<Losses>& points, size_t subset_size, const Losses& reference);

}  // namespace tune
