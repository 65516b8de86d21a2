// ProgressSink: what `tune run` shows while it works. The tuner reports
// events; a sink decides how to show them (a live table on a terminal, plain
// log lines otherwise, nothing in tests).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "tuner/core/trial.h"

namespace tune {

struct ProgressCounts {
  int pending = 0, running = 0, completed = 0, pruned = 0, failed = 0, stopped = 0;
  int max_trials = 0;
  std::optional<double> best_value;
  std::optional<int> best_number;
  double elapsed_s = 0;
};

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void OnMessage(const std::string& line) = 0;  // a one-line notice
  virtual void OnTrialStarted(const Trial& trial) = 0;
  // A report with the objective's value (if the report had it).
  virtual void OnTrialReport(const Trial& trial, int64_t step, std::optional<double> objective) = 0;
  virtual void OnTrialEnded(const Trial& trial, const std::string& message) = 0;
  // Called at least once a second while running, and at the end.
  virtual void OnTick(const History& trials, const ProgressCounts& counts) = 0;
  virtual void Finish(const ProgressCounts& counts) = 0;
};

// "lr=0.00123457 r=8 opt=adamw": parameters by name, floats to 6
// significant digits (for progress lines; `tune best` has exact values).
std::string ParamsShort(const ParamMap& params);

// Plain log lines (no terminal control), one per event.
std::unique_ptr<ProgressSink> MakeLogProgress(std::ostream& out, std::string metric);
// A live table of trials and a summary line, redrawn in place (ANSI).
std::unique_ptr<ProgressSink> MakeTerminalProgress(std::ostream& out, std::string metric);

}  // namespace tune
