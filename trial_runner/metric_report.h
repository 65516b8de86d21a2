// One line of a trial's rank-0 output as a report: the one rule both
// backends (local and Kubernetes) follow, so the same line gives the same
// report wherever the trial ran (docs/architecture.md, section 4.4).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/trial.h"

namespace tune {

// The report a metric line makes, or nullopt when `line` is ordinary log
// output (ParseMetricLine). `position` is the report's 1-based position
// among the attempt's reports (the caller counts); it is the step unless
// the line carries `time_attr` as a finite number of magnitude below 9e18,
// which is then rounded to the nearest integer (-0 is 0). So `step=1e30`,
// `step=nan` and `step=inf` fall back to the position, never to a value
// that does not fit an int64. `time` is the report's Unix time in seconds.
std::optional<MetricReport> MetricReportFromLine(std::string_view line, const std::string& time_attr,
                                                 int64_t position, double time);

}  // namespace tune
