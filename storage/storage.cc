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

}  // namespace tune
