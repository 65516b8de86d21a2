// TrialBackend: runs trial attempts somewhere (local processes, Kubernetes
// Jobs) and hands back their metric reports.
//
// The tuner owns the control loop; a backend only launches, reports and
// kills. Calls come from the tuner's thread; implementations may use their
// own threads internally (e.g. to read pipes) and must then be safe for that.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trial_runner/secret_key_ref.h"
#include "tuner/core/status.h"
#include "tuner/core/trial.h"

namespace tune {

// Everything needed to run one attempt of one trial. `argv` and `env` are
// final: placeholders are already substituted by the tuner.
struct LaunchSpec {
  TrialId trial_id = 0;
  int trial_number = 0;
  int attempt = 0;
  std::string experiment;
  std::vector<std::string> argv;
  // Trial-level environment (user env, TUNE_*). The backend adds the
  // per-worker torchrun variables (RANK, WORLD_SIZE, LOCAL_RANK,
  // LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
  std::map<std::string, std::string> env;
  // Variables whose values come from Secrets; no name is also in `env`.
  std::map<std::string, SecretKeyRef> secret_env;
  std::string trial_dir;    // exists; logs go here (rank_0.log, ...)
  // cwd of the processes; empty: the backend's default (local: the
  // tuner's; Kubernetes: the image's WORKDIR).
  std::string working_dir;
  int workers = 1;
  double cpu_per_worker = 1;
  int gpu_per_worker = 0;
  std::string memory_per_worker;  // Kubernetes only
  double timeout_s = 0;           // 0: none
  std::string time_attr = "step";
};

enum class RunState { kStarting, kRunning, kSucceeded, kFailed };

struct RunStatus {
  RunState state = RunState::kStarting;
  std::string message;  // for kFailed: "rank 1 exited with code 3", "timed out after 60 s"
  std::string location; // where it runs, for the database: "local:pgid 4242"
};

class TrialBackend {
 public:
  virtual ~TrialBackend() = default;

  // Checks that the backend can run trials at all (kubectl present, cluster
  // reachable, permissions). Called once before any trial starts.
  virtual Status Preflight() { return Status::Ok(); }
  // True if an attempt with these resources may start now (local: free CPU
  // slots and GPUs). Launch reserves them; they are freed when the attempt
  // ends or is killed.
  virtual bool CanLaunch(const LaunchSpec& spec) { (void)spec; return true; }
  // Starts an attempt without waiting for it. Non-OK: it did not start and
  // holds no resources (the tuner records a failed attempt).
  virtual Status Launch(const LaunchSpec& spec) = 0;
  // New rank-0 metric reports since the last Poll, in output order, and
  // restart markers (MetricReport::restart) where rank 0 started over.
  virtual Result<std::vector<MetricReport>> Poll(TrialId id) = 0;
  // Current state. kSucceeded/kFailed are final and only returned after
  // every report has been returned by Poll.
  virtual Result<RunStatus> State(TrialId id) = 0;
  // Stops the attempt (local: SIGTERM to every worker's process group, then
  // SIGKILL after `grace`; Kubernetes: delete with foreground propagation)
  // and frees its resources. Idempotent; OK if it already ended.
  virtual Status Kill(TrialId id, std::chrono::milliseconds grace = std::chrono::seconds(5)) = 0;
  // Blocks until some attempt may have news (a report or an exit), or until
  // `timeout`. May return early spuriously.
  virtual void WaitForEvent(std::chrono::milliseconds timeout) = 0;
  // Kills every attempt still running (tuner shutdown). Idempotent.
  virtual void Shutdown() = 0;
  // A one-line notice about the backend itself for the live view and the
  // log ("the Kubernetes API server has not answered for 12 s"), returned
  // once; empty if there is none. Polled by the tuner's thread.
  virtual std::string TakeNotice() { return ""; }
};

}  // namespace tune
