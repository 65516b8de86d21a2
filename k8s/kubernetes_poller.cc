// The Kubernetes backend's watching half (k8s/kubernetes_backend.h, "State"
// and "Poll"): the poller thread, one `kubectl get` for every attempt of
// the experiment, and the followers of rank 0's log (k8s/log_follower.h).
#include <fstream>

#include <nlohmann/json.hpp>

#include "k8s/attempt_status.h"
#include "k8s/kubernetes_attempt.h"
#include "k8s/kubernetes_backend.h"
#include "k8s/object_fields.h"
#include "k8s/render.h"
#include "trial_runner/metric_report.h"

namespace tune {
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace k8s_object;

namespace {

constexpr auto kFastPoll = std::chrono::milliseconds(500);
constexpr auto kSlowPoll = std::chrono::milliseconds(4000);
// reports.excluded of the reports of a rank-0 pod that the Job controller replaced.
const char kReplacedPod[] = "replaced pod";

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

// ---------------------------------------------------------------------------
// The poller: one `kubectl get jobs,pods` for every attempt of the experiment

void KubernetesBackend::StartPollerLocked() {
  if (poller_.joinable() || stopping_) return;
  poller_ = std::thread([this] { PollerLoop(); });
}

void KubernetesBackend::PollerLoop() {
  auto interval = std::chrono::milliseconds(kFastPoll);
  while (true) {
    // The thread's top: an unexpected exception (a malformed answer, no
    // memory) fails the attempts in flight with one sentence, and the
    // poller goes on; nothing reaches std::terminate.
    try {
      if (!PollOnce(&interval)) return;
    } catch (const std::exception& e) {
      PollerFailed(e.what());
    } catch (...) {
      PollerFailed("an unknown exception");
    }
  }
}

bool KubernetesBackend::PollOnce(std::chrono::milliseconds* interval) {
  bool active = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) return false;
    for (auto& [id, a] : attempts_) {
      if (!a->final) active = true;
      if (a->final_reported && !a->cleaned && !a->killed) {
        a->cleaned = true;
        EnqueueCleanupLocked(a->name);
      }
    }
  }
  if (Interrupted()) return false;
  RunCleanupQueue(/*final_pass=*/false);
  bool changed = active && RefreshOnce();
  *interval = changed ? std::chrono::milliseconds(kFastPoll)
                      : std::min(std::chrono::milliseconds(kSlowPoll),
                                 std::chrono::milliseconds(interval->count() * 3 / 2));
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t seen = events_;
  bool pending_cleanup = !cleanup_.empty();
  // Woken early by Launch/State (events_) so new attempts are seen at once.
  cv_.wait_for(lock, active || pending_cleanup ? *interval : std::chrono::milliseconds(kSlowPoll),
               [&] { return stopping_ || events_ != seen; });
  if (events_ != seen) *interval = std::chrono::milliseconds(kFastPoll);
  return true;
}

void KubernetesBackend::PollerFailed(const std::string& what) noexcept {
  try {
    std::unique_lock<std::mutex> lock(mu_);
    for (auto& [id, a] : attempts_) {
      if (a->final) continue;
      AbandonLocked(*a, "the Kubernetes backend could not follow the " + workload_->Kind() + " " + a->name +
                            ": reading the cluster's state failed (" + what + ")");
    }
    NotifyLocked();
    // Not at once again, should the next poll fail the same way.
    cv_.wait_for(lock, std::chrono::milliseconds(kSlowPoll), [&] { return stopping_; });
  } catch (...) {
    // Nothing more can be done here: the next poll tries again.
  }
}

void KubernetesBackend::AbandonLocked(Attempt& a, const std::string& message) {
  a.final = true;
  a.state = RunState::kFailed;
  a.message = message;
  // Its objects go now; its log is not read further.
  a.stop_follower = true;
  if (a.log_follower) a.log_follower->Stop();
  if (!a.follower_started) a.follower_done = true;
  a.awaiting_log = false;
  if (!a.cleaned) {
    a.cleaned = true;
    EnqueueCleanupLocked(a.name);
  }
}

bool KubernetesBackend::ListWatched(const std::vector<std::string>& names, json* list, json* pod_list,
                                    ClusterView* view) {
  // The workloads and their pods: one call when the pods carry the
  // experiment's label, else a second one for the pods of the watched names.
  const std::string what = workload_->ListName() + (workload_->PodsCarryLabels() ? ",pods" : "");
  auto out = CallApi(kubectl_, {"get", what, "-l", std::string(kExperimentLabel) + "=" + label_, "-o", "json"},
                     "", Policy(false), &stats_);
  if (!out.ok() || !out->ok) return false;  // the next poll tries again
  *list = json::parse(out->output.out, nullptr, false);
  if (list->is_discarded() || !list->contains("items")) return false;
  if (!workload_->PodsCarryLabels()) {
    auto more = CallApi(kubectl_, {"get", "pods", "-l", workload_->PodSelector(names), "-o", "json"}, "",
                        Policy(false), &stats_);
    if (!more.ok() || !more->ok) return false;
    *pod_list = json::parse(more->output.out, nullptr, false);
    if (pod_list->is_discarded() || !pod_list->contains("items")) return false;
  }
  *view = IndexObjects(*workload_, {list, pod_list});
  return true;
}

bool KubernetesBackend::RefreshOnce() {
  std::map<std::string, std::shared_ptr<Attempt>> watched;  // name -> attempt
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, a] : attempts_) {
      if (!a->final || a->awaiting_log) watched[a->name] = a;
    }
  }
  if (watched.empty()) return false;
  for (const auto& w : watched) names.push_back(w.first);
  json list, pod_list;
  ClusterView view;
  if (!ListWatched(names, &list, &pod_list, &view)) return false;
  bool changed = false;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, a] : watched) {
    auto jit = view.workloads.find(name);
    changed |= UpdateAttemptLocked(a, jit == view.workloads.end() ? nullptr : jit->second, view.pods[name]);
  }
  if (changed) NotifyLocked();
  return changed;
}

bool KubernetesBackend::UpdateAttemptLocked(const std::shared_ptr<Attempt>& a, const json* object,
                                            const std::vector<const json*>& pods) {
  const RunState old_state = a->state;
  const bool was_final = a->final;
  const double running_s = std::chrono::duration<double>(Clock::now() - a->launched).count();
  if (a->final) {
    // Ended (e.g. adopted after it completed): only the log is wanted.
  } else if (auto end = EndOf(*workload_, a->name, object, pods, running_s, a->spec.timeout_s)) {
    a->final = true;
    a->state = end->state;
    a->message = end->message;
    if (end->delete_now) {
      a->cleaned = true;
      EnqueueCleanupLocked(a->name);
    }
  } else {
    WatchPendingLocked(*a, pods);
  }
  const json* speaker = RankZeroPod(*workload_, pods);
  if (a->killed) {
    // Stopped by the tuner: nothing more to read.
  } else if (speaker) {
    a->awaiting_log = false;
    std::string pod = Str(Metadata(*speaker), "name");
    std::string id = PodIdentity(*speaker);
    if (pod != a->log_pod || id != a->log_pod_id) {
      if (!a->log_pod.empty()) a->replaced_pods.push_back(a->log_pod);
      StartFollowerLocked(a, pod, id);
    } else if (a->follower_done && !was_final) {
      StartFollowerLocked(a, pod, id);  // its stream ended early: read on
    }
  } else if (a->final && !a->follower_started) {
    a->follower_done = true;  // no pod ever started: nothing to read
    if (a->awaiting_log) {
      a->awaiting_log = false;
      if (a->state == RunState::kSucceeded) {
        a->log_error = "its pods are gone, so rank 0's log (its reports) could not be read";
      }
    }
  }
  return a->final || a->state != old_state;
}

void KubernetesBackend::WatchPendingLocked(Attempt& a, const std::vector<const json*>& pods) {
  if (AnyPodRunning(pods)) a.state = RunState::kRunning;
  const std::string pending = PendingPod(pods);
  if (pending.empty()) {
    a.pending_since.reset();
    return;
  }
  if (!a.pending_since) a.pending_since = Clock::now();
  double waited = std::chrono::duration<double>(Clock::now() - *a.pending_since).count();
  if (waited > opts_.pending_timeout_s) {
    a.final = true;
    a.state = RunState::kFailed;
    a.message = "Pending for more than " + std::to_string(static_cast<int>(opts_.pending_timeout_s)) + " s: " + pending;
  }
}

// ---------------------------------------------------------------------------
// Rank 0's log

void KubernetesBackend::StartFollowerLocked(const std::shared_ptr<Attempt>& a, const std::string& pod,
                                            const std::string& id) {
  if (a->follower.joinable()) {
    if (a->follower_done) {
      a->follower.join();  // it ended by itself
    } else {
      // A replaced pod: its follower ends (its kubectl is killed) and its
      // late lines are dropped (the generation moved on).
      a->log_follower->Stop();
      retired_.push_back(std::move(a->follower));
    }
  }
  if (!a->log_pod.empty() && (a->log_pod != pod || a->log_pod_id != id)) MarkReplacedLocked(*a, pod, id);
  ++a->generation;
  a->log_pod = pod;
  a->log_pod_id = id;
  a->follower_started = true;
  a->follower_done = false;
  a->log_follower = MakeFollowerLocked(a, pod, id);
  a->follower = std::thread([this, a, follower = a->log_follower, pod, gen = a->generation] {
    // The thread's top: an unexpected exception fails the attempt with one
    // sentence; nothing reaches std::terminate.
    std::string error;
    try {
      FollowerEnded(*a, pod, gen, follower->Run());
      return;
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "an unknown exception";
    }
    try {
      std::lock_guard<std::mutex> lock(mu_);
      if (a->generation != gen) return;  // replaced meanwhile: nothing of ours to end
      const std::string why = "rank 0's log (pod " + pod + ") could not be read: " + error;
      if (!a->final) AbandonLocked(*a, why);
      else if (a->state == RunState::kSucceeded && a->log_error.empty()) a->log_error = why;
      a->follower_done = true;
      NotifyLocked();
    } catch (...) {
    }
  });
}

void KubernetesBackend::MarkReplacedLocked(Attempt& a, const std::string& pod, const std::string& id) {
  if (!a.spec.trial_dir.empty()) {
    const bool same_pod =
        a.log_pod == pod && a.log_pod_id.substr(0, a.log_pod_id.find('/')) == id.substr(0, id.find('/'));
    std::ofstream(a.spec.trial_dir + "/rank_0.log", std::ios::app)
        << "--- tune: rank 0's " << (same_pod ? "container in pod " : "pod ") << a.log_pod << " was "
        << (same_pod ? "restarted in place"
                     : a.log_pod == pod ? "replaced by a new pod of the same name" : "replaced by pod " + pod)
        << "; the reports above are the replaced pod's, stored as excluded; the steps below count ---\n";
  }
  // The replaced pod's reports stop counting (the tuner stores them as
  // excluded); the new pod reports from its start.
  MetricReport marker;
  marker.restart = kReplacedPod;
  marker.time = Now();
  a.reports.push_back(std::move(marker));
  a.report_count = 0;
  NotifyLocked();
}

std::shared_ptr<LogFollower> KubernetesBackend::MakeFollowerLocked(const std::shared_ptr<Attempt>& a,
                                                                   const std::string& pod, const std::string& id) {
  const int gen = a->generation;
  // Every line of rank 0 also goes to <trial_dir>/rank_0.log.
  auto log = std::make_shared<std::ofstream>(
      a->spec.trial_dir.empty() ? std::string("/dev/null") : a->spec.trial_dir + "/rank_0.log", std::ios::app);
  LogFollower::Callbacks cb;
  cb.next_pass = [this, a, gen] {
    std::lock_guard<std::mutex> lock(mu_);
    if (a->stop_follower || stopping_ || a->generation != gen) return LogFollower::Pass::kStop;
    // If the workload had already ended when this pass starts, the log is
    // complete: this pass is the last one, once it reads the whole log.
    return a->final ? LogFollower::Pass::kLast : LogFollower::Pass::kFollow;
  };
  cb.on_line = [this, a, gen, log](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    if (a->generation != gen) return;  // replaced meanwhile: drop
    *log << line << '\n' << std::flush;
    if (!line.empty()) a->last_line = line;
    // A metric line becomes the attempt's next report (its step from
    // time_attr, else its position).
    auto r = MetricReportFromLine(line, a->spec.time_attr, a->report_count + 1, Now());
    if (!r) return;
    ++a->report_count;
    a->reports.push_back(std::move(*r));
    NotifyLocked();
  };
  if (workload_->RestartsUnderSameName()) cb.identity_now = [this, pod] { return PodIdentityNow(pod); };
  LogFollower::Options o;
  o.initial_backoff = std::chrono::milliseconds(static_cast<int64_t>(opts_.api_backoff_initial_s * 1000 / 2));
  o.max_backoff = std::chrono::milliseconds(static_cast<int64_t>(opts_.api_backoff_max_s * 1000));
  o.deadline_s = opts_.api_deadline_s;
  return std::make_shared<LogFollower>(kubectl_, pod, id, o, std::move(cb));
}

void KubernetesBackend::FollowerEnded(Attempt& a, const std::string& pod, int gen, const LogFollower::Outcome& o) {
  std::lock_guard<std::mutex> lock(mu_);
  if (a.generation != gen) return;
  if (o.gave_up) {
    a.log_error = "rank 0's log (pod " + pod + ") could not be read after " + std::to_string(o.tries) +
                  " tries over " + std::to_string(static_cast<int>(o.waited_s)) + " s: " + o.error +
                  "; its reports after step " + std::to_string(a.report_count) + " are lost";
  }
  a.follower_done = true;
  NotifyLocked();
}

std::optional<std::string> KubernetesBackend::PodIdentityNow(const std::string& pod) {
  auto r = CallApi(kubectl_,
                   {"get", "pod/" + pod, "-o", "jsonpath={.metadata.uid}/{.status.containerStatuses[0].restartCount}"},
                   "", Policy(false), &stats_);
  if (!r.ok()) return std::nullopt;
  if (r->ok) return r->output.out;
  if (r->failure.reason == "NotFound") return std::string();
  return std::nullopt;
}

void KubernetesBackend::StopFollower(Attempt& a) {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    a.stop_follower = true;
    if (a.log_follower) a.log_follower->Stop();
    cv_.notify_all();
    t = std::move(a.follower);
  }
  if (t.joinable()) t.join();
}

}  // namespace tune
