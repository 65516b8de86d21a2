#include "trial_runner/metric_report.h"

#include <cmath>
#include <utility>

#include "trial_runner/metric_parser.h"

namespace tune {

std::optional<MetricReport> MetricReportFromLine(std::string_view line, const std::string& time_attr,
                                                 int64_t position, double time) {
  std::optional<std::map<std::string, double>> values = ParseMetricLine(line);
  if (!values) return std::nullopt;
  MetricReport report;
  report.step = position;
  auto t = values->find(time_attr);
  // 9e18 < 2^63: llround of anything smaller in magnitude fits an int64.
  if (t != values->end() && std::isfinite(t->second) && std::fabs(t->second) < 9e18) {
    report.step = std::llround(t->second);
  }
  report.values = std::move(*values);
  report.time = time;
  return report;
}

}  // namespace tune
