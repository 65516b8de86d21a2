// metric_line_probe: tune's one metric-line rule (trial_runner/metric_report.h)
// on stdin, for the Python trial helper's tests (python/tests): each input
// line gives one output line, `-` for ordinary log output, else the
// report's step as `@step=N` (time_attr "step", position 0) and each metric
// as `name=value` (%.17g; nan, inf, -inf), separated by tabs. Only the tests build it.
#include <cstdio>
#include <iostream>
#include <string>

#include "trial_runner/metric_report.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::optional<tune::MetricReport> r = tune::MetricReportFromLine(line, "step", 0, 0);
    if (!r) {
      std::cout << "-\n";
      continue;
    }
    std::cout << "@step=" << r->step;
    for (const auto& [name, value] : r->values) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", value);
      std::cout << '\t' << name << '=' << buf;
    }
    std::cout << '\n';
  }
  return 0;
}
