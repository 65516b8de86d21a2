// The progress summary line (tuner/progress.h): counts, best, elapsed and
// the estimate of the time left.
#include "tuner/progress.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <sstream>

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

Trial Ended(int number, TrialState state, std::optional<double> value) {
  Trial t;
  t.number = number;
  t.state = state;
  t.value = value;
  if (value) t.intermediate[50] = *value;
  t.params = {{"lr", 0.001 * (number + 1)}};
  return t;
}

// What stays on screen: the text after the last "up and clear" sequence.
std::string LastFrame(const std::string& out) {
  const auto at = out.rfind("\033[J");
  return at == std::string::npos ? out : out.substr(at + 3);
}

// The trial numbers of the table's rows (not the summary line).
std::vector<int> RowNumbers(const std::string& frame) {
  std::vector<int> numbers;
  std::istringstream in(frame);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0])) && line.find(" done (") == std::string::npos)
      numbers.push_back(std::stoi(line));
  return numbers;
}

TEST_CASE("the terminal view ends with the best completed trials, best first", "[progress]") {
  History trials = {Ended(0, TrialState::kCompleted, 2.0), Ended(1, TrialState::kPruned, 0.5),
                    Ended(2, TrialState::kCompleted, 1.0), Ended(3, TrialState::kFailed, std::nullopt),
                    Ended(4, TrialState::kCompleted, 3.0), Ended(5, TrialState::kRunning, 0.1)};
  ProgressCounts c = Counts();
  for (bool maximize : {false, true}) {
    std::ostringstream out;
    auto sink = MakeTerminalProgress(out, "loss", maximize);
    sink->OnTick(trials, c);
    trials[5].state = TrialState::kCompleted;
    trials[5].value = 4.0;
    sink->Finish(trials, c);
    const std::string frame = LastFrame(out.str());
    INFO(frame);
    CHECK(frame.rfind("best completed trials:\n", 0) == 0);
    // Pruned, failed and unfinished trials are not candidates, as in tune best.
    CHECK(RowNumbers(frame) == (maximize ? std::vector<int>{5, 4, 0, 2} : std::vector<int>{2, 0, 4, 5}));
    CHECK(frame.find(SummaryLine(c, "loss")) != std::string::npos);
    trials[5].state = TrialState::kRunning;
  }
  // Without a completed trial only the summary stays.
  std::ostringstream out;
  auto sink = MakeTerminalProgress(out, "loss", false);
  sink->Finish({Ended(0, TrialState::kFailed, std::nullopt)}, c);
  CHECK(out.str() == SummaryLine(c, "loss") + "\n\n");
}

}  // namespace
}  // namespace tune
