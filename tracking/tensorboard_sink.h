// TensorBoardSink: writes each trial's reports as TensorBoard event files
// (`"tracking": {"tensorboard": ...}` in experiment.json, docs/experiment.md).
//
// Layout: one run directory per trial, <root>/trial_NNNN, holding one
// events.out.tfevents.<time>.<host>.<pid>.<n>.tune-attempt<k> file; root is the
// experiment's runs directory (the trial directories themselves) or
// <dir>/<experiment>. In each run:
// - one scalar per reported metric per step (float64, exact);
// - the HParams plugin's session start with the trial's parameters, and
//   its session end once the trial is finished: completed, pruned and
//   stopped trials are STATUS_SUCCESS (they ran as asked; pruned ones were
//   cut short by the scheduler), failed ones STATUS_FAILURE;
// - with several objectives or constraints, a completed trial's final
//   values (tracking/final_metrics.h) as scalars at its last step, just
//   before the session end.
// A later attempt of the same trial (a retry, or a resume after the tuner
// was stopped), or a restart of the running one (rank 0's pod replaced),
// replaces the earlier attempt's file (the database no longer
// counts its reports; it keeps them), and each file starts with SessionLog
// START, on which a running TensorBoard drops the points it had loaded from
// the earlier attempt. Other files in the directory are left alone.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tracking/final_metrics.h"
#include "tracking/tfrecord_writer.h"
#include "tracking/tracking_sink.h"

namespace tune::tracking {

class TensorBoardSink : public TrackingSink {
 public:
  // root empty: write into each trial's own directory. `final_metrics`:
  // the experiment's objective and constraint names (empty for a single
  // objective without constraints).
  explicit TensorBoardSink(std::string root, FinalMetricNames final_metrics = {});

  void OnAttemptStarted(const Trial& t, const std::string& trial_dir) override;
  // Starts the trial's file again (SessionLog START, session start), as for
  // a new attempt: TensorBoard then shows only the new pod's curve.
  void OnAttemptRestarted(const Trial& t) override;
  void OnReport(const Trial& t, const MetricReport& r) override;
  void OnTrialFinished(const Trial& t, double time) override;
  std::vector<std::string> Finish() override;

  // Run directory of trial number `n` under `root` (trial_0007).
  static std::string RunDir(const std::string& root, int number);

 private:
  struct Run {
    TfRecordWriter writer;
    std::string dir;
    bool broken = false;
    int64_t last_step = 0;  // the highest step reported so far
  };
  void Start(const Trial& t, const std::string& dir);
  void Write(const Trial& t, Run* run, const std::string& record);

  std::string root_;
  FinalMetricNames final_metrics_;
  std::map<TrialId, std::unique_ptr<Run>> runs_;
  std::vector<std::string> problems_;
};

// Writes the run directory of one stored trial at once (`tune export
// tensorboard`): session start at `started_at`, `reports` (the current
// attempt's, in order), the final values of a completed trial (as the
// sink writes them) and the session end at `ended_at` if the trial is
// finished.
Status WriteTrialEvents(const std::string& run_dir, const Trial& t, double started_at,
                        const std::vector<MetricReport>& reports, std::optional<double> ended_at,
                        const FinalMetricNames& final_metrics = {});

}  // namespace tune::tracking
