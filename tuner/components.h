// Builds the parts a Tuner drives from a validated spec: the sampler, the
// scheduler and the backend. The one place that maps experiment.json
// options onto each module's own option structs.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "schedulers/scheduler.h"
#include "search/sampler.h"
#include "spec/experiment_spec.h"
#include "trial_runner/trial_backend.h"

namespace tune {

Result<std::unique_ptr<Sampler>> MakeSampler(const ExperimentSpec& spec);
// `seed`: the experiment's search seed (bracket assignment in ASHA).
Result<std::unique_ptr<Scheduler>> MakeScheduler(const ExperimentSpec& spec, uint64_t seed);
// The parameters of new trial `number`: for the first trials, its point of
// search.points_to_evaluate, over its point of `grid` (GridPoints of the
// spec's parameters, cycled by number; one empty point when there is no
// grid); `sampler`, already reseeded for this trial, draws the rest given
// `history`.
ParamMap NewTrialParams(const ExperimentSpec& spec, const std::vector<ParamMap>& grid, int number,
                        Sampler& sampler, const History& history);
// `backend_type`: "local" or "kubernetes"; empty means spec.backend.type.
Result<std::unique_ptr<TrialBackend>> MakeBackend(const ExperimentSpec& spec, const std::string& backend_type);

}  // namespace tune
