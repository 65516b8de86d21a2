#include "tracking/final_metrics.h"

#include <cmath>
#include <map>

namespace tune::tracking {

std::vector<std::pair<std::string, double>> FinalMetrics(const FinalMetricNames& names, const Trial& t) {
  std::vector<std::pair<std::string, double>> out;
  if (t.state != TrialState::kCompleted) return out;
  if (!names.objectives.empty() && t.values.size() == names.objectives.size()) {
    for (size_t i = 0; i < t.values.size(); ++i) {
      if (!std::isnan(t.values[i])) out.emplace_back(names.objectives[i], t.values[i]);
    }
  }
  if (!names.constraints.empty() && t.constraints.size() == names.constraints.size()) {
    std::map<std::string, int> seen;
    for (size_t i = 0; i < t.constraints.size(); ++i) {
      const int n = ++seen[names.constraints[i]];
      const std::string key = "tune.constraint." + names.constraints[i] + (n > 1 ? "." + std::to_string(n) : "");
      if (!std::isnan(t.constraints[i])) out.emplace_back(key, t.constraints[i]);
    }
    out.emplace_back("tune.feasible", IsFeasible(t) ? 1.0 : 0.0);
  }
  return out;
}

}  // namespace tune::tracking
