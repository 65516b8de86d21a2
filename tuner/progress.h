// ProgressSink: what `tune run` shows while it works. The tuner reports
// events; a sink decides how to show them (a live table on a terminal, plain
// log lines otherwise, nothing in tests).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "core/trial.h"

namespace tune {

struct ProgressCounts {
  int pending = 0, running = 0, completed = 0, pruned = 0, failed = 0, stopped = 0;
  int max_trials = 0;
  std::optional<double> best_value;
  std::optional<int> best_number;
  double elapsed_s = 0;          // of this run
  int finished_this_run = 0;     // trials that ended since this run started
  std::optional<double> budget_left_s;  // of limits.time_budget_s, if set
};

// The one-line summary: "7/24 done (5 completed, 2 pruned, 0 failed), 2
// running | best loss 0.31 (trial 4) | 1m05s, about 2m40s left". The time
// left (shown once a trial has ended in this run and trials remain) is
// tqdm's estimate, as Optuna's progress bar shows it: the trials still to
// run at this run's rate of ended trials, capped by the time budget left.
std::string SummaryLine(const ProgressCounts& counts, const std::string& metric);

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
  // Once, at the end of the run.
  virtual void Finish(const History& trials, const ProgressCounts& counts) = 0;
};

// "lr=0.00123457 r=8 opt=adamw": parameters by name, floats to 6
// significant digits (for progress lines; `tune best` has exact values).
std::string ParamsShort(const ParamMap& params);

// Plain log lines (no terminal control), one per event.
std::unique_ptr<ProgressSink> MakeLogProgress(std::ostream& out, std::string metric);
// A live table of trials and a summary line, redrawn in place (ANSI). At
// the end it leaves the best completed trials (up to 10, best first by the
// objective, `maximize` saying which way) and the summary on screen.
std::unique_ptr<ProgressSink> MakeTerminalProgress(std::ostream& out, std::string metric, bool maximize);

}  // namespace tune
