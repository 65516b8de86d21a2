#include "k8s/kubernetes_backend.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <future>
#include <optional>
#include <system_error>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "k8s/render.h"
#include "trial_runner/last_line.h"
#include "trial_runner/metric_parser.h"

namespace tune {
namespace bp = boost::process;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kFastPoll = std::chrono::milliseconds(500);
constexpr auto kSlowPoll = std::chrono::milliseconds(4000);
constexpr auto kDeleteTimeout = std::chrono::seconds(180);
const char* kIndexAnnotation = "batch.kubernetes.io/job-completion-index";

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& Path(const json& j, std::initializer_list<const char*> keys) {
  static const json kNull;
  const json* cur = &j;
  for (const char* k : keys) {
    if (!cur->is_object()) return kNull;
    auto it = cur->find(k);
    if (it == cur->end()) return kNull;
    cur = &*it;
  }
  return *cur;
}

// "Complete" or "Failed" with its reason and message, if the Job ended.
struct JobEnd {
  std::string type, reason, message;
};
std::optional<JobEnd> JobEnded(const json& job) {
  const json& conds = Path(job, {"status", "conditions"});
  if (!conds.is_array()) return std::nullopt;
  for (const json& c : conds) {
    std::string type = Str(c, "type");
    if ((type == "Complete" || type == "Failed") && Str(c, "status") == "True") {
      return JobEnd{type, Str(c, "reason"), Str(c, "message")};
    }
  }
  return std::nullopt;
}

bool Deleting(const json& obj) { return !Path(obj, {"metadata", "deletionTimestamp"}).is_null(); }

std::string PodIndex(const json& pod) {
  return Str(Path(pod, {"metadata", "annotations"}), kIndexAnnotation);
}

// Why a pod is not running yet: the scheduler's or the kubelet's reason.
std::string PendingReason(const json& pod) {
  const json& conds = Path(pod, {"status", "conditions"});
  if (conds.is_array()) {
    for (const json& c : conds) {
      if (Str(c, "type") == "PodScheduled" && Str(c, "status") == "False") {
        return Str(c, "reason") + ": " + Str(c, "message");
      }
    }
  }
  const json& cs = Path(pod, {"status", "containerStatuses"});
  if (cs.is_array()) {
    for (const json& c : cs) {
      const json& w = Path(c, {"state", "waiting"});
      if (w.is_object()) {
        std::string m = Str(w, "message");
        return Str(w, "reason") + (m.empty() ? "" : ": " + m);
      }
    }
  }
  return "Pending";
}

// The container has started (running or terminated): its log exists.
bool ContainerStarted(const json& pod) {
  const json& cs = Path(pod, {"status", "containerStatuses"});
  if (!cs.is_array()) return false;
  for (const json& c : cs) {
    const json& st = Path(c, {"state"});
    if (st.contains("running") || st.contains("terminated")) return true;
  }
  return false;
}

// "rank 1 (pod x) exited with code 3 (Error): \"its last log line\"" for
// each failed pod.
std::string PodFailures(const std::vector<const json*>& pods) {
  std::string out;
  for (const json* p : pods) {
    if (Str(Path(*p, {"status"}), "phase") != "Failed") continue;
    std::string what = "rank " + PodIndex(*p) + " (pod " + Str((*p)["metadata"], "name") + ")";
    const json& cs = Path(*p, {"status", "containerStatuses"});
    if (cs.is_array() && !cs.empty()) {
      const json& t = Path(cs[0], {"state", "terminated"});
      if (t.is_object()) {
        what += " exited with code " + std::to_string(t.value("exitCode", -1));
        if (!Str(t, "reason").empty()) what += " (" + Str(t, "reason") + ")";
        if (std::string last = LastLine(Str(t, "message")); !last.empty()) what += ": \"" + last + "\"";
      }
    } else if (!Str(Path(*p, {"status"}), "reason").empty()) {
      what += " failed: " + Str(Path(*p, {"status"}), "reason");
    }
    out += (out.empty() ? "" : "; ") + what;
  }
  return out;
}

}  // namespace

struct KubernetesBackend::Attempt {
  LaunchSpec spec;
  std::string name;
  Clock::time_point launched = Clock::now();
  RunState state = RunState::kStarting;
  std::string message;
  bool final = false;           // the attempt ended (Job condition, timeout, kill)
  bool final_reported = false;  // State() returned the final state
  bool cleaned = false;         // Job and Service deleted
  bool killed = false;
  std::optional<Clock::time_point> pending_since;
  // rank-0 log follower
  std::string log_pod;
  bool follower_started = false;
  bool follower_done = false;
  bool stop_follower = false;
  pid_t follower_pid = 0;
  std::thread follower;
  std::vector<MetricReport> reports;
  int64_t report_count = 0;
};

KubernetesBackend::KubernetesBackend(KubernetesOptions opts, std::string experiment)
    : opts_(std::move(opts)),
      experiment_(std::move(experiment)),
      label_(ExperimentLabelValue(experiment_)),
      kubectl_(opts_) {}

KubernetesBackend::~KubernetesBackend() { Shutdown(); }

std::unique_ptr<KubernetesBackend> MakeKubernetesBackend(const KubernetesOptions& opts,
                                                         const std::string& experiment) {
  return std::make_unique<KubernetesBackend>(opts, experiment);
}

// ---------------------------------------------------------------------------
// Preflight

Status KubernetesBackend::Preflight() {
  if (opts_.image.empty()) {
    return Status::InvalidArgument("backend.image: the kubernetes backend needs a container image");
  }
  TUNE_ASSIGN_OR_RETURN(KubectlOutput client, kubectl_.Run({"version", "--client"}, "",
                                                           std::chrono::seconds(20)));
  if (client.exit_code != 0) {
    return Status::FailedPrecondition("kubectl does not run: " + client.err);
  }
  std::string where = "namespace '" + opts_.namespace_ + "'" +
                      (opts_.context.empty() ? "" : " of context '" + opts_.context + "'");
  auto version = kubectl_.Check({"get", "--raw", "/version"}, "", std::chrono::seconds(20));
  if (!version.ok()) {
    return Status::Unavailable("cannot reach the Kubernetes API server for " + where + ": " +
                               version.status().message());
  }
  // Every permission the backend uses (k8s/rbac.yaml grants exactly these).
  const std::vector<std::vector<std::string>> needed = {
      {"create", "jobs.batch"}, {"get", "jobs.batch"},  {"list", "jobs.batch"}, {"watch", "jobs.batch"},
      {"delete", "jobs.batch"}, {"create", "services"}, {"get", "services"},    {"list", "services"},
      {"watch", "services"},    {"delete", "services"}, {"get", "pods"},        {"list", "pods"},
      {"watch", "pods"},        {"delete", "pods"},     {"get", "pods", "log"}};
  std::vector<std::future<Result<KubectlOutput>>> checks;
  for (const auto& n : needed) {
    std::vector<std::string> args = {"auth", "can-i", n[0], n[1]};
    if (n.size() > 2) args.push_back("--subresource=" + n[2]);
    checks.push_back(std::async(std::launch::async, [this, args] {
      return kubectl_.Run(args, "", std::chrono::seconds(30));
    }));
  }
  std::string denied;
  for (size_t i = 0; i < needed.size(); ++i) {
    Result<KubectlOutput> r = checks[i].get();
    if (!r.ok()) return r.status();
    std::string perm = needed[i][0] + " " + needed[i][1] + (needed[i].size() > 2 ? "/" + needed[i][2] : "");
    if (r->out.rfind("yes", 0) == 0) continue;
    if (r->out.rfind("no", 0) != 0) {
      return Status::Unavailable("kubectl auth can-i " + perm + " failed: " + r->err);
    }
    denied += (denied.empty() ? "" : ", ") + perm;
  }
  if (!denied.empty()) {
    return Status::FailedPrecondition("RBAC: the tuner's Kubernetes identity may not " + denied + " in " +
                                      where + " (k8s/rbac.yaml grants what the backend needs)");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Launch, Poll, State, Kill

std::shared_ptr<KubernetesBackend::Attempt> KubernetesBackend::Track(const LaunchSpec& spec,
                                                                     const std::string& name) {
  auto a = std::make_shared<Attempt>();
  a->spec = spec;
  a->name = name;
  std::shared_ptr<Attempt> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = attempts_.find(spec.trial_id);
    if (it != attempts_.end()) old = it->second;
  }
  if (old) StopFollower(*old);  // a previous attempt of this trial
  std::lock_guard<std::mutex> lock(mu_);
  attempts_[spec.trial_id] = a;
  StartPollerLocked();
  NotifyLocked();
  return a;
}

Status KubernetesBackend::Launch(const LaunchSpec& spec) {
  std::string name = KubernetesObjectName(spec.experiment, spec.trial_number, spec.attempt);
  TUNE_ASSIGN_OR_RETURN(std::string manifests, RenderTrialManifests(opts_, spec, name));
  auto created = kubectl_.Check({"create", "-f", "-", "-o", "name"}, manifests);
  if (!created.ok()) {
    // Nothing half-made is left behind (the Service may exist without the Job).
    (void)DeleteObjects(name, /*wait=*/false);
    return created.status();
  }
  Track(spec, name);
  return Status::Ok();
}

Result<std::vector<MetricReport>> KubernetesBackend::Poll(TrialId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(id);
  if (it == attempts_.end()) return Status::NotFound("no Kubernetes attempt for trial " + std::to_string(id));
  std::vector<MetricReport> out;
  out.swap(it->second->reports);
  return out;
}

Result<RunStatus> KubernetesBackend::State(TrialId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(id);
  if (it == attempts_.end()) return Status::NotFound("no Kubernetes attempt for trial " + std::to_string(id));
  Attempt& a = *it->second;
  RunStatus st;
  st.location = "k8s:" + opts_.namespace_ + "/job/" + a.name;
  bool logs_drained = (!a.follower_started || a.follower_done) && a.reports.empty();
  if (a.final && logs_drained) {
    st.state = a.state;
    st.message = a.message;
    if (!a.final_reported) {
      a.final_reported = true;
      NotifyLocked();  // the poller deletes its objects
    }
  } else {
    st.state = a.state == RunState::kStarting ? RunState::kStarting : RunState::kRunning;
  }
  return st;
}

Status KubernetesBackend::Kill(TrialId id, std::chrono::milliseconds grace) {
  std::shared_ptr<Attempt> a;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return Status::Ok();
    a = it->second;
    if (a->cleaned) return Status::Ok();
    if (!a->final) {
      a->final = true;
      a->killed = true;
      a->state = RunState::kFailed;
      a->message = "killed by the tuner";
    }
    a->final_reported = true;
  }
  StopFollower(*a);
  auto timeout = std::chrono::duration_cast<std::chrono::seconds>(grace) + std::chrono::seconds(120);
  Result<KubectlOutput> r = kubectl_.Run(
      {"delete", "job/" + a->name, "service/" + a->name, "--cascade=foreground", "--ignore-not-found",
       "--wait=true", "--timeout=" + std::to_string(timeout.count()) + "s"},
      "", timeout + std::chrono::seconds(10));
  std::lock_guard<std::mutex> lock(mu_);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return Status::Unavailable("kubectl delete job/" + a->name + ": " + r->err);
  a->cleaned = true;
  NotifyLocked();
  return Status::Ok();
}

void KubernetesBackend::WaitForEvent(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t seen = events_;
  cv_.wait_for(lock, timeout, [&] { return events_ != seen || stopping_; });
}

void KubernetesBackend::NotifyLocked() {
  ++events_;
  cv_.notify_all();
}

void KubernetesBackend::Shutdown() {
  std::vector<std::shared_ptr<Attempt>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !poller_.joinable()) return;
    stopping_ = true;
    cv_.notify_all();
    for (auto& [id, a] : attempts_) all.push_back(a);
  }
  if (poller_.joinable()) poller_.join();
  for (auto& a : all) StopFollower(*a);
  // Deletions of ended attempts run without waiting; this one waits, so
  // nothing labelled with the experiment outlives the run.
  if (!all.empty()) (void)DeleteAll();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& a : all) a->cleaned = true;
}

Status KubernetesBackend::DeleteAll() {
  Result<KubectlOutput> r = kubectl_.Run(
      {"delete", "jobs,services,pods", "-l", std::string(kExperimentLabel) + "=" + label_,
       "--cascade=foreground", "--ignore-not-found", "--wait=true",
       "--timeout=" + std::to_string(kDeleteTimeout.count()) + "s"},
      "", kDeleteTimeout + std::chrono::seconds(10));
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return Status::Unavailable("kubectl delete -l " + label_ + ": " + r->err);
  return Status::Ok();
}

Status KubernetesBackend::DeleteObjects(const std::string& name, bool wait) {
  Result<KubectlOutput> r = kubectl_.Run(
      {"delete", "job/" + name, "service/" + name, "--cascade=foreground", "--ignore-not-found",
       std::string("--wait=") + (wait ? "true" : "false"),
       "--timeout=" + std::to_string(kDeleteTimeout.count()) + "s"},
      "", kDeleteTimeout + std::chrono::seconds(10));
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return Status::Unavailable("kubectl delete job/" + name + ": " + r->err);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// The poller: one `kubectl get jobs,pods` for every attempt of the experiment

void KubernetesBackend::StartPollerLocked() {
  if (poller_.joinable() || stopping_) return;
  poller_ = std::thread([this] { PollerLoop(); });
}

void KubernetesBackend::PollerLoop() {
  auto interval = std::chrono::milliseconds(kFastPoll);
  while (true) {
    std::vector<std::pair<std::string, std::shared_ptr<Attempt>>> to_clean;
    bool active = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) return;
      for (auto& [id, a] : attempts_) {
        if (!a->final) active = true;
        if (a->final_reported && !a->cleaned && !a->killed) to_clean.emplace_back(a->name, a);
      }
    }
    for (auto& [name, a] : to_clean) {
      if (DeleteObjects(name, /*wait=*/false).ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        a->cleaned = true;
      }
    }
    bool changed = active && RefreshOnce();
    interval = changed ? std::chrono::milliseconds(kFastPoll)
                       : std::min(std::chrono::milliseconds(kSlowPoll),
                                  std::chrono::milliseconds(interval.count() * 3 / 2));
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t seen = events_;
    // Woken early by Launch/State (events_) so new attempts are seen at once.
    cv_.wait_for(lock, active ? interval : std::chrono::milliseconds(kSlowPoll),
                 [&] { return stopping_ || events_ != seen; });
    if (events_ != seen) interval = std::chrono::milliseconds(kFastPoll);
  }
}

bool KubernetesBackend::RefreshOnce() {
  std::map<std::string, std::shared_ptr<Attempt>> watched;  // name -> attempt
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, a] : attempts_) {
      if (!a->final) watched[a->name] = a;
    }
  }
  if (watched.empty()) return false;
  auto out = kubectl_.Check({"get", "jobs,pods", "-l", std::string(kExperimentLabel) + "=" + label_, "-o", "json"},
                            "", std::chrono::seconds(60));
  if (!out.ok()) return false;  // transient; the next poll retries
  json list = json::parse(*out, nullptr, false);
  if (list.is_discarded() || !list.contains("items")) return false;
  std::map<std::string, const json*> jobs;
  std::map<std::string, std::vector<const json*>> pods;  // by job name
  for (const json& item : list["items"]) {
    std::string kind = Str(item, "kind");
    std::string name = Str(item["metadata"], "name");
    if (kind == "Job") jobs[name] = &item;
    if (kind == "Pod") pods[Str(Path(item, {"metadata", "labels"}), "job-name")].push_back(&item);
  }

  bool changed = false;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, a] : watched) {
    if (a->final) continue;  // killed meanwhile
    RunState old_state = a->state;
    auto jit = jobs.find(name);
    const std::vector<const json*>& jpods = pods[name];
    if (jit == jobs.end() || Deleting(*jit->second)) {
      a->final = true;
      a->state = RunState::kFailed;
      a->message = "Job " + name + " was deleted outside the tuner";
    } else if (auto end = JobEnded(*jit->second)) {
      a->final = true;
      if (end->type == "Complete") {
        a->state = RunState::kSucceeded;
      } else {
        a->state = RunState::kFailed;
        a->message = "Job failed: " + end->reason + (end->message.empty() ? "" : " (" + end->message + ")");
        std::string pf = PodFailures(jpods);
        if (!pf.empty()) a->message += "; " + pf;
      }
    } else {
      bool any_running = false;
      std::string pending;
      for (const json* p : jpods) {
        if (Deleting(*p)) continue;
        std::string phase = Str(Path(*p, {"status"}), "phase");
        if (phase == "Running") any_running = true;
        if (phase == "Pending" && pending.empty()) {
          pending = "pod " + Str((*p)["metadata"], "name") + " " + PendingReason(*p);
        }
      }
      if (any_running) a->state = RunState::kRunning;
      if (pending.empty()) {
        a->pending_since.reset();
      } else {
        if (!a->pending_since) a->pending_since = Clock::now();
        double waited = std::chrono::duration<double>(Clock::now() - *a->pending_since).count();
        if (waited > opts_.pending_timeout_s) {
          a->final = true;
          a->state = RunState::kFailed;
          a->message = "Pending for more than " + std::to_string(static_cast<int>(opts_.pending_timeout_s)) +
                       " s: " + pending;
        }
      }
    }
    // Follow rank 0's log as soon as its container has started.
    if (!a->follower_started || (a->follower_done && !a->final)) {
      const json* best = nullptr;
      for (const json* p : jpods) {
        if (PodIndex(*p) != "0" || !ContainerStarted(*p)) continue;
        if (!best || Str((*p)["metadata"], "creationTimestamp") >= Str((*best)["metadata"], "creationTimestamp")) {
          best = p;
        }
      }
      if (best) {
        std::string pod = Str((*best)["metadata"], "name");
        if (pod != a->log_pod) StartFollowerLocked(a, pod);
      }
    }
    if (a->final || a->state != old_state) changed = true;
  }
  if (changed) NotifyLocked();
  return changed;
}

// ---------------------------------------------------------------------------
// Rank 0's log

void KubernetesBackend::StartFollowerLocked(const std::shared_ptr<Attempt>& a, const std::string& pod) {
  if (a->follower.joinable()) a->follower.join();  // done: it ended by itself
  a->log_pod = pod;
  a->follower_started = true;
  a->follower_done = false;
  a->follower = std::thread([this, a, pod] { FollowLogs(a, pod); });
}

void KubernetesBackend::StopFollower(Attempt& a) {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    a.stop_follower = true;
    if (a.follower_pid > 0) ::kill(a.follower_pid, SIGTERM);
    cv_.notify_all();
    t = std::move(a.follower);
  }
  if (t.joinable()) t.join();
}

void KubernetesBackend::FollowLogs(std::shared_ptr<Attempt> a, std::string pod) {
  int64_t seen = 0;  // complete lines of this pod already handled
  auto backoff = std::chrono::milliseconds(250);
  std::ofstream log(a->spec.trial_dir.empty() ? std::string("/dev/null") : a->spec.trial_dir + "/rank_0.log",
                    std::ios::app);
  while (true) {
    bool was_final;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (a->stop_follower || stopping_) break;
      // If the Job had already ended when this pass starts, the log is
      // complete: this pass is the last one.
      was_final = a->final;
    }
    std::vector<std::string> args = {"logs", "pod/" + pod};
    if (!was_final) args.push_back("--follow");
    std::vector<std::string> argv = kubectl_.Argv(args);
    if (argv[0].empty()) break;
    try {
      bp::ipstream out;
      bp::child child(bp::exe = argv[0], bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()),
                      bp::std_out > out, bp::std_err > bp::null, bp::std_in < bp::null);
      {
        std::lock_guard<std::mutex> lock(mu_);
        a->follower_pid = child.id();
        if (a->stop_follower) ::kill(child.id(), SIGTERM);
      }
      int64_t n = 0;
      std::string line;
      while (std::getline(out, line)) {
        // A line cut by a dropped stream is read again whole next time.
        if (out.eof() && !was_final) break;
        if (++n <= seen) continue;
        seen = n;
        log << line << '\n';
        auto values = ParseMetricLine(line);
        if (!values) continue;
        std::lock_guard<std::mutex> lock(mu_);
        MetricReport r;
        r.values = std::move(*values);
        ++a->report_count;
        auto step = r.values.find(a->spec.time_attr);
        r.step = step != r.values.end() && std::isfinite(step->second) ? std::llround(step->second)
                                                                       : a->report_count;
        r.time = Now();
        a->reports.push_back(std::move(r));
        NotifyLocked();
      }
      log.flush();
      {
        std::lock_guard<std::mutex> lock(mu_);
        a->follower_pid = 0;  // not reaped yet, so the pid is still ours
      }
      std::error_code ec;
      child.wait(ec);
    } catch (const std::exception&) {
      // kubectl could not be started: retry after the backoff.
    }
    if (was_final) break;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, backoff, [&] { return a->stop_follower || stopping_; });
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
  std::lock_guard<std::mutex> lock(mu_);
  a->follower_done = true;
  NotifyLocked();
}

// ---------------------------------------------------------------------------
// Resume

Result<std::set<TrialId>> KubernetesBackend::AdoptOrClean(const std::map<TrialId, LaunchSpec>& running) {
  TUNE_ASSIGN_OR_RETURN(std::string out,
                        kubectl_.Check({"get", "jobs,services", "-l", std::string(kExperimentLabel) + "=" + label_,
                                        "-o", "json"}));
  json list = json::parse(out, nullptr, false);
  if (list.is_discarded() || !list.contains("items")) {
    return Status::Internal("kubectl get jobs,services: output is not a JSON List");
  }
  // Per trial id, the live Job of the highest attempt.
  std::map<TrialId, std::pair<int, std::string>> best;
  std::vector<std::string> job_names, service_names;
  for (const json& item : list["items"]) {
    std::string name = Str(item["metadata"], "name");
    if (Str(item, "kind") == "Service") {
      service_names.push_back(name);
      continue;
    }
    if (Str(item, "kind") != "Job") continue;
    job_names.push_back(name);
    const json& labels = Path(item, {"metadata", "labels"});
    TrialId id;
    int attempt;
    try {
      id = std::stoll(Str(labels, kTrialIdLabel));
      attempt = std::stoi(Str(labels, kAttemptLabel));
    } catch (const std::exception&) {
      continue;
    }
    if (!running.count(id) || JobEnded(item) || Deleting(item)) continue;
    auto it = best.find(id);
    if (it == best.end() || attempt > it->second.first) best[id] = {attempt, name};
  }
  std::set<TrialId> adopted;
  std::set<std::string> kept;
  for (const auto& [id, an] : best) {
    LaunchSpec spec = running.at(id);
    spec.attempt = an.first;
    Track(spec, an.second);
    adopted.insert(id);
    kept.insert(an.second);
  }
  std::vector<std::string> doomed;
  for (const auto& n : job_names) {
    if (!kept.count(n)) doomed.push_back("job/" + n);
  }
  for (const auto& n : service_names) {
    if (!kept.count(n)) doomed.push_back("service/" + n);
  }
  if (!doomed.empty()) {
    std::vector<std::string> args = {"delete"};
    args.insert(args.end(), doomed.begin(), doomed.end());
    args.insert(args.end(), {"--cascade=foreground", "--ignore-not-found", "--wait=true",
                             "--timeout=" + std::to_string(kDeleteTimeout.count()) + "s"});
    TUNE_ASSIGN_OR_RETURN(std::string ignored, kubectl_.Check(args, "", kDeleteTimeout + std::chrono::seconds(10)));
    (void)ignored;
  }
  return adopted;
}

}  // namespace tune
