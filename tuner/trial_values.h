// TrialValues: a finished trial's value of every objective and constraint
// (Trial::values, Trial::constraints), from the reports that count for it.
//
// Used when a trial of a multi-objective or constrained experiment
// (HasTrialValues) completes: each objective's metric under its scope (the
// report at the highest step, or the best one), each constraint's metric at
// the highest step, turned into Optuna's constraint value
// (ConstraintValue). A metric the reports never carried makes the trial
// fail, named in `missing` ("the objective metric 'adapter_mb'").
#pragma once

#include <string>
#include <vector>

#include "spec/experiment_spec.h"
#include "storage/storage.h"

namespace tune {

struct TrialValues {
  std::vector<double> values;       // one per spec.objectives
  std::vector<double> constraints;  // one per spec.constraints
  std::string missing;              // non-empty: what was never reported
};

// From `reports` (a trial's reports, any attempt, as ListTrialReports
// returns them), those of `attempt` that count (not excluded).
TrialValues ComputeTrialValues(const ExperimentSpec& spec, const std::vector<StoredReport>& reports, int attempt);

}  // namespace tune
