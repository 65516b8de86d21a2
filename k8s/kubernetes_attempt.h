// The state of one trial attempt inside the Kubernetes backend
// (k8s/kubernetes_backend.h), shared by its two halves:
// k8s/kubernetes_backend.cc (launch, state, kill, cleanup, resume) and
// k8s/kubernetes_poller.cc (the poller and rank 0's log followers).
// Internal to tune_k8s; every field is guarded by the backend's mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "k8s/kubernetes_backend.h"
#include "k8s/log_follower.h"
#include "trial_runner/trial_backend.h"

namespace tune {

struct KubernetesBackend::Attempt {
  LaunchSpec spec;
  std::string name;
  std::chrono::steady_clock::time_point launched = std::chrono::steady_clock::now();
  RunState state = RunState::kStarting;
  std::string message;
  bool final = false;           // the attempt ended (Job condition, timeout, kill)
  bool final_reported = false;  // State() returned the final state
  bool cleaned = false;         // Job and Service deleted (or queued for it)
  bool killed = false;
  bool adopted = false;         // found by AdoptOrClean, not created by Launch
  bool awaiting_log = false;    // ended before it was adopted: its log is still to read
  std::optional<std::chrono::steady_clock::time_point> pending_since;
  // rank-0 log follower: the pod that speaks for the attempt
  std::string log_pod;
  std::string log_pod_id;       // PodIdentity: a pod made again or restarted under its name is another
  int generation = 0;           // bumped when the follower moves to another pod
  std::vector<std::string> replaced_pods;
  bool follower_started = false;
  bool follower_done = false;
  bool stop_follower = false;
  std::shared_ptr<LogFollower> log_follower;  // reads log_pod's log on `follower`
  std::thread follower;
  std::string log_error;        // the final log read failed for good
  std::string last_line;        // rank 0's last non-empty log line
  std::vector<MetricReport> reports;
  int64_t report_count = 0;
};

}  // namespace tune
