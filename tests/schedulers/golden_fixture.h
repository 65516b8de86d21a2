// Loads the fixtures recorded from Ray Tune by golden/make_golden.py and
// replays their events against our schedulers.
#pragma once

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "schedulers/asha_scheduler.h"
#include "schedulers/median_stopping_rule.h"
#include "schedulers/scheduler.h"

namespace tune::testing {

inline nlohmann::json LoadGolden(const std::string& file) {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/tests/schedulers/golden/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// null encodes NaN in the fixtures.
inline double GoldenValue(const nlohmann::json& v) {
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

inline const char* ActionName(Action a) {
  switch (a) {
    case Action::kContinue: return "CONTINUE";
    case Action::kPause: return "PAUSE";
    case Action::kStop: return "STOP";
  }
  return "?";
}

inline TrialId GoldenTrialId(int number) { return 1000 + number; }

// Ray's bracket choices (drawn by NumPy) of a fixture, by trial number.
inline std::map<int, int> GoldenBrackets(const nlohmann::json& c) {
  std::map<int, int> out;
  for (const auto& e : c["events"]) {
    if (e["op"] == "add" && e.contains("bracket")) out[e["trial"]] = e["bracket"];
  }
  return out;
}

inline AshaOptions GoldenAshaOptions(const nlohmann::json& c, bool inject_brackets) {
  const auto& o = c["options"];
  AshaOptions opt;
  opt.max_t = o["max_t"];
  opt.grace_period = o["grace_period"];
  opt.reduction_factor = o["reduction_factor"];
  opt.brackets = o["brackets"];
  opt.maximize = o["mode"] == "max";
  opt.stop_last_trials = o.value("stop_last_trials", true);
  if (inject_brackets) {
    auto brackets = std::make_shared<std::map<int, int>>(GoldenBrackets(c));
    opt.choose_bracket = [brackets](const Trial& t) { return brackets->at(t.number); };
  }
  return opt;
}

inline MedianOptions GoldenMedianOptions(const nlohmann::json& c) {
  const auto& o = c["options"];
  MedianOptions opt;
  opt.grace_period = o["grace_period"];
  opt.min_samples_required = o["min_samples_required"];
  opt.maximize = o["mode"] == "max";
  opt.hard_stop = o.value("hard_stop", true);
  return opt;
}

// One decision per "result" event, in order.
struct Replayed {
  std::vector<Decision> decisions;
};

// Replays a fixture's events. With `adds_first`, every OnTrialAdd comes first
// (by number), as the tuner does on --resume.
inline Replayed ReplayGolden(const nlohmann::json& c, Scheduler& scheduler,
                             bool adds_first = false) {
  std::map<int, Trial> trials;
  auto trial_for = [&](int n) -> Trial& {
    Trial& t = trials[n];
    t.id = GoldenTrialId(n);
    t.number = n;
    return t;
  };
  if (adds_first) {
    std::vector<int> numbers;
    for (const auto& e : c["events"]) {
      if (e["op"] == "add") numbers.push_back(e["trial"]);
    }
    std::sort(numbers.begin(), numbers.end());
    for (int n : numbers) scheduler.OnTrialAdd(trial_for(n));
  }
  Replayed out;
  for (const auto& e : c["events"]) {
    const int n = e["trial"];
    Trial& t = trial_for(n);
    if (e["op"] == "add") {
      t.state = TrialState::kRunning;
      if (!adds_first) scheduler.OnTrialAdd(t);
    } else if (e["op"] == "result") {
      const int64_t step = e["t"];
      const double v = GoldenValue(e["value"]);
      t.intermediate[step] = v;
      t.value = v;
      out.decisions.push_back(scheduler.OnTrialResult(t, step, v));
    } else if (e["op"] == "complete") {
      t.state = TrialState::kCompleted;
      scheduler.OnTrialComplete(t);
    }
  }
  return out;
}

}  // namespace tune::testing
