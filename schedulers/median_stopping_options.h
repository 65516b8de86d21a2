// MedianOptions: what configures MedianStoppingRule
// (schedulers/median_stopping_rule.h), in a header of its own so that spec/
// can fill it from experiment.json without the rule (docs/architecture.md,
// section 1.3).
#pragma once

#include <string>

#include "core/status.h"

namespace tune {

struct MedianOptions {
  std::string time_attr = "step";  // only used in messages
  double grace_period = 60;        // Ray's default (in time_total_s there)
  int min_samples_required = 3;
  bool maximize = false;
  bool hard_stop = true;
};

// InvalidArgument for a negative grace_period or min_samples_required < 1.
Status ValidateMedianOptions(const MedianOptions& options);

}  // namespace tune
