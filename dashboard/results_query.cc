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

std::map<TrialId, std::vector<StoredExploit>> ExploitsByTrial(std::vector<StoredExploit> exploits) {
  std::map<TrialId, std::vector<StoredExploit>> out;
  for (StoredExploit& x : exploits) out[x.trial_id].push_back(std::move(x));
  return out;
}

std::vector<ScheduleEntry> ScheduleOf(const Trial& trial, const std::map<TrialId, std::vector<StoredExploit>>& by_trial) {
  auto it = by_trial.find(trial.id);
  if (it == by_trial.end()) return TrialScheduleOf(trial, {});
  return TrialScheduleOf(trial, it->second);
}

nlohmann::ordered_json ScheduleJson(const std::vector<ScheduleEntry>& schedule) {
  using Json = nlohmann::ordered_json;
  Json out = Json::array();
  for (const ScheduleEntry& s : schedule) {
    Json j;
    j["step"] = s.step;
    j["params"] = ParamsJson(s.params);
    j["donor"] = s.donor ? Json(*s.donor) : Json(nullptr);
    j["donor_step"] = s.donor_step ? Json(*s.donor_step) : Json(nullptr);
    j["at_step"] = s.at_step ? Json(*s.at_step) : Json(nullptr);
    out.push_back(std::move(j));
  }
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
