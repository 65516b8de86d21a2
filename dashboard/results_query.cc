#include "dashboard/results_query.h"

#include <cmath>
#include <variant>

#include <nlohmann/json.hpp>

namespace tune {

const TrialRecord* BestTrial(const std::vector<TrialRecord>& records, Mode mode) {
  const TrialRecord* best = nullptr;
  for (const TrialRecord& r : records) {
    if (r.trial.state != TrialState::kCompleted || !r.trial.value || !std::isfinite(*r.trial.value)) continue;
    const double v = *r.trial.value;
    if (best == nullptr || (mode == Mode::kMin ? v < *best->trial.value : v > *best->trial.value)) best = &r;
  }
  return best;
}

int AttemptsOf(const TrialRecord& r) { return r.started_at ? r.trial.attempt + 1 : 0; }

nlohmann::ordered_json ParamJson(const ParamValue& value) {
  return std::visit([](const auto& x) { return nlohmann::ordered_json(x); }, value);
}

nlohmann::ordered_json ParamsJson(const ParamMap& params) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, value] : params) out[name] = ParamJson(value);
  return out;
}

Result<PedAnovaResult> ImportancesOf(const ExperimentSpec& spec, const std::vector<TrialRecord>& records) {
  History trials;
  trials.reserve(records.size());
  for (const TrialRecord& r : records) trials.push_back(r.trial);
  return PedAnovaImportances(spec.parameters, trials, spec.objective.mode == Mode::kMax);
}

void AddImportanceJson(const PedAnovaResult& result, nlohmann::ordered_json* j) {
  using Json = nlohmann::ordered_json;
  (*j)["method"] = "ped-anova";
  (*j)["trials"] = result.trials;
  (*j)["top_trials"] = result.top_trials;
  Json importances = Json::array();
  for (const ParamImportance& p : result.importances) {
    importances.push_back({{"parameter", p.name}, {"importance", p.importance}});
  }
  (*j)["importances"] = std::move(importances);
}

}  // namespace tune
