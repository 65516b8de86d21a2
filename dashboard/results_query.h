// The read-side queries of the results database that the query commands
// (`tune best`, `tune trials`, `tune importance`, `tune status`:
// tuner/report.cc) and the dashboard's JSON (dashboard/dashboard_data.cc)
// share, so that both answer alike: written once, here, where both may
// include it (docs/architecture.md, section 1.1).
//
// Pure functions of records already read (no Storage call of their own);
// thread-safe.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "search/ped_anova.h"
#include "spec/experiment_spec.h"
#include "storage/storage.h"
#include "storage/trial_schedule.h"

namespace tune {

// The best completed trial of `records`: the best finite value (lowest, or
// highest for Mode::kMax), the first of `records` among equals (they come
// by number), as Storage::TallyTrials picks it; nullptr if none.
const TrialRecord* BestTrial(const std::vector<TrialRecord>& records, Mode mode);

// How many attempts trial `r` has started: attempt + 1 once it started,
// else 0 (the "attempts" of `tune trials` and of the dashboard's rows).
int AttemptsOf(const TrialRecord& r);

// A trial's parameters as a JSON object, each value with its own type (an
// integer without a point, a float with one, a string, a boolean), so that
// it can be fed back as a fixed configuration (`tune best --format json`,
// `tune trials --format json`, the dashboard's rows).
nlohmann::ordered_json ParamsJson(const ParamMap& params);
nlohmann::ordered_json ParamJson(const ParamValue& value);

// The experiment's exploits grouped by recipient (trial id), each group in
// the order recorded: one pass, so that the schedules of n trials cost
// O(n + exploits) rather than O(n * exploits).
std::map<TrialId, std::vector<StoredExploit>> ExploitsByTrial(std::vector<StoredExploit> exploits);

// The schedule of `trial` (TrialScheduleOf) from the grouping above.
std::vector<ScheduleEntry> ScheduleOf(const Trial& trial, const std::map<TrialId, std::vector<StoredExploit>>& by_trial);

// A schedule as JSON (docs/experiment.md, "A trial's schedule"): an array
// of {"step", "params", "donor", "donor_step", "at_step"}, the first entry
// step 0 with the trial's first parameters and donor, donor_step and
// at_step null; each later entry one exploit: from `step` (the donor's
// checkpoint step) on, the trial ran with `params`, continued from trial
// `donor`'s checkpoint-`donor_step`, after reaching its own step
// `at_step`. Params are typed as ParamsJson has them.
nlohmann::ordered_json ScheduleJson(const std::vector<ScheduleEntry>& schedule);

// PED-ANOVA importances (search/ped_anova.h) of the completed trials of
// `records` over the parameters of `spec`, in the objective's direction.
// PedAnovaImportances' errors as they come (FailedPrecondition with fewer
// than 2 usable trials).
Result<PedAnovaResult> ImportancesOf(const ExperimentSpec& spec, const std::vector<TrialRecord>& records);

// Adds the importances to the JSON object `*j`, after what it holds:
// "method": "ped-anova", "trials", "top_trials" and "importances":
// [{"parameter", "importance"}], most important first (docs/dashboard.md;
// `tune importance --format json`).
void AddImportanceJson(const PedAnovaResult& result, nlohmann::ordered_json* j);

}  // namespace tune
