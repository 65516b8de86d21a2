// FakeBackend: a TrialBackend that replays scripted metric streams, so the
// Tuner's control loop can be tested deterministically (leveldb's
// EnvWrapper idea). Each Poll hands out one report; the attempt ends after
// its last report.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <vector>

#include "trial_runner/trial_backend.h"

namespace tune::testing {

struct Script {
  std::vector<MetricReport> reports;
  bool succeed = true;
  std::string failure = "exit code 1";
};

class FakeBackend : public TrialBackend {
 public:
  // `script(spec)` decides what an attempt does.
  explicit FakeBackend(std::function<Script(const LaunchSpec&)> script, int slots = 1000)
      : script_(std::move(script)), slots_(slots) {}

  bool CanLaunch(const LaunchSpec&) override { return static_cast<int>(live_.size()) < slots_; }
  Status Launch(const LaunchSpec& spec) override {
    launches.push_back(spec);
    Run r;
    r.script = script_(spec);
    runs_[spec.trial_id] = r;
    live_.insert(spec.trial_id);
    max_live = std::max(max_live, static_cast<int>(live_.size()));
    return Status::Ok();
  }
  Result<std::vector<MetricReport>> Poll(TrialId id) override {
    Run& r = runs_.at(id);
    if (r.killed || r.next >= r.script.reports.size()) return std::vector<MetricReport>{};
    return std::vector<MetricReport>{r.script.reports[r.next++]};
  }
  Result<RunStatus> State(TrialId id) override {
    Run& r = runs_.at(id);
    RunStatus s;
    s.location = "fake";
    if (r.killed) {
      s.state = RunState::kFailed;
      s.message = "killed";
    } else if (r.next < r.script.reports.size()) {
      s.state = RunState::kRunning;
    } else {
      s.state = r.script.succeed ? RunState::kSucceeded : RunState::kFailed;
      s.message = r.script.failure;
      live_.erase(id);
    }
    return s;
  }
  Status Kill(TrialId id, std::chrono::milliseconds) override {
    killed.insert(id);
    runs_.at(id).killed = true;
    live_.erase(id);
    return Status::Ok();
  }
  void WaitForEvent(std::chrono::milliseconds) override {}
  void Shutdown() override { shutdown = true; }

  std::vector<LaunchSpec> launches;
  std::set<TrialId> killed;
  int max_live = 0;
  bool shutdown = false;

 private:
  struct Run {
    Script script;
    size_t next = 0;
    bool killed = false;
  };
  std::function<Script(const LaunchSpec&)> script_;
  int slots_;
  std::map<TrialId, Run> runs_;
  std::set<TrialId> live_;
};

// A learning curve of `n` reports of `metric`, ending at `final_value`.
inline std::vector<MetricReport> Curve(const std::string& metric, double final_value, int n, int every = 1) {
  std::vector<MetricReport> out;
  for (int i = 1; i <= n; ++i) {
    MetricReport r;
    r.step = i * every;
    r.values["step"] = static_cast<double>(r.step);
    r.values[metric] = final_value + (n - i) * 0.1;
    out.push_back(r);
  }
  return out;
}

}  // namespace tune::testing
