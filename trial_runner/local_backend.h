// LocalBackend: runs trial attempts as process groups on this machine.
//
// Each attempt starts `workers` processes (torchrun-style environment, see
// docs/architecture.md, section 4.2), each under a small supervisor in its own process group
// (process_group.h), with a free MASTER_PORT reserved for the attempt
// (port_allocator.h) and CPU slots / GPUs taken from a ResourcePool.
// Rank r's stdout+stderr go to <trial_dir>/rank_<r>.log; rank 0's lines are
// also parsed (ParseMetricLine) into MetricReports.
//
// One monitor thread forks every process (PR_SET_PDEATHSIG is tied to the
// forking thread, so it must outlive the workers), reads rank 0's pipe and
// the workers' pidfds with one poll(), enforces timeouts and SIGKILL
// deadlines, and wakes WaitForEvent through a condition variable as soon as
// a report or an exit arrives.
//
// If the monitor thread fails (an exception: std::bad_alloc, say), it ends
// every attempt's processes, and from then on Launch, Poll and State return
// kInternal naming the error, so the tuner stops in order instead of the
// process ending in std::terminate.
//
// Thread-safety: every public method may be called from any thread.
// The process must not set SIGCHLD to SIG_IGN nor reap children it did not
// start with waitpid(-1) (that would steal the supervisors' exit statuses).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "trial_runner/resource_pool.h"
#include "trial_runner/trial_backend.h"

namespace tune {

class LocalBackend : public TrialBackend {
 public:
  struct Options {
    // CPU slots of the machine; 0 means std::thread::hardware_concurrency().
    double cpu_slots = 0;
    // GPU ids to hand out; nullopt means detect them with `nvidia-smi -L`.
    std::optional<std::vector<int>> gpu_ids;
    // When a rank fails or an attempt times out, the other ranks get
    // SIGTERM, then SIGKILL after this long.
    std::chrono::milliseconds failure_grace{5000};
    // Grace period Shutdown() gives running attempts.
    std::chrono::milliseconds shutdown_grace{5000};
    // For tests (fault injection): called on the monitor thread, with the
    // backend's lock held, at the start of each pass of its loop. What it
    // throws is handled as any failure of the monitor thread.
    std::function<void()> monitor_pass_hook;
  };

  LocalBackend();
  explicit LocalBackend(Options options);
  // Calls Shutdown(): nothing outlives the backend.
  ~LocalBackend() override;

  LocalBackend(const LocalBackend&) = delete;
  LocalBackend& operator=(const LocalBackend&) = delete;

  // True if the attempt's CPU slots and GPUs are free now (false also when
  // it can never fit: Launch then says why).
  bool CanLaunch(const LaunchSpec& spec) override;
  // Reserves resources and a MASTER_PORT and starts every rank; returns
  // once all of them are forked. Non-OK, and nothing held:
  //  kInvalidArgument  bad spec, or more resources than the whole machine
  //                    (the message names the numbers);
  //  kUnavailable      resources busy now (call CanLaunch first);
  //  kNotFound         argv[0] is not an executable;
  //  kFailedPrecondition  the trial's previous attempt still runs,
  //                    Shutdown() was called, or a Secret reference's
  //                    variable is not set (CheckSecretEnv);
  //  kInternal         a log file, pipe or fork failed, or the monitor
  //                    thread did (see above).
  // A previous, finished attempt of the same trial is replaced; its logs
  // are appended to, after a separator line.
  Status Launch(const LaunchSpec& spec) override;
  // kNotFound for a trial never launched here.
  Result<std::vector<MetricReport>> Poll(TrialId id) override;
  // kRunning until every rank has ended and every report has been polled;
  // then kSucceeded (every rank exited 0) or kFailed with a message naming
  // the first failing rank and its exit code or signal, "timed out after N
  // s", or "killed" (Kill). kNotFound for an unknown trial.
  Result<RunStatus> State(TrialId id) override;
  // SIGTERM to every rank's process group now, SIGKILL after `grace`,
  // without blocking. CPU slots, GPUs and the MASTER_PORT are freed when the
  // last rank has exited (as after a failure or a timeout), so a trial that
  // takes its grace period to exit delays the next one rather than sharing
  // the machine with it. OK if the attempt already ended; kNotFound for an
  // unknown trial.
  Status Kill(TrialId id, std::chrono::milliseconds grace = std::chrono::seconds(5)) override;
  void WaitForEvent(std::chrono::milliseconds timeout) override;
  // Kills every running attempt (Options::shutdown_grace), waits until all
  // processes are gone and stops the monitor thread. Later Launch calls
  // fail. Idempotent.
  void Shutdown() override;

  // For tests and the tuner's feasibility check.
  Status CheckFeasible(const LaunchSpec& spec);
  // trial.env values that reference a Kubernetes Secret take, on this
  // backend, the tuner's own environment variable of the same name (every
  // worker inherits the tuner's environment). FailedPrecondition naming the
  // first such variable that is not set; the value is never copied.
  static Status CheckSecretEnv(const std::map<std::string, SecretKeyRef>& secret_env);
  double total_cpu_slots() const;
  std::vector<int> gpu_ids() const;
  // Trials of this shape the machine runs at once (ResourcePool::MaxConcurrent).
  int MaxConcurrent(const LaunchSpec& spec) const;
  // The GPUs, CPU slots and MaxConcurrent(shape).
  std::optional<BackendCapacity> Capacity(const LaunchSpec& shape) const override;

 private:
  struct Rank;
  struct Attempt;
  struct SpawnRequest;

  void MonitorLoop();    // the monitor thread: MonitorPasses, and its catch-all
  void MonitorPasses();
  void MonitorFailed(const std::string& what);  // monitor thread, mu_ held
  void SpawnAttempt(SpawnRequest& request);            // monitor thread
  void ReadOutput(Attempt& a, bool final_drain);       // monitor thread
  void HandleLine(Attempt& a, std::string_view line);  // monitor thread
  void ReapRank(Attempt& a, Rank& r);                  // monitor thread
  void CheckDeadlines(std::chrono::steady_clock::time_point now);
  void FinishIfDone(Attempt& a);  // monitor thread
  void BeginTermination(Attempt& a, std::chrono::milliseconds grace);
  void ReleaseGrant(Attempt& a);
  void Wake();
  void NotifyEvent();

  const Options options_;
  std::vector<int> gpu_ids_;
  int wake_fd_ = -1;  // eventfd: wakes the monitor's poll()

  mutable std::mutex mu_;
  std::condition_variable cv_;  // spawn done, events, attempts done
  ResourcePool pool_;
  std::map<TrialId, std::unique_ptr<Attempt>> attempts_;
  std::deque<SpawnRequest*> spawn_queue_;
  uint64_t event_seq_ = 0;       // bumped on every report and exit
  uint64_t seen_event_seq_ = 0;  // event_seq_ when WaitForEvent last returned
  bool shutting_down_ = false;
  bool stop_monitor_ = false;
  bool monitor_joined_ = false;  // a Shutdown() has claimed the join
  // Non-empty once the monitor thread stopped on an error (see above).
  std::string monitor_error_;

  std::thread monitor_;  // started last
};

}  // namespace tune
