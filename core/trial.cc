#include "core/trial.h"

namespace tune {

const char* TrialStateName(TrialState s) {
  switch (s) {
    case TrialState::kPending: return "pending";
    case TrialState::kRunning: return "running";
    case TrialState::kPaused: return "paused";
    case TrialState::kCompleted: return "completed";
    case TrialState::kPruned: return "pruned";
    case TrialState::kFailed: return "failed";
    case TrialState::kStopped: return "stopped";
  }
  return "unknown";
}

std::optional<TrialState> ParseTrialState(const std::string& name) {
  for (TrialState s : {TrialState::kPending, TrialState::kRunning, TrialState::kPaused,
                       TrialState::kCompleted, TrialState::kPruned, TrialState::kFailed,
                       TrialState::kStopped}) {
    if (name == TrialStateName(s)) return s;
  }
  return std::nullopt;
}

}  // namespace tune
