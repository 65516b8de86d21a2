// MedianStoppingRule: the median stopping rule of Google Vizier (Golovin et
// al., KDD 2017), deciding exactly as Ray Tune's MedianStoppingRule.
//
// On a report at time t >= grace_period, the trial is stopped if its best
// objective so far (over all its reports) is strictly worse than the median
// of the other trials' running averages, where the other trials are those
// whose latest report is at t or later and a running average is the mean of
// a trial's reports with grace_period <= time <= t. Running averages that are
// NaN or infinite (no report in the window) are left out; with fewer than
// min_samples_required of them the trial continues. A NaN median or a NaN
// best stops the trial, as Python's min/max make it do in Ray.
//
// Ray's on_trial_complete appends trial.last_result once more (it counts
// twice in that trial's running average): OnTrialComplete does so for a
// trial that ended on its own; for a trial this rule stops, it happens at
// once in OnTrialResult (as Ray's controller calls on_trial_complete right
// after a STOP), and OnTrialComplete is then a no-op.
//
// As for AshaScheduler, reports without the objective never get here (Ray
// skips results without time_attr or the metric).
//
// Differs from Ray: with too few samples Ray may PAUSE the trial to yield to
// waiting trials (min_time_slice); this rule always continues then (the
// tuner starts waiting trials on its own).
//
// A stop is kStop (kPause when hard_stop is false, after which the trial
// runs on unchecked) with `rung` = the time_attr value it was stopped at.
//
// Not thread-safe (see Scheduler).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "schedulers/median_stopping_options.h"
#include "schedulers/scheduler.h"

namespace tune {

class MedianStoppingRule : public Scheduler {
 public:
  explicit MedianStoppingRule(MedianOptions options);

  Decision OnTrialResult(const Trial& trial, int64_t step, double objective) override;
  void OnTrialComplete(const Trial& trial) override;

 private:
  struct TrialRecord {
    std::vector<std::pair<int64_t, double>> results;  // (time, raw objective)
    std::optional<std::pair<int64_t, double>> last_report;
    bool stopped = false;
    bool completed = false;
  };

  double RunningMean(const TrialRecord& record, int64_t t) const;
  double BestResult(const TrialRecord& record) const;

  MedianOptions options_;
  std::vector<TrialId> order_;  // first report order (Ray's dict order)
  std::map<TrialId, TrialRecord> trials_;
};

}  // namespace tune
