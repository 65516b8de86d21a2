// TrackingSink: where the tuner sends trial events for outside experiment
// trackers (TensorBoard event files; MLflow later). The tuner calls it from
// its loop after each change is stored, so a sink sees only what the
// database holds. A sink must never fail or stall the tuning: it records what
// it could not deliver and says so in Finish().
#pragma once

#include <string>
#include <vector>

#include "core/trial.h"

namespace tune::tracking {

class TrackingSink {
 public:
  virtual ~TrackingSink() = default;
  // An attempt of `t` (t.attempt) started in `trial_dir`.
  virtual void OnAttemptStarted(const Trial& t, const std::string& trial_dir) = 0;
  // The running attempt's reports so far no longer count (rank 0's pod was
  // replaced; the database keeps them as excluded), and its reports start
  // again from the new pod's first line.
  virtual void OnAttemptRestarted(const Trial& t) = 0;
  // A report of the running attempt: every metric of the line.
  virtual void OnReport(const Trial& t, const MetricReport& r) = 0;
  // `t` reached its final state (t.state, t.value set) at `time` (Unix s).
  virtual void OnTrialFinished(const Trial& t, double time) = 0;
  // The run is over. Returns one line per thing that could not be delivered
  // (empty if everything was).
  virtual std::vector<std::string> Finish() = 0;
};

}  // namespace tune::tracking
