// MlflowSink: logs every trial to an MLflow tracking server while `tune run`
// runs (`"tracking": {"mlflow": ...}` in experiment.json; the mapping is in
// tracking/mlflow_runs.h).
//
// Faults: the tuner's calls only put an item on a queue (bounded: past
// max_queued items the newest are dropped and counted) and return. One
// delivery thread sends the items in order; a call that may work later (no
// connection, timeout, HTTP 429/5xx) is tried again after a pause that
// doubles from backoff_initial up to backoff_max, for as long as the run
// lasts, so a server that is down or restarted gets everything once it is
// back. An item the server refuses (4xx) is dropped and reported. Finish()
// waits for the queue to empty while items get through (at most 5 minutes),
// and gives up once nothing got through for flush_timeout; what was left or
// dropped is returned, a line each (`tune export mlflow` sends it later).
// Reports of one trial are sent together (runs/log-batch) when several wait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tracking/mlflow_runs.h"
#include "tracking/tracking_sink.h"

namespace tune::tracking {

struct MlflowSinkOptions {
  size_t max_queued = 100000;
  std::chrono::milliseconds flush_timeout = std::chrono::seconds(30);
  std::chrono::milliseconds backoff_initial = std::chrono::milliseconds(200);
  std::chrono::milliseconds backoff_max = std::chrono::seconds(5);
  std::chrono::milliseconds request_timeout = std::chrono::seconds(30);
};

class MlflowSink : public TrackingSink {
 public:
  // `storage` (thread-safe) must outlive the sink; the delivery thread
  // reads trial records and stores run ids through it.
  MlflowSink(MlflowTarget target, Storage* storage, MlflowSinkOptions options = {});
  ~MlflowSink() override;

  void OnAttemptStarted(const Trial& t, const std::string& trial_dir) override;
  // Nothing to send: MLflow cannot delete metric points, so a run keeps the
  // replaced pod's points before the new pod's (tune.attempt is unchanged;
  // the database marks them excluded).
  void OnAttemptRestarted(const Trial&) override {}
  void OnReport(const Trial& t, const MetricReport& r) override;
  void OnTrialFinished(const Trial& t, double time) override;
  std::vector<std::string> Finish() override;

 private:
  enum class Kind { kTrialStart, kReport, kTrialEnd, kExperimentEnd };
  struct Item {
    Kind kind;
    Trial trial;         // kTrialStart, kTrialEnd (number, id, params, state, attempt)
    MetricReport report;  // kReport
    double time = 0;
  };

  void Push(Item item);
  void Loop();
  // Sends items [0, n) of the queue's front (n > 1 only for reports of one
  // trial, sent as one batch). Unavailable: try again later.
  Status Deliver(const std::vector<Item>& items);
  static std::string Describe(const std::vector<Item>& items);

  MlflowSinkOptions options_;
  std::string uri_;
  Storage* storage_;
  std::unique_ptr<MlflowClient> client_;  // used by the delivery thread only
  std::unique_ptr<MlflowRuns> runs_;      // used by the delivery thread only
  bool parent_running_ = false;           // delivery thread only: parent set RUNNING

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;     // guarded by mu_; the front is being delivered
  bool stopping_ = false;      // guarded by mu_: Finish() called
  bool abort_ = false;         // guarded by mu_: stop now, even with items left
  bool finished_ = false;
  size_t dropped_ = 0;         // guarded by mu_: items refused by a full queue
  std::vector<std::string> problems_;  // guarded by mu_: items the server refused
  size_t more_problems_ = 0;   // guarded by mu_: refused past the first lines
  std::string broken_;         // guarded by mu_: why nothing can be logged
  size_t refused_ = 0;         // guarded by mu_: items dropped since broken_
  std::string last_error_;     // guarded by mu_: of the last failed try
  size_t handled_ = 0;         // guarded by mu_: items (batches) done with
  std::thread thread_;
};

}  // namespace tune::tracking
