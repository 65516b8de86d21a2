#include "dashboard/pareto_view.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/pareto.h"

namespace tune {
namespace {

std::vector<bool> Maximize(const ExperimentSpec& spec) {
  std::vector<bool> out;
  for (const ObjectiveSpec& o : spec.objectives) out.push_back(o.mode == Mode::kMax);
  return out;
}

// A trial's values in objective order: Trial::values, or with one objective
// Trial::value; empty when it lacks one.
std::vector<double> ValuesOf(const ExperimentSpec& spec, const Trial& t) {
  if (IsMultiObjective(spec)) {
    return t.values.size() == spec.objectives.size() ? t.values : std::vector<double>{};
  }
  if (!t.value) return {};
  return {*t.value};
}

std::string Number(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

}  // namespace

ParetoView ComputeParetoView(const ExperimentSpec& spec, const std::vector<TrialRecord>& records,
                             bool with_hypervolume) {
  ParetoView view;
  const std::vector<bool> maximize = Maximize(spec);
  const size_t m = maximize.size();
  std::vector<Losses> losses;
  for (size_t i = 0; i < records.size(); ++i) {
    const Trial& t = records[i].trial;
    if (t.state != TrialState::kCompleted) continue;
    if (!IsFeasible(t)) {
      view.infeasible.push_back(i);
      continue;
    }
    std::vector<double> v = ValuesOf(spec, t);
    if (v.size() != m) continue;
    view.feasible.push_back(i);
    losses.push_back(ToLosses(v, maximize));
  }
  // The reference: given, else the worst feasible value (as a loss: the max).
  Losses ref_loss(m, 0);
  view.reference.assign(m, std::numeric_limits<double>::quiet_NaN());
  view.reference_given.assign(m, false);
  for (size_t j = 0; j < m; ++j) {
    if (spec.objectives[j].ref) {
      view.reference[j] = *spec.objectives[j].ref;
      view.reference_given[j] = true;
      ref_loss[j] = maximize[j] ? -*spec.objectives[j].ref : *spec.objectives[j].ref;
      continue;
    }
    double worst = -std::numeric_limits<double>::infinity();
    for (const Losses& l : losses)
      if (std::isfinite(l[j])) worst = std::max(worst, l[j]);
    if (std::isfinite(worst)) {
      ref_loss[j] = worst;
      view.reference[j] = maximize[j] ? -worst : worst;
    }
  }
  const std::vector<size_t> front = ParetoFront(losses);
  // By the first objective, then by number (feasible is in number order).
  std::vector<size_t> by_first = front;
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](size_t a, size_t b) { return losses[a][0] < losses[b][0]; });
  for (size_t k : by_first) view.front.push_back(view.feasible[k]);
  const bool ref_ok = std::all_of(view.reference.begin(), view.reference.end(),
                                  [](double r) { return std::isfinite(r); });
  if (!ref_ok || losses.empty() || !with_hypervolume) return view;
  std::vector<Losses> front_losses;
  for (size_t k : front) front_losses.push_back(losses[k]);
  view.hypervolume = Hypervolume(front_losses, ref_loss);
  // The curve: hypervolume of the first n feasible trials, at up to 256 n,
  // grown one point at a time by its exclusive contribution (WFG's
  // exclusive hypervolume, While, Bradstreet and Barone 2012): a point that
  // a point so far weakly dominates adds nothing; another adds its box
  // minus the hypervolume of the points so far limited to that box (each
  // coordinate the worse of the two). Recomputing each sampled prefix's
  // front and hypervolume took 3.8 s at 1,000 trials of 4 objectives.
  const size_t n = losses.size();
  const size_t stride = std::max<size_t>(1, (n + 255) / 256);
  std::vector<Losses> so_far;  // the non-dominated points inside the reference so far
  double hv = 0;
  for (size_t upto = 1; upto <= n; ++upto) {
    const Losses& p = losses[upto - 1];
    bool inside = true;
    for (size_t j = 0; j < m; ++j) inside = inside && p[j] < ref_loss[j];
    const auto weakly_dominates = [&](const Losses& a, const Losses& b) {
      for (size_t j = 0; j < m; ++j)
        if (!(a[j] <= b[j])) return false;
      return true;
    };
    if (inside && std::none_of(so_far.begin(), so_far.end(), [&](const Losses& q) { return weakly_dominates(q, p); })) {
      double box = 1;
      for (size_t j = 0; j < m; ++j) box *= ref_loss[j] - p[j];
      std::vector<Losses> limited;
      limited.reserve(so_far.size());
      for (const Losses& q : so_far) {
        Losses l(m);
        for (size_t j = 0; j < m; ++j) l[j] = std::max(q[j], p[j]);
        limited.push_back(std::move(l));
      }
      hv += box - (limited.empty() ? 0.0 : Hypervolume(limited, ref_loss));
      so_far.erase(std::remove_if(so_far.begin(), so_far.end(), [&](const Losses& q) { return weakly_dominates(p, q); }),
                   so_far.end());
      so_far.push_back(p);
    }
    if (upto % stride != 0 && upto != n) continue;
    view.hypervolume_curve.emplace_back(records[view.feasible[upto - 1]].trial.number, hv);
  }
  return view;
}

std::string DescribeReference(const ExperimentSpec& spec, const ParetoView& view) {
  std::string out = "reference point (";
  for (size_t j = 0; j < spec.objectives.size() && j < view.reference.size(); ++j) {
    if (j) out += ", ";
    out += spec.objectives[j].metric + " " + Number(view.reference[j]) +
           (view.reference_given[j] ? " given" : " the worst feasible value");
  }
  return out + ")";
}

}  // namespace tune
