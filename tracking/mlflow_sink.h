// MlflowSink: logs every trial to an MLflow tracking server while `tune run`
// runs (`"tracking": {"mlflow": ...}` in experiment.json; the mapping is in
// tracking/mlflow_runs.h).
//
// Faults: the tuner's calls only put an item on a queue (bounded: past
// max_queued items the newest are dropped and counted) and return. One
// delivery thread sends the items in order; a call that may work later (no
// connection, a call past its deadline of request_timeout, HTTP 429/5xx)
// is tried again after a pause that doubles from backoff_initial up to
// backoff_max, for as long as the run lasts, so a server that is down or
// restarted gets everything once it is back. An item the server refuses
// (4xx) is dropped and reported. A metric, param or tag key MLflow refuses
// is left out (the rest of its batch is sent) and named once on stderr.
// Finish() waits for the queue to empty while items get through (at most
// max_flush), and gives up once nothing got through for flush_timeout; the
// call in flight then is cut off, so Finish() returns within max_flush plus
// a moment. What was left or dropped is returned, a line each (`tune export
// mlflow` sends it later). A trial's start, reports and end go in one
// runs/log-batch when they wait together; an item waits `linger` for more
// to come while the run goes on.
//
// Per trial the delivery thread reads one row of the database (the trial's
// end) and writes one (its run id); nothing it does grows with the number
// of trials. An unexpected exception in it becomes one line on stderr and a
// sink that drops everything from then on, never std::terminate.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
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
  std::chrono::milliseconds request_timeout = std::chrono::seconds(30);  // a call in all
  std::chrono::milliseconds max_flush = std::chrono::minutes(5);
  // How long an item waits on the queue (while the run goes on) for more
  // of its trial's items to go in the same request: a short trial's start,
  // report and end become one runs/log-batch.
  std::chrono::milliseconds linger = std::chrono::milliseconds(100);
  // Where the sink's lines for the user go as they happen (a refused key,
  // credentials over plain http://): stderr when not set. Called from the
  // constructor and the delivery thread.
  std::function<void(const std::string&)> warn;
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
    std::chrono::steady_clock::time_point queued{};  // set by Push()
  };

  void Push(Item item);
  // The delivery thread: Deliveries() under a catch-all that hands any
  // exception to Died(), which disables the sink with one line on stderr.
  void Loop();
  void Deliveries();
  void Died(const std::string& what);
  // Sends items [0, n) of the queue's front (n > 1 only for reports of one
  // trial, sent as one batch). Unavailable: try again later.
  Status Deliver(const std::vector<Item>& items);
  static std::string Describe(const std::vector<Item>& items);
  // Sends through client_->LogBatch, leaving out the keys refused before
  // and warning once about each key newly refused.
  Status LogBatch(const std::string& run, std::vector<MlflowMetric> metrics, MlflowTags params, MlflowTags tags);
  void Warn(const std::string& line);

  MlflowSinkOptions options_;
  std::string uri_;
  Storage* storage_;
  std::unique_ptr<MlflowClient> client_;  // used by the delivery thread only
  std::unique_ptr<MlflowRuns> runs_;      // used by the delivery thread only
  FinalMetricNames final_metrics_;
  bool parent_running_ = false;           // delivery thread only: parent set RUNNING
  std::set<std::pair<std::string, std::string>> refused_keys_;  // delivery thread only: (kind, key)

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
  bool dead_ = false;          // guarded by mu_: the delivery thread ended on an exception
  size_t refused_ = 0;         // guarded by mu_: items dropped since broken_
  std::string last_error_;     // guarded by mu_: of the last failed try
  size_t handled_ = 0;         // guarded by mu_: items (batches) done with
  std::thread thread_;
};

}  // namespace tune::tracking
