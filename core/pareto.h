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
// Dominates.
bool ConstrainedDominates(const Losses& a, double violation_a, const Losses& b, double violation_b);

// Non-dominated sorting (Optuna's _fast_non_domination_rank): rank 0 for
// the Pareto front, 1 for the front of what is left, and so on. With
// `violations` (one per point, or empty for none), feasible points (0) are
// ranked first as above and infeasible ones after them by increasing
// violation (equal violations share a rank). With n_below >= 0 ranking may
// stop once at least n_below points have a rank; the rest then get
// (the last rank given) + 1.
std::vector<int> NonDominatedRanks(const std::vector<Losses>& points,
                                   const std::vector<double>& violations = {}, int n_below = -1);

// Indices (ascending) of the points that no other point dominates; equal
// points are all kept.
std::vector<size_t> ParetoFront(const std::vector<Losses>& points);

// NSGA-II crowding distance of each point of one front (Optuna's
// _crowding_distance): per objective, boundary points get +infinity and
// inner points the normalised gap between their neighbours, summed.
std::vector<double> CrowdingDistance(const std::vector<Losses>& front);

// The hypervolume dominated by `points` and bounded by `reference` (exact;
// Optuna's compute_hypervolume). Points not strictly better than the
// reference in every objective add nothing. 0 for no points.
double Hypervolume(const std::vector<Losses>& points, const Losses& reference);

// Greedy hypervolume subset selection (Optuna's _solve_hssp, used by
// multi-objective TPE): indices of `subset_size` points of `points` chosen
// one at a time by largest hypervolume contribution w.r.t. `reference`.
std::vector<size_t> SolveHssp(const std::vector<Losses>& points, size_t subset_size, const Losses& reference);

}  // namespace tune
