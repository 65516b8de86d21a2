// LogFollower: reads one run of one pod's log through `kubectl logs` (rank
// 0 of a trial attempt, docs/kubernetes.md) and hands each complete line
// to a callback, once and in order. The Kubernetes backend owns one per
// attempt and turns the lines into the attempt's reports.
//
// Run() makes passes until told to stop. A pass runs `kubectl logs
// pod/<pod>` (with --follow while the workload runs) and skips the lines
// that earlier passes handed over, so a dropped stream is resumed without
// duplicates; a line cut by a dropped stream is not handed over, the next
// pass reads it whole. Bytes are handed over as they come (no UTF-8 check:
// the metric-line parser decides). Between passes it waits, from
// initial_backoff doubling up to max_backoff.
//
// Once the workload has ended (next_pass says kLast), a pass that reads the
// whole log is the last one; three last passes that end with the same
// unterminated line hand it over (the program printed it so). If last
// passes keep failing for longer than `deadline_s` (or kubectl is
// cancelled), Run gives up and says why.
//
// A pod may run again under its name (a PyTorchJob's pod made again, a
// TrainJob's container restarted in place): when `identity_now` is set,
// each pass first checks that it still returns `identity` (the pod's
// "<uid>/<restart count>"). If not, the pass reads nothing: the new run is
// another follower's. Once the workload ended and an earlier --follow pass
// read the log to its end, that is taken as the whole log.
//
// Thread-safety: Run() on one thread; Stop() from any thread. The callbacks
// are called on Run's thread, never while the follower holds a lock of its
// own, so they may take the caller's locks (and the caller may call Stop()
// under them).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <istream>
#include <mutex>
#include <optional>
#include <string>

#include "k8s/kubectl.h"

namespace tune {

class LogFollower {
 public:
  // What the next pass is: none (stop), a --follow pass while the workload
  // runs, or a last pass after it ended.
  enum class Pass { kStop, kFollow, kLast };

  struct Callbacks {
    std::function<Pass()> next_pass;                  // before every pass
    std::function<void(const std::string&)> on_line;  // each new complete line, without its '\n'
    // "<uid>/<restart count>" of the pod now, "" if it is gone, nullopt if
    // the API did not answer. Unset: the pod never runs again under its name.
    std::function<std::optional<std::string>()> identity_now;
  };

  struct Options {
    std::chrono::milliseconds initial_backoff{250};
    std::chrono::milliseconds max_backoff{10000};
    double deadline_s = 120;  // how long last passes may fail
  };

  // How Run ended: `gave_up` when the last passes could not read the whole
  // log (`tries` passes over `waited_s`; `error`: the last failure).
  struct Outcome {
    bool gave_up = false;
    int tries = 0;
    double waited_s = 0;
    std::string error;
  };

  LogFollower(const Kubectl& kubectl, std::string pod, std::string identity, Options opts, Callbacks callbacks);
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  Outcome Run();
  // Ends Run soon: the kubectl in flight is killed, a wait between passes
  // ends, no further pass starts. Idempotent.
  void Stop();

  // What one pass read from `in` (to its end): `lines` complete lines, of
  // which those numbered past *seen went to on_line (and *seen moved on);
  // `cut` when the stream ended inside a line, whose bytes are `tail`.
  struct Read {
    int64_t lines = 0;
    bool cut = false;
    std::string tail;
  };
  static Read ReadLines(std::istream& in, int64_t* seen, const std::function<void(const std::string&)>& on_line);

 private:
  // One `kubectl logs` pass; true if it read the whole log.
  bool KubectlPass(bool last);
  // A pass's kubectl ended with `code` and stderr `errors` after `read`.
  bool Judge(bool last, const Read& read, int code, const std::string& errors);
  bool Stopped();

  const Kubectl& kubectl_;
  const std::string pod_;
  const std::string identity_;
  const Options opts_;
  const Callbacks callbacks_;

  // Run's state across passes.
  int64_t seen_ = 0;              // complete lines handed over
  bool followed_to_end_ = false;  // a --follow pass read the log to its end
  std::map<std::string, int> same_tail_;  // unterminated last lines of last passes
  std::string last_error_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mu_
  pid_t pid_ = 0;         // guarded by mu_: the kubectl in flight
};

}  // namespace tune
