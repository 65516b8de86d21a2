// TpeSplitter: which trials of a history form TPE's l(x) ("below") and
// which g(x) ("above"), as Optuna 5.0's _split_trials
// (optuna/samplers/_tpe/sampler.py) splits them:
//
//   1. n = the completed and pruned trials (feasible or not); the size of
//      "below" is gamma(n): options.gamma when set, else DefaultGamma(n)
//      with one objective and DefaultGammaMultiObjective(n) with several.
//   2. Completed feasible trials fill "below" first: by objective value
//      with one objective; with several, by non-dominated rank (whole fronts
//      while they fit) and a greedy hypervolume subset selection (SolveHssp)
//      on the front that does not fit (_split_complete_trials_multi_objective).
//   3. Then pruned feasible trials, by (deepest step reached, value there),
//      the step first (_get_pruned_trial_score).
//   4. Then infeasible trials (a constraint value > 0), by total violation
//      (_get_infeasible_trial_score: the sum of the positive values).
//   5. With constant_liar, running (and paused) trials are always "above".
//   Ties go to the lower trial number. Failed and stopped trials, and
//   completed ones without an objective value (single objective: no value
//   or NaN; several: values.size() != objectives_maximize.size() or a NaN
//   among them), take no part.
//
// Deviation from Optuna, where Optuna has no rule: with several objectives
// a pruned trial's intermediate values are those of the objective that
// early stopping ranks on, whose direction the sampler does not know, so
// pruned trials rank by their deepest step only (then by number). Optuna
// cannot prune multi-objective studies, so its pruned trials there carry
// no intermediate values and all tie.
//
// Without constraints (every Trial::constraints empty) and with one
// objective the split is the one TpeSampler has always made. Not
// thread-safe (scratch buffers are reused across calls).
#pragma once

#include <vector>

#include "core/pareto.h"
#include "core/trial.h"
#include "search/tpe_options.h"

namespace tune {

// Optuna's default_gamma: the size of the "below" group for n trials,
// min(ceil(0.1 n), 25).
int DefaultGamma(int n);
// Optuna's default_gamma_multiobjective: ceil(0.1 n), without the cap.
int DefaultGammaMultiObjective(int n);

// A trial's total constraint violation (Optuna's
// _get_infeasible_trial_score): the sum of its positive constraint values,
// 0 when feasible; a NaN constraint counts as +infinity (as IsFeasible
// counts it violated).
double ConstraintViolation(const Trial& trial);

// The reference point of the HSSP tie-break (Optuna's _get_reference_point):
// per objective the worst loss w of `front`, then max(1.1 w, 0.9 w), and
// 1e-12 where that is 0. `front` must not be empty.
Losses HsspReferencePoint(const std::vector<Losses>& front);

// The split of one history.
struct TpeGroups {
  std::vector<signed char> group;  // per history position: 1 below, 0 above, -1 unused
  int n = 0;                       // completed and pruned trials (gamma's n)
  int running = 0;                 // running and paused trials (the constant liar's)
};

class TpeSplitter {
 public:
  // Reads maximize, objectives_maximize, gamma and constant_liar.
  explicit TpeSplitter(const TpeSamplerOptions& options);

  // Fills `groups` for `history` (ordered by number). A function of the
  // history alone.
  void Split(const History& history, TpeGroups* groups);

 private:
  // Rank key of a trial split by sorting: (step_key, value_key, number).
  struct Scored {
    double step_key, value_key;
    int number;
    int pos;  // position in the history
  };
  // Marks in `group` the n_below best of the completed feasible trials of
  // a multi-objective history (`mo_pos_`, `mo_losses_`).
  void SplitMultiObjective(int n_below, std::vector<signed char>* group);

  bool maximize_;
  std::vector<bool> objectives_maximize_;
  std::optional<double> gamma_;
  bool constant_liar_;
  std::vector<Scored> scored_;
  std::vector<int> mo_pos_;        // history positions of the completed feasible trials
  std::vector<Losses> mo_losses_;  // their losses
  // The last HSSP problem (front, subset size) and its answer.
  std::vector<Losses> hssp_front_;
  size_t hssp_subset_ = 0;
  std::vector<size_t> hssp_chosen_;
};

}  // namespace tune
