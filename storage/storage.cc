#include "storage/storage.h"

namespace tune {

const char* ExperimentStateName(ExperimentState s) {
  switch (s) {
    case ExperimentState::kRunning: return "running";
    case ExperimentState::kCompleted: return "completed";
    case ExperimentState::kFailed: return "failed";
    case ExperimentState::kStopped: return "stopped";
  }
  return "unknown";
}

std::optional<ExperimentState> ParseExperimentState(const std::string& name) {
  for (ExperimentState s : {ExperimentState::kRunning, ExperimentState::kCompleted,
                            ExperimentState::kFailed, ExperimentState::kStopped}) {
    if (name == ExperimentStateName(s)) return s;
  }
  return std::nullopt;
}

Status Storage::FinishTrialWithValues(TrialId t, TrialState state, std::optional<double> value,
                                      const std::vector<double>& values, const std::vector<double>& constraints,
                                      std::optional<int64_t> pruned_rung, const std::string& message) {
  if (!values.empty() || !constraints.empty()) {
    return Status::FailedPrecondition("this storage does not keep a trial's objective and constraint values");
  }
  return FinishTrial(t, state, value, pruned_rung, message);
}

}  // namespace tune
