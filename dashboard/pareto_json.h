// The dashboard's JSON for a multi-objective experiment (docs/dashboard.md,
// "Several objectives"): the objectives, the constraints, the Pareto front,
// the reference point and the hypervolume over trials, all from one
// ComputeParetoView so that the page, `tune report` and `tune best` agree.
//
// Pure functions of records already read; thread-safe.
#pragma once

#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "dashboard/pareto_view.h"
#include "spec/experiment_spec.h"
#include "storage/storage.h"

namespace tune {

// [{"metric", "mode": "min"|"max", "ref": number or null}] in list order.
nlohmann::ordered_json ObjectivesJson(const ExperimentSpec& spec);
// [{"metric", "min": number or null, "max": number or null}] in list order.
nlohmann::ordered_json ConstraintsJson(const ExperimentSpec& spec);

// {"front": [{"number", "values"}] (ParetoView::front's order: the first
// objective best first), "feasible": [numbers], "infeasible": [numbers],
// "reference": [one per objective, raw], "reference_given": [bools],
// "reference_text": DescribeReference, "hypervolume": of the whole front,
// "hypervolume_curve": [[number, hypervolume], ...]}. Non-finite numbers
// are null. `records` as ComputeParetoView takes them.
nlohmann::ordered_json ParetoJson(const ExperimentSpec& spec, const std::vector<TrialRecord>& records,
                                  const ParetoView& view);

}  // namespace tune
