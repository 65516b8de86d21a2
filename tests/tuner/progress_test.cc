// The progress summary line (tuner/progress.h): counts, best, elapsed and
// the estimate of the time left.
#include "tuner/progress.h"

#include <catch2/catch.hpp>

namespace tune {
namespace {

ProgressCounts Counts() {
  ProgressCounts c;
  c.completed = 5;
  c.pruned = 2;
  c.running = 2;
  c.max_trials = 24;
  c.best_value = 0.3125;
  c.best_number = 4;
  c.elapsed_s = 70;
  return c;
}

TEST_CASE("the summary line estimates the time left from this run's rate", "[progress]") {
  ProgressCounts c = Counts();
  c.finished_this_run = 7;  // 7 trials in 70 s: 10 s each, 17 to go
  CHECK(SummaryLine(c, "loss") ==
        "7/24 done (5 completed, 2 pruned, 0 failed), 2 running | best loss 0.3125 (trial 4) | 1m10s, "
        "about 2m50s left");
  // A resumed run counts only the trials that ended in it.
  c.finished_this_run = 2;  // 35 s each
  CHECK(SummaryLine(c, "loss").find("| 1m10s, about 9m55s left") != std::string::npos);
  // The time budget caps the estimate.
  c.budget_left_s = 30;
  CHECK(SummaryLine(c, "loss").find("| 1m10s, about 30.0s left") != std::string::npos);
  c.budget_left_s = -5;  // spent: nothing left to wait for
  CHECK(SummaryLine(c, "loss").find("about 0.0s left") != std::string::npos);
}

TEST_CASE("no estimate before a trial ends, and none once all are done", "[progress]") {
  ProgressCounts c = Counts();
  c.finished_this_run = 0;
  CHECK(SummaryLine(c, "loss").find("left") == std::string::npos);
  const std::string line = SummaryLine(c, "loss");
  CHECK(line.substr(line.size() - 8) == " | 1m10s");
  c.completed = 20;
  c.pruned = 4;
  c.running = 0;
  c.finished_this_run = 24;
  CHECK(SummaryLine(c, "loss").find("left") == std::string::npos);
  // Stopped trials are shown only when there are some.
  c.stopped = 1;
  CHECK(SummaryLine(c, "loss").find(", 1 stopped)") != std::string::npos);
}

}  // namespace
}  // namespace tune
