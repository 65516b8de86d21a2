#include "search/tpe_split.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Optuna's EPS in optuna/samplers/_tpe/sampler.py.
constexpr double kEps = 1e-12;
// The step key of an infeasible trial: after every pruned one (-step is
// finite), before the running ones (+infinity).
constexpr double kInfeasible = std::numeric_limits<double>::max();

}  // namespace

int DefaultGamma(int n) { return std::min(static_cast<int>(std::ceil(0.1 * n)), 25); }

int DefaultGammaMultiObjective(int n) { return static_cast<int>(std::ceil(0.1 * n)); }

double ConstraintViolation(const Trial& trial) {
  double sum = 0;
  for (double c : trial.constraints) {
    if (std::isnan(c)) return kInf;
    if (c > 0) sum += c;
  }
  return sum;
}

Losses HsspReferencePoint(const std::vector<Losses>& front) {
  Losses ref = front.front();
  for (const Losses& p : front)
    for (size_t k = 0; k < ref.size(); ++k) ref[k] = std::max(ref[k], p[k]);
  for (double& r : ref) {
    r = std::max(1.1 * r, 0.9 * r);  // 10% beyond the worst, whatever its sign
    if (r == 0) r = kEps;
  }
  return ref;
}

TpeSplitter::TpeSplitter(const TpeSamplerOptions& options)
    : maximize_(options.maximize),
      objectives_maximize_(options.objectives_maximize),
      gamma_(options.gamma),
      constant_liar_(options.constant_liar) {}

void TpeSplitter::Split(const History& history, TpeGroups* groups) {
  groups->group.assign(history.size(), -1);
  const bool multi = !objectives_maximize_.empty();
  const double sign = maximize_ ? -1.0 : 1.0;
  std::vector<Scored>& scored = scored_;
  scored.clear();
  mo_pos_.clear();
  mo_losses_.clear();
  int n = 0;
  groups->running = 0;
  // Optuna's _split_trials: running trials first (their constraints are not
  // known yet), then infeasible ones whatever their state, then completed
  // and pruned ones.
  // Rank keys (step_key, value_key, number), the tiers told apart by
  // step_key: completed -inf, pruned -(deepest step) or 1, infeasible the
  // largest finite double, running +inf.
  for (size_t i = 0; i < history.size(); ++i) {
    const Trial& t = history[i];
    Scored s{0, 0, t.number, static_cast<int>(i)};
    if (t.state == TrialState::kCompleted) {
      if (multi) {
        if (t.values.size() != objectives_maximize_.size()) continue;
        if (std::any_of(t.values.begin(), t.values.end(), [](double v) { return std::isnan(v); }))
          continue;
      } else if (!t.value || std::isnan(*t.value)) {
        continue;
      }
      ++n;
      if (const double violation = ConstraintViolation(t); violation > 0) {
        s.step_key = kInfeasible;
        s.value_key = violation;
      } else if (multi) {
        mo_pos_.push_back(static_cast<int>(i));
        mo_losses_.push_back(ToLosses(t.values, objectives_maximize_));
        continue;
      } else {
        s.step_key = -kInf;
        s.value_key = sign * *t.value;
      }
    } else if (t.state == TrialState::kPruned) {
      ++n;
      if (const double violation = ConstraintViolation(t); violation > 0) {
        s.step_key = kInfeasible;
        s.value_key = violation;
      } else if (!t.intermediate.empty()) {
        auto last = std::prev(t.intermediate.end());
        s.step_key = -static_cast<double>(last->first);
        // Several objectives: the step only (see the header).
        s.value_key = multi ? 0 : std::isnan(last->second) ? kInf : sign * last->second;
      } else {
        s.step_key = 1;
        s.value_key = 0;
      }
    } else if (constant_liar_ &&
               (t.state == TrialState::kRunning || t.state == TrialState::kPaused)) {
      s.step_key = kInf;
      s.value_key = kInf;
      ++groups->running;
    } else {
      continue;
    }
    scored.push_back(s);
  }
  groups->n = n;
  int n_below = gamma_ ? static_cast<int>(std::ceil(*gamma_ * n))
                       : multi ? DefaultGammaMultiObjective(n) : DefaultGamma(n);
  n_below = std::max(n_below, 0);
  if (multi) {
    const int n_complete = std::min(n_below, static_cast<int>(mo_pos_.size()));
    SplitMultiObjective(n_complete, &groups->group);
    n_below -= n_complete;
  }
  n_below = std::min(n_below, static_cast<int>(scored.size()));
  auto better = [](const Scored& a, const Scored& b) {
    if (a.step_key != b.step_key) return a.step_key < b.step_key;
    if (a.value_key != b.value_key) return a.value_key < b.value_key;
    return a.number < b.number;
  };
  if (n_below > 0 && n_below < static_cast<int>(scored.size()))
    std::nth_element(scored.begin(), scored.begin() + (n_below - 1), scored.end(), better);
  for (int k = 0; k < static_cast<int>(scored.size()); ++k)
    groups->group[scored[k].pos] = k < n_below;
}

// Optuna's _split_complete_trials_multi_objective: whole fronts of the
// non-dominated sort while they fit in n_below, then the hypervolume
// subset selection (_solve_hssp, reference point _get_reference_point of
// that front alone) picks the rest from the first front that does not fit.
void TpeSplitter::SplitMultiObjective(int n_below, std::vector<signed char>* group) {
  const int m = static_cast<int>(mo_pos_.size());
  if (n_below <= 0 || n_below >= m) {
    for (int pos : mo_pos_) (*group)[pos] = n_below >= m && m > 0;
    return;
  }
  const std::vector<int> ranks = NonDominatedRanks(mo_losses_, {}, n_below);
  const int max_rank = *std::max_element(ranks.begin(), ranks.end());
  std::vector<int> count(max_rank + 1, 0);
  for (int r : ranks) ++count[r];
  // The last rank whose front still fits entirely.
  int last = -1, taken = 0;
  while (last < max_rank && taken + count[last + 1] <= n_below) taken += count[++last];
  for (int i = 0; i < m; ++i) (*group)[mo_pos_[i]] = ranks[i] <= last;
  if (taken == n_below) return;
  std::vector<int> tie;  // indices into mo_* of the front to choose from
  std::vector<Losses> front;
  for (int i = 0; i < m; ++i) {
    if (ranks[i] != last + 1) continue;
    tie.push_back(i);
    front.push_back(mo_losses_[i]);
  }
  // Optuna keeps the last answer (_solve_hssp_with_cache, an lru_cache of
  // size 1): the front to choose from often stays the same from one trial
  // to the next.
  const size_t subset = static_cast<size_t>(n_below - taken);
  if (subset != hssp_subset_ || front != hssp_front_) {
    hssp_chosen_ = SolveHssp(front, subset, HsspReferencePoint(front));
    hssp_subset_ = subset;
    hssp_front_ = std::move(front);
  }
  for (size_t k : hssp_chosen_) (*group)[mo_pos_[tie[k]]] = 1;
}

}  // namespace tune
