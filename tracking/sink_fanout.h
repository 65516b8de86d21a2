// SinkFanout: one TrackingSink that passes every event to several (the
// TensorBoard and MLflow sinks of one run), in order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tracking/tracking_sink.h"

namespace tune::tracking {

class SinkFanout : public TrackingSink {
 public:
  void Add(std::unique_ptr<TrackingSink> sink) { sinks_.push_back(std::move(sink)); }
  bool empty() const { return sinks_.empty(); }

  void OnAttemptStarted(const Trial& t, const std::string& trial_dir) override {
    for (auto& s : sinks_) s->OnAttemptStarted(t, trial_dir);
  }
  void OnAttemptRestarted(const Trial& t) override {
    for (auto& s : sinks_) s->OnAttemptRestarted(t);
  }
  void OnReport(const Trial& t, const MetricReport& r) override {
    for (auto& s : sinks_) s->OnReport(t, r);
  }
  void OnTrialFinished(const Trial& t, double time) override {
    for (auto& s : sinks_) s->OnTrialFinished(t, time);
  }
  std::vector<std::string> Finish() override {
    std::vector<std::string> out;
    for (auto& s : sinks_) {
      std::vector<std::string> lines = s->Finish();
      out.insert(out.end(), lines.begin(), lines.end());
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<TrackingSink>> sinks_;
};

}  // namespace tune::tracking
