#include "core/pareto.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>

namespace tune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double Sane(double v) { return std::isnan(v) ? kInf : v; }

// `points` with NaN made +infinity, so that every comparison below is a
// total order.
std::vector<Losses> Sanitized(const std::vector<Losses>& points) {
  std::vector<Losses> out = points;
  for (Losses& p : out)
    for (double& v : p) v = Sane(v);
  return out;
}

// np.unique(points, axis=0): the distinct points in lexicographic order, and
// for each input point the position of its distinct copy.
struct Unique {
  std::vector<Losses> points;
  std::vector<size_t> inverse;
  std::vector<size_t> first;  // the smallest input index of each distinct point
};

Unique UniqueLexsorted(const std::vector<Losses>& points) {
  std::vector<size_t> order(points.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return points[a] < points[b]; });
  Unique u;
  u.inverse.resize(points.size());
  for (size_t k = 0; k < order.size(); ++k) {
    size_t i = order[k];
    if (u.points.empty() || u.points.back() != points[i]) {
      u.points.push_back(points[i]);
      u.first.push_back(i);
    }
    u.inverse[i] = u.points.size() - 1;
  }
  return u;
}

// Optuna's _is_pareto_front_for_unique_sorted (optuna/study/_multi_objective.py)
// on the rows `rows` of distinct, lexsorted points: which of them no other row
// dominates.
std::vector<bool> FrontOfUniqueSorted(const std::vector<Losses>& u, const std::vector<size_t>& rows) {
  size_t n = rows.size();
  std::vector<bool> on(n, false);
  if (n == 0) return on;
  size_t m = u[rows[0]].size();
  if (m == 1) {
    on[0] = true;
  } else if (m == 2) {
    // _is_pareto_front_2d: a point is on the front when its second value is
    // a new running minimum.
    double cummin = kInf;
    for (size_t k = 0; k < n; ++k) {
      double y = u[rows[k]][1];
      on[k] = k == 0 || y < cummin;
      cummin = std::min(cummin, y);
    }
  } else {
    // _is_pareto_front_nd: the first remaining point is non-dominated (the
    // rows are lexsorted); drop every point it weakly dominates.
    std::vector<size_t> remaining(n);
    std::iota(remaining.begin(), remaining.end(), 0);
    while (!remaining.empty()) {
      size_t top = remaining[0];
      on[top] = true;
      const Losses& t = u[rows[top]];
      std::vector<size_t> next;
      for (size_t k = 1; k < remaining.size(); ++k) {
        const Losses& p = u[rows[remaining[k]]];
        bool better_somewhere = false;
        for (size_t j = 1; j < m; ++j)
          if (p[j] < t[j]) { better_somewhere = true; break; }
        if (better_somewhere) next.push_back(remaining[k]);
      }
      remaining.swap(next);
    }
  }
  return on;
}

// Dense ranks of one-dimensional values (np.unique(..., return_inverse=True)).
std::vector<int> DenseRanks(const std::vector<double>& v) {
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<int> ranks(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    ranks[i] = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), v[i]) - sorted.begin());
  return ranks;
}

// Optuna's _calculate_nondomination_rank (optuna/study/_multi_objective.py).
std::vector<int> PlainRanks(const std::vector<Losses>& points, long n_below) {
  if (points.empty() || n_below <= 0) return std::vector<int>(points.size(), 0);
  if (points[0].size() == 1) {
    std::vector<double> v;
    for (const Losses& p : points) v.push_back(p[0]);
    return DenseRanks(v);
  }
  Unique u = UniqueLexsorted(points);
  size_t n_unique = u.points.size();
  size_t target = std::min(static_cast<size_t>(n_below), n_unique);
  std::vector<int> ranks(n_unique, 0);
  std::vector<size_t> rows(n_unique);
  std::iota(rows.begin(), rows.end(), 0);
  int rank = 0;
  while (n_unique - rows.size() < target) {
    std::vector<bool> on = FrontOfUniqueSorted(u.points, rows);
    std::vector<size_t> rest;
    for (size_t k = 0; k < rows.size(); ++k) {
      if (on[k]) ranks[rows[k]] = rank;
      else rest.push_back(rows[k]);
    }
    rows.swap(rest);
    ++rank;
  }
  for (size_t r : rows) ranks[r] = rank;  // worse than the top n_below
  std::vector<int> out(points.size());
  for (size_t i = 0; i < points.size(); ++i) out[i] = ranks[u.inverse[i]];
  return out;
}

// Product of (reference - p), each factor at least 0.
double BoxVolume(const Losses& p, const Losses& reference) {
  double v = 1;
  for (size_t k = 0; k < p.size(); ++k) v *= std::max(0.0, reference[k] - p[k]);
  return v;
}

// The distinct non-dominated points of `points`, lexsorted.
std::vector<Losses> UniqueFront(const std::vector<Losses>& points) {
  Unique u = UniqueLexsorted(points);
  std::vector<size_t> rows(u.points.size());
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<bool> on = FrontOfUniqueSorted(u.points, rows);
  std::vector<Losses> out;
  for (size_t k = 0; k < rows.size(); ++k)
    if (on[k]) out.push_back(u.points[k]);
  return out;
}

// Optuna's _compute_2d (optuna/_hypervolume/wfg.py): a sweep over the front
// sorted by the first objective.
double Hv2d(const std::vector<Losses>& front, const Losses& ref) {
  double hv = 0, y_above = ref[1];
  for (const Losses& p : front) {
    hv += (ref[0] - p[0]) * (y_above - p[1]);
    y_above = p[1];
  }
  return hv;
}

// Exact 3-D hypervolume in O(n log n): sweep the points by increasing third
// objective, keeping the 2-D staircase of the first two and its area (the
// HV3D algorithm of Beume et al. 2009, "On the complexity of computing the
// hypervolume indicator"). Optuna's _compute_3d gives the same value in
// O(n^2) time and memory.
double Hv3d(std::vector<Losses> pts, const Losses& ref) {
  std::sort(pts.begin(), pts.end(), [](const Losses& a, const Losses& b) { return a[2] < b[2]; });
  std::map<double, double> stair;  // x -> y, x increasing, y strictly decreasing
  double area = 0, volume = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    double px = pts[i][0], py = pts[i][1];
    auto first = stair.lower_bound(px);  // first x >= px
    // The staircase's height just left of px, and whether a point with
    // x <= px already has y <= py (then p adds nothing).
    double y_left = first == stair.begin() ? ref[1] : std::prev(first)->second;
    bool dominated = first != stair.end() && first->first == px ? first->second <= py : y_left <= py;
    if (!dominated) {
      // Elements with x >= px and y >= py are covered by p.
      auto last = first;
      double old = 0;  // the old area over [px, x_next)
      double x_cur = px, h_cur = ref[1] - y_left;
      while (last != stair.end() && last->second >= py) {
        old += (last->first - x_cur) * h_cur;
        x_cur = last->first;
        h_cur = ref[1] - last->second;
        ++last;
      }
      double x_next = last == stair.end() ? ref[0] : last->first;
      old += (x_next - x_cur) * h_cur;
      area += (x_next - px) * (ref[1] - py) - old;
      stair.erase(first, last);
      stair[px] = py;
    }
    double z_next = i + 1 < pts.size() ? pts[i + 1][2] : ref[2];
    volume += area * (z_next - pts[i][2]);
  }
  return volume;
}

// Exact hypervolume of points strictly inside the reference: 2-D on the
// distinct front; 3-D by Hv3d (which skips dominated points itself); 4 and
// more by slicing along the last objective down to Hv3d.
double HvOf(const std::vector<Losses>& points, const Losses& ref) {
  size_t m = ref.size();
  if (points.empty()) return 0;
  if (m == 1) {
    double best = kInf;
    for (const Losses& p : points) best = std::min(best, p[0]);
    return ref[0] - best;
  }
  if (m == 2) return Hv2d(UniqueFront(points), ref);
  if (m == 3) return Hv3d(points, ref);
  // Dominated points only cost time here: drop them first.
  std::vector<Losses> sorted = UniqueFront(points);
  std::sort(sorted.begin(), sorted.end(), [m](const Losses& a, const Losses& b) { return a[m - 1] < b[m - 1]; });
  Losses sub_ref(ref.begin(), ref.end() - 1);
  std::vector<Losses> slice;
  double volume = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    slice.emplace_back(sorted[i].begin(), sorted[i].end() - 1);
    double next = i + 1 < sorted.size() ? sorted[i + 1][m - 1] : ref[m - 1];
    double thickness = next - sorted[i][m - 1];
    if (thickness > 0) volume += thickness * HvOf(slice, sub_ref);
  }
  return volume;
}

// Optuna's _calc_crowding_distance and _crowding_distance_sort
// (optuna/samplers/nsgaii/_elite_population_selection_strategy.py): the
// population is sorted in place by each objective in turn (stable sorts, so
// ties keep the order the previous objective left), then by distance.
void Crowding(const std::vector<Losses>& front, std::vector<double>* distance, std::vector<size_t>* order_out) {
  std::vector<Losses> v = Sanitized(front);
  size_t n = v.size();
  std::vector<double> dist(n, 0.0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  size_t m = n ? v[0].size() : 0;
  for (size_t k = 0; k < m; ++k) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a][k] < v[b][k]; });
    if (v[order.front()][k] == v[order.back()][k]) continue;  // one value: no information
    std::vector<double> vs;
    vs.push_back(-kInf);
    for (size_t i : order) vs.push_back(v[i][k]);
    vs.push_back(kInf);
    double v_min = *std::find_if(vs.begin(), vs.end(), [](double x) { return x != -kInf; });
    double v_max = *std::find_if(vs.rbegin(), vs.rend(), [](double x) { return x != kInf; });
    double width = v_max - v_min;
    if (width <= 0) width = 1.0;  // width == 0 or -inf
    for (size_t j = 0; j < n; ++j) {
      // inf - inf and (-inf) - (-inf) count as 0.
      double gap = vs[j] == vs[j + 2] ? 0.0 : vs[j + 2] - vs[j];
      dist[order[j]] += gap / width;
    }
  }
  if (distance) *distance = dist;
  if (order_out) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return dist[a] < dist[b]; });
    std::reverse(order.begin(), order.end());
    *order_out = order;
  }
}

}  // namespace

// Optuna's _normalize_value (optuna/study/_multi_objective.py); NaN (which
// Optuna never stores for a completed trial) as the worst value.
Losses ToLosses(const std::vector<double>& values, const std::vector<bool>& maximize) {
  Losses out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    double v = i < maximize.size() && maximize[i] ? -values[i] : values[i];
    out[i] = Sane(v);
  }
  return out;
}

// Optuna's _dominates (optuna/study/_multi_objective.py).
bool Dominates(const Losses& a, const Losses& b) {
  bool strictly = false;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double x = Sane(a[i]), y = Sane(b[i]);
    if (x > y) return false;
    if (x < y) strictly = true;
  }
  return strictly;
}

// Optuna's _constrained_dominates
// (optuna/samplers/nsgaii/_constraints_evaluation.py).
bool ConstrainedDominates(const Losses& a, double violation_a, const Losses& b, double violation_b) {
  bool feasible_a = violation_a <= 0, feasible_b = violation_b <= 0;  // NaN: infeasible
  if (feasible_a && feasible_b) return Dominates(a, b);
  if (feasible_a) return true;
  if (feasible_b) return false;
  return Sane(violation_a) < Sane(violation_b);
}

// Optuna's _fast_non_domination_rank (optuna/study/_multi_objective.py).
std::vector<int> NonDominatedRanks(const std::vector<Losses>& points, const std::vector<double>& violations,
                                   int n_below) {
  if (points.empty()) return {};
  std::vector<Losses> pts = Sanitized(points);
  long below = n_below > 0 ? n_below : static_cast<long>(pts.size());
  if (violations.empty()) return PlainRanks(pts, below);

  std::vector<Losses> feasible;
  std::vector<double> infeasible;
  std::vector<size_t> feasible_at, infeasible_at;
  for (size_t i = 0; i < pts.size(); ++i) {
    double v = i < violations.size() ? violations[i] : 0.0;
    if (v <= 0) {
      feasible.push_back(pts[i]);
      feasible_at.push_back(i);
    } else {
      infeasible.push_back(Sane(v));
      infeasible_at.push_back(i);
    }
  }
  std::vector<int> ranks(pts.size(), -1);
  std::vector<int> fr = PlainRanks(feasible, below);
  int top = 0;
  for (size_t k = 0; k < fr.size(); ++k) {
    ranks[feasible_at[k]] = fr[k];
    top = std::max(top, fr[k] + 1);
  }
  below -= static_cast<long>(feasible.size());
  // The infeasible ones after every feasible rank, by violation alone.
  std::vector<int> ir = below <= 0 ? std::vector<int>(infeasible.size(), 0) : DenseRanks(infeasible);
  for (size_t k = 0; k < ir.size(); ++k) ranks[infeasible_at[k]] = top + ir[k];
  return ranks;
}

// Optuna's _is_pareto_front(..., assume_unique_lexsorted=False)
// (optuna/study/_multi_objective.py): duplicates of a front point are all on it.
std::vector<size_t> ParetoFront(const std::vector<Losses>& points) {
  if (points.empty()) return {};
  Unique u = UniqueLexsorted(Sanitized(points));
  std::vector<size_t> rows(u.points.size());
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<bool> on = FrontOfUniqueSorted(u.points, rows);
  std::vector<size_t> out;
  for (size_t i = 0; i < points.size(); ++i)
    if (on[u.inverse[i]]) out.push_back(i);
  return out;
}

std::vector<double> CrowdingDistance(const std::vector<Losses>& front) {
  std::vector<double> d;
  Crowding(front, &d, nullptr);
  return d;
}

std::vector<size_t> CrowdingDistanceSort(const std::vector<Losses>& front) {
  std::vector<size_t> order;
  Crowding(front, nullptr, &order);
  return order;
}

// Optuna's compute_hypervolume (optuna/_hypervolume/wfg.py): distinct
// non-dominated points, then the 2-D sweep (_compute_2d); 3-D and 4-D by the
// exact sweeps above instead of _compute_3d and WFG (_compute_hv).
double Hypervolume(const std::vector<Losses>& points, const Losses& reference) {
  std::vector<Losses> inside;
  for (const Losses& p : Sanitized(points)) {
    bool better = p.size() == reference.size();
    for (size_t k = 0; better && k < p.size(); ++k) better = p[k] < reference[k];
    if (better) inside.push_back(p);
  }
  if (inside.empty()) return 0.0;
  for (double r : reference)
    if (!std::isfinite(r)) return kInf;
  double hv = HvOf(inside, reference);
  // inf - inf (a point at -infinity) is an infinite volume, as Optuna says.
  return std::isfinite(hv) ? hv : kInf;
}

// Optuna's _solve_hssp (optuna/_hypervolume/hssp.py).
std::vector<size_t> SolveHssp(const std::vector<Losses>& points, size_t subset_size, const Losses& reference) {
  size_t n = points.size();
  if (subset_size >= n) {
    std::vector<size_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  Unique u = UniqueLexsorted(Sanitized(points));
  size_t n_unique = u.points.size();
  if (n_unique < subset_size) {
    // Every distinct point once, then the first duplicates, in index order.
    std::vector<bool> chosen(n, false);
    for (size_t i : u.first) chosen[i] = true;
    size_t extra = subset_size - n_unique;
    for (size_t i = 0; i < n && extra > 0; ++i)
      if (!chosen[i]) { chosen[i] = true; --extra; }
    std::vector<size_t> out;
    for (size_t i = 0; i < n; ++i)
      if (chosen[i]) out.push_back(i);
    return out;
  }
  // _solve_hssp_on_unique_loss_vals: on the distinct points, lexsorted.
  bool finite_ref = std::all_of(reference.begin(), reference.end(), [](double r) { return std::isfinite(r); });
  if (!finite_ref || n_unique == subset_size)
    return std::vector<size_t>(u.first.begin(), u.first.begin() + static_cast<long>(subset_size));

  const std::vector<Losses>& vals = u.points;
  std::vector<size_t> cand(n_unique);  // positions into vals, in order
  std::iota(cand.begin(), cand.end(), 0);
  std::vector<size_t> selected;
  if (reference.size() == 2) {
    // _solve_hssp_2d: exact contributions from each candidate's box corner,
    // shrunk by each pick (the points of one front, sorted by x).
    std::vector<Losses> diag(n_unique, reference);
    for (size_t k = 0; k < subset_size; ++k) {
      size_t best = 0;
      double best_c = -kInf;
      for (size_t c = 0; c < cand.size(); ++c) {
        double contrib = (diag[c][0] - vals[cand[c]][0]) * (diag[c][1] - vals[cand[c]][1]);
        if (contrib > best_c) { best_c = contrib; best = c; }
      }
      Losses chosen = vals[cand[best]];
      selected.push_back(cand[best]);
      cand.erase(cand.begin() + static_cast<long>(best));
      diag.erase(diag.begin() + static_cast<long>(best));
      for (size_t c = 0; c < cand.size(); ++c) {
        if (c < best) diag[c][0] = std::min(chosen[0], diag[c][0]);
        else diag[c][1] = std::min(chosen[1], diag[c][1]);
      }
    }
  } else {
    // Greedy by exact contribution H(S + {i}) - H(S) = H({i}) - H({max(i, s)}),
    // evaluated lazily: contributions only shrink (submodularity), so a
    // candidate whose last value is below the best one found this round
    // cannot win (_lazy_contribs_update). Ties go to the first candidate in
    // lexicographic order, as np.argmax.
    std::vector<double> contrib(n_unique);
    for (size_t c = 0; c < n_unique; ++c) contrib[c] = BoxVolume(vals[c], reference);
    std::vector<Losses> chosen;
    bool infinite_selected = false;
    for (size_t k = 0; k < subset_size; ++k) {
      size_t best = 0;
      for (size_t c = 1; c < cand.size(); ++c)
        if (contrib[c] > contrib[best]) best = c;
      selected.push_back(cand[best]);
      chosen.push_back(vals[cand[best]]);
      if (std::isinf(contrib[best])) infinite_selected = true;
      cand.erase(cand.begin() + static_cast<long>(best));
      contrib.erase(contrib.begin() + static_cast<long>(best));
      if (k + 1 == subset_size) break;
      if (infinite_selected) {
        // Optuna: once the selected volume is infinite every contribution is.
        std::fill(contrib.begin(), contrib.end(), kInf);
        continue;
      }
      std::vector<size_t> by_bound(cand.size());
      std::iota(by_bound.begin(), by_bound.end(), 0);
      std::stable_sort(by_bound.begin(), by_bound.end(), [&](size_t a, size_t b) { return contrib[a] > contrib[b]; });
      double max_contrib = 0;
      for (size_t c : by_bound) {
        if (contrib[c] < max_contrib) continue;
        const Losses& p = vals[cand[c]];
        double inclusive = BoxVolume(p, reference);
        if (std::isinf(inclusive)) {
          contrib[c] = max_contrib = kInf;
          continue;
        }
        std::vector<Losses> limited;
        for (const Losses& s : chosen) {
          Losses l(p.size());
          for (size_t j = 0; j < p.size(); ++j) l[j] = std::max(p[j], s[j]);
          limited.push_back(std::move(l));
        }
        contrib[c] = inclusive - Hypervolume(limited, reference);
        max_contrib = std::max(max_contrib, contrib[c]);
      }
    }
  }
  std::vector<size_t> out;
  for (size_t s : selected) out.push_back(u.first[s]);
  return out;
}

}  // namespace tune
