// Trial: an immutable snapshot of one trial, handed to samplers and schedulers.
//
// Samplers and schedulers only ever see copies (as Optuna's FrozenTrial): they
// never touch storage or processes. Snapshots are built by Storage and the
// Tuner; changing one changes nothing else.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/param.h"

namespace tune {

using TrialId = int64_t;       // primary key in storage, unique per database
using ExperimentId = int64_t;

// `stopped`: ended by the tuner (time budget, goal, Ctrl-C), not by the
// scheduler. `pruned`: stopped early by the scheduler. Both are terminal.
enum class TrialState { kPending, kRunning, kPaused, kCompleted, kPruned, kFailed, kStopped };

const char* TrialStateName(TrialState s);  // "pending", "running", ...
std::optional<TrialState> ParseTrialState(const std::string& name);
inline bool IsFinished(TrialState s) {
  return s == TrialState::kCompleted || s == TrialState::kPruned ||
         s == TrialState::kFailed || s == TrialState::kStopped;
}

struct Trial {
  TrialId id = 0;
  int number = 0;  // 0-based order of creation within its experiment
  TrialState state = TrialState::kPending;
  ParamMap params;
  // time_attr value -> objective value, for every report that carried the
  // objective metric (raw, not sign-flipped).
  std::map<int64_t, double> intermediate;
  // The trial's objective value (scope last/best applied) once it is finished
  // or, while running, its latest one. Raw, not sign-flipped.
  std::optional<double> value;
  // Multi-objective experiments (an objective list of 2 to 4): every
  // objective's value, in the order of the list, raw (not sign-flipped),
  // once the trial completed having reported all of them; empty otherwise,
  // and always empty with a single objective (then `value` is it). In a
  // multi-objective experiment `value` and `intermediate` are those of the
  // objective that early stopping ranks on (scheduler.metric, else the
  // first).
  std::vector<double> values;
  // Constraint values, one per experiment constraint in its order, in
  // Optuna's convention (constraints_func): c <= 0 is satisfied, c > 0 is
  // the amount of violation (metric - max, or min - metric). Set when the
  // trial completed; empty without constraints or before completion. A
  // completed trial is feasible when every value is <= 0 (IsFeasible).
  std::vector<double> constraints;
  int attempt = 0;  // retries so far (0 = first attempt)
};

// True if every constraint value is <= 0 (and so with no constraints).
inline bool IsFeasible(const Trial& t) {
  for (double c : t.constraints)
    if (!(c <= 0)) return false;  // NaN counts as violated
  return true;
}

using History = std::vector<Trial>;  // ordered by number

// One metric report parsed from a trial's rank-0 output.
struct MetricReport {
  int64_t step = 0;                        // time_attr value, or report index
  std::map<std::string, double> values;    // every name=value on the line
  double time = 0;                         // seconds since the Unix epoch
  // Non-empty only on a marker that a backend puts into an attempt's
  // reports when its rank 0 started over from scratch (Kubernetes: the Job
  // controller replaced rank 0's pod): every report of the attempt before
  // the marker stops counting, for this reason ("replaced pod"). A marker
  // carries no values.
  std::string restart;
};

}  // namespace tune
