// AshaOptions: what configures AshaScheduler (schedulers/asha_scheduler.h),
// in a header of its own so that spec/ can fill it from experiment.json
// without the scheduler (docs/architecture.md, section 1.3).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"
#include "core/trial.h"

namespace tune {

struct AshaOptions {
  std::string time_attr = "step";  // only used in messages; the tuner resolves it
  int64_t max_t = 100;
  int64_t grace_period = 1;
  double reduction_factor = 4;
  int brackets = 1;
  bool maximize = false;
  uint64_t seed = 0;
  // Ray's stop_last_trials: stop trials at max_t. If false, a trial at or
  // past max_t goes on and a trial already recorded at a passed milestone
  // continues without a new check.
  bool stop_last_trials = true;
  // Test hook: returns the bracket index for a new trial instead of the
  // seeded draw (golden tests inject the brackets NumPy chose in Ray).
  std::function<int(const Trial&)> choose_bracket;
};

// InvalidArgument naming the field for options Ray rejects with an assert
// (max_t > 0, grace_period in (0, max_t], reduction_factor > 1, brackets > 0).
Status ValidateAshaOptions(const AshaOptions& options);

}  // namespace tune
