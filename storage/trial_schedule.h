// A trial's schedule: the parameters it ran with, step by step, as
// Population Based Training changed them (docs/experiment.md, "Population
// Based Training"). What `tune trials`, `tune best`, the dashboard and
// `tune replay` show.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/param.h"
#include "core/trial.h"
#include "storage/storage.h"

namespace tune {

// From `step` on (the steps after it), the trial ran with `params`; the
// first entry is step 0 with the trial's first parameters and no donor.
// After an exploit, `step` is the step of the donor's checkpoint it
// continued from (donor_step), where its new parameters took effect.
struct ScheduleEntry {
  int64_t step = 0;
  ParamMap params;
  std::optional<int> donor;  // the donor's trial number
  std::optional<int64_t> donor_step;
  std::optional<int64_t> at_step;  // the recipient's own last step when it was exploited
};

// The entry an exploit starts: `after` from the donor's step on.
ScheduleEntry ScheduleEntryOf(const StoredExploit& exploit);

// The schedule of `trial` (params: its current parameters) from the
// experiment's exploits (any order; those of other trials are skipped).
std::vector<ScheduleEntry> TrialScheduleOf(const Trial& trial, const std::vector<StoredExploit>& exploits);

}  // namespace tune
