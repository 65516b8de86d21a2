// TrialBackend: runs trial attempts somewhere (local processes, Kubernetes
// Jobs) and hands back their metric reports.
//
// The tuner owns the control loop; a backend only launches, reports and
// kills. Calls come from the tuner's thread; implementations may use their
// own threads internally (e.g. to read pipes) and must then be safe for that.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/trial.h"
#include "trial_runner/secret_key_ref.h"

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
  // Seconds between SIGTERM and SIGKILL when the attempt is stopped
  // (trial.stop_grace_s); on Kubernetes the pods' terminationGracePeriodSeconds.
  double stop_grace_s = 5;
  std::string time_attr = "step";
};

enum class RunState { kStarting, kRunning, kSucceeded, kFailed };

struct RunStatus {
  RunState state = RunState::kStarting;
  std::string message;  // for kFailed: "rank 1 exited with code 3", "timed out after 60 s"
  std::string location; // where it runs, for the database: "local:pgid 4242"
};

// What the machine offers trials (`tune validate`): known only to a
// backend that places attempts itself (local).
struct BackendCapacity {
  std::vector<int> gpu_ids;  // the GPUs trials may use
  double cpu_slots = 0;      // CPU slots in all
  int fit = -1;              // attempts of the asked shape that fit at once; -1: no limit
};

// On `tune run --resume`: the attempts that ran when the tuner stopped and
// are still there, now followed again (or harvested if they ended).
struct ResumeAdoption {
  std::set<TrialId> adopted;
  std::string workload;  // what an attempt runs as, for messages: "Job", "PyTorchJob", ...
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

  // The tuner's interrupt flag: once *stop is true, calls in flight end
  // early and Kill/Shutdown leave what runs for --resume (Kubernetes). Call
  // before Launch; the flag outlives the backend.
  virtual void SetStopFlag(const std::atomic<bool>* stop) { (void)stop; }
  // Checks, without side effects, that an attempt like `spec` can be
  // launched at all (Kubernetes: its manifests render, every text UTF-8), so
  // that `tune run` refuses before it creates anything.
  virtual Status CheckLaunchable(const LaunchSpec& spec) { (void)spec; return Status::Ok(); }
  // On --resume, before any Launch: `running` maps the trials the database
  // says were running to the LaunchSpec each would get now. A backend whose
  // attempts outlive the tuner adopts those still there and removes the rest
  // of what the earlier run left; nullopt where attempts end with the tuner
  // (local), so those trials simply run again.
  virtual Result<std::optional<ResumeAdoption>> AdoptOnResume(const std::map<TrialId, LaunchSpec>& running) {
    (void)running;
    return std::optional<ResumeAdoption>();
  }
  // For `tune validate`: what the machine offers attempts shaped like
  // `shape` (workers, CPU and GPUs per worker); nullopt where the backend
  // does not place attempts itself (a cluster schedules them).
  virtual std::optional<BackendCapacity> Capacity(const LaunchSpec& shape) const {
    (void)shape;
    return std::nullopt;
  }
  // After Shutdown: one line on the backend's own trouble during the run
  // ("Kubernetes API: 120 calls, 3 retries ..."); empty if there was none.
  virtual std::string RunNote() const { return ""; }
  // After Shutdown: what could not be deleted (`kind/name`) and the shell
  // command that deletes it; empty if nothing was left.
  virtual std::vector<std::string> Leftovers() const { return {}; }
  virtual std::string LeftoverCommand() const { return ""; }
};

}  // namespace tune
