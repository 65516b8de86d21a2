#include "k8s/kubernetes_backend.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <system_error>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "core/json_integer.h"
#include "core/json_text.h"
#include "k8s/child_process.h"
#include "k8s/render.h"
#include "k8s/workload.h"
#include "trial_runner/last_line.h"
#include "trial_runner/metric_report.h"

namespace tune {
namespace bp = boost::process;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kFastPoll = std::chrono::milliseconds(500);
constexpr auto kSlowPoll = std::chrono::milliseconds(4000);
constexpr auto kDeleteTimeout = std::chrono::seconds(180);
// reports.excluded of the reports of a rank-0 pod that the Job controller replaced.
const char kReplacedPod[] = "replaced pod";

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

bool Deleting(const json& obj) { return !Path(obj, {"metadata", "deletionTimestamp"}).is_null(); }

// An object's metadata. Every object kubectl prints has it: an answer
// without it is malformed, and throws (out_of_range, type_error) rather than
// being read as an object that does not exist.
const json& Metadata(const json& obj) { return obj.at("metadata"); }

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

// What a pod's log belongs to: "<uid>/<restart count of its container>" (a
// pod made again under its name has another uid; a container restarted in
// place, another count). The same text as kubectl's jsonpath
// {.metadata.uid}/{.status.containerStatuses[0].restartCount}.
std::string PodIdentity(const json& pod) {
  std::string id = Str(Path(pod, {"metadata"}), "uid") + "/";
  const json& cs = Path(pod, {"status", "containerStatuses"});
  if (cs.is_array() && !cs.empty() && cs[0].is_object() && cs[0].contains("restartCount") &&
      cs[0]["restartCount"].is_number_integer()) {
    id += std::to_string(cs[0]["restartCount"].get<int64_t>());
  }
  return id;
}

// "rank 1 (pod x) exited with code 3 (Error): \"its last log line\"" for
// each failed pod.
std::string PodFailures(const Workload& w, const std::vector<const json*>& pods) {
  std::string out;
  for (const json* p : pods) {
    if (Str(Path(*p, {"status"}), "phase") != "Failed") continue;
    std::string what = "rank " + w.RankOf(*p) + " (pod " + Str(Metadata(*p), "name") + ")";
    const json& cs = Path(*p, {"status", "containerStatuses"});
    if (cs.is_array() && !cs.empty()) {
      const json& t = Path(cs[0], {"state", "terminated"});
      if (t.is_object()) {
        const auto code = t.contains("exitCode") ? JsonInteger<int64_t>(t["exitCode"]) : std::nullopt;
        what += code ? " exited with code " + std::to_string(*code) : std::string(" exited");
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
  bool cleaned = false;         // Job and Service deleted (or queued for it)
  bool killed = false;
  bool adopted = false;         // found by AdoptOrClean, not created by Launch
  bool awaiting_log = false;    // ended before it was adopted: its log is still to read
  std::optional<Clock::time_point> pending_since;
  // rank-0 log follower: the pod that speaks for the attempt
  std::string log_pod;
  std::string log_pod_id;       // PodIdentity: a pod made again or restarted under its name is another
  int generation = 0;           // bumped when the follower moves to another pod
  std::vector<std::string> replaced_pods;
  bool follower_started = false;
  bool follower_done = false;
  bool stop_follower = false;
  pid_t follower_pid = 0;
  std::thread follower;
  std::string log_error;        // the final log read failed for good
  std::string last_line;        // rank 0's last non-empty log line
  std::vector<MetricReport> reports;
  int64_t report_count = 0;
};

KubernetesBackend::KubernetesBackend(KubernetesOptions opts, std::string experiment)
    : opts_(std::move(opts)),
      experiment_(std::move(experiment)),
      label_(ExperimentLabelValue(experiment_)),
      kubectl_(opts_),
      workload_(MakeWorkload(opts_.job_kind) ? MakeWorkload(opts_.job_kind) : MakeWorkload("job")) {}

KubernetesBackend::~KubernetesBackend() {
  Shutdown();
  std::thread watcher;
  {
    std::lock_guard<std::mutex> lock(mu_);
    watcher = std::move(stop_watcher_);
  }
  if (watcher.joinable()) watcher.join();
}

std::unique_ptr<KubernetesBackend> MakeKubernetesBackend(const KubernetesOptions& opts,
                                                         const std::string& experiment) {
  return std::make_unique<KubernetesBackend>(opts, experiment);
}

RetryPolicy KubernetesBackend::Policy(bool retry) const {
  RetryPolicy p;
  p.initial_backoff = std::chrono::milliseconds(static_cast<int64_t>(opts_.api_backoff_initial_s * 1000));
  p.max_backoff = std::chrono::milliseconds(static_cast<int64_t>(opts_.api_backoff_max_s * 1000));
  p.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(opts_.api_call_timeout_s * 1000));
  p.deadline = retry ? std::chrono::milliseconds(static_cast<int64_t>(opts_.api_deadline_s * 1000))
                     : std::chrono::milliseconds(0);
  return p;
}

std::string KubernetesBackend::WorkloadResources() const {
  return workload_->ListName() + (workload_->CompanionResource().empty() ? "" : "," + workload_->CompanionResource() + "s");
}

std::string KubernetesBackend::LocationKind() const {
  std::string k = workload_->Kind();
  for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return k;
}

bool KubernetesBackend::Interrupted() const {
  if (!stop_flag_ || !stop_flag_->load()) return false;
  // Whoever sees the flag first ends the calls in flight: waiting for the
  // stop watcher's next look could mean waiting for a hung call's timeout.
  if (!kubectl_.Cancelled()) kubectl_.Cancel();
  return true;
}

void KubernetesBackend::SetStopFlag(const std::atomic<bool>* stop) {
  std::lock_guard<std::mutex> lock(mu_);
  stop_flag_ = stop;
  if (!stop || stop_watcher_.joinable()) return;
  stop_watcher_ = std::thread([this, stop] {
    // The thread's top: nothing here is expected to throw; if it did, the
    // tuner's own Interrupted() still cancels the calls in flight.
    try {
      for (;;) {
        bool shutting_down;
        {
          std::unique_lock<std::mutex> lock(mu_);
          shutting_down = cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
        }
        // Shutdown may come first (the tuner saw the flag before this thread
        // woke): the calls in flight must end all the same.
        if (stop->load()) {
          kubectl_.Cancel();  // every kubectl in flight ends now
          std::lock_guard<std::mutex> lock(mu_);
          NotifyLocked();
          return;
        }
        if (shutting_down) return;
      }
    } catch (...) {
    }
  });
}

std::string KubernetesBackend::TakeNotice() {
  double stall = kubectl_.SecondsWithoutAnswer();
  std::lock_guard<std::mutex> lock(mu_);
  if (stall >= 10 && stall >= 2 * std::max(5.0, noticed_stall_s_)) {
    noticed_stall_s_ = stall;
    return "the Kubernetes API server has not answered for " + std::to_string(static_cast<int>(stall)) +
           " s (calls are retried)";
  }
  if (stall < 1 && noticed_stall_s_ > 0) {
    noticed_stall_s_ = 0;
    return "the Kubernetes API server answers again";
  }
  return "";
}

// ---------------------------------------------------------------------------
// Preflight

Status KubernetesBackend::Preflight() {
  if (preflight_ok_) return Status::Ok();
  if (opts_.image.empty()) {
    return Status::InvalidArgument("backend.image: the kubernetes backend needs a container image");
  }
  if (!MakeWorkload(opts_.job_kind)) {
    return Status::InvalidArgument("backend.job_kind: expected job, pytorchjob or trainjob, got \"" + opts_.job_kind +
                                   "\"");
  }
  TUNE_ASSIGN_OR_RETURN(KubectlOutput client, kubectl_.Run({"version", "--client"}, "",
                                                           std::chrono::seconds(20)));
  if (client.exit_code != 0) {
    return Status::FailedPrecondition("kubectl does not run: " + client.err);
  }
  // Every call from now on goes to this context, and the commands printed
  // for the user (LeftoverCommand) name it.
  kubectl_.PinContext();
  const std::string context = kubectl_.Context();
  std::string where = "namespace '" + opts_.namespace_ + "'" + (context.empty() ? "" : " of context '" + context + "'");
  TUNE_ASSIGN_OR_RETURN(ApiResult version, CallApi(kubectl_, {"get", "--raw", "/version"}, "", Policy(true), &stats_));
  if (!version.ok) {
    return Status::Unavailable("cannot reach the Kubernetes API server for " + where + ": " +
                               version.failure.message);
  }
  // A Kubeflow kind: its CRD is served (discovery, which every identity
  // may read).
  if (!workload_->GroupVersion().empty()) {
    TUNE_ASSIGN_OR_RETURN(ApiResult gv, CallApi(kubectl_, {"get", "--raw", "/apis/" + workload_->GroupVersion()}, "",
                                                Policy(true), &stats_));
    json list = gv.ok ? json::parse(gv.output.out, nullptr, false) : json();
    bool served = false;
    if (list.is_object() && list.contains("resources") && list["resources"].is_array()) {
      for (const json& r : list["resources"]) served |= Str(r, "name") == workload_->Plural();
    }
    if (!served && (gv.ok || gv.failure.reason == "NotFound")) {
      return Status::FailedPrecondition(workload_->NotInstalled() + " (backend.job_kind \"" + opts_.job_kind + "\")");
    }
    if (!gv.ok) {
      return Status::Unavailable("kubectl get --raw /apis/" + workload_->GroupVersion() + ": " + gv.failure.message);
    }
  }
  // Every permission the backend uses (k8s/rbac.yaml grants exactly these).
  const std::vector<std::vector<std::string>> needed = workload_->Permissions();
  std::vector<std::future<Result<ApiResult>>> checks;
  for (const auto& n : needed) {
    std::vector<std::string> args = {"auth", "can-i", n[0], n[1]};
    if (n.size() > 2) args.push_back("--subresource=" + n[2]);
    checks.push_back(std::async(std::launch::async, [this, args] {
      return CallApi(kubectl_, args, "", Policy(true), &stats_);
    }));
  }
  std::string denied;
  Status failed = Status::Ok();
  for (size_t i = 0; i < needed.size(); ++i) {
    Result<ApiResult> r = checks[i].get();
    if (!r.ok()) {
      if (failed.ok()) failed = r.status();
      continue;
    }
    std::string perm = needed[i][0] + " " + needed[i][1] + (needed[i].size() > 2 ? "/" + needed[i][2] : "");
    // can-i exits 1 and prints "no" when denied.
    if (r->output.out.rfind("yes", 0) == 0) continue;
    if (r->output.out.rfind("no", 0) != 0) {
      if (failed.ok()) failed = Status::Unavailable("kubectl auth can-i " + perm + " failed: " + r->failure.message);
      continue;
    }
    denied += (denied.empty() ? "" : ", ") + perm;
  }
  if (!failed.ok()) return failed;
  if (!denied.empty()) {
    return Status::FailedPrecondition("RBAC: the tuner's Kubernetes identity may not " + denied + " in " +
                                      where + " (k8s/rbac.yaml grants what the backend needs)");
  }
  // The namespace exists. Namespaces are cluster-scoped: an identity with
  // only the kit's Role may not read them (Forbidden), then creates tell.
  TUNE_ASSIGN_OR_RETURN(ApiResult ns, CallApi(kubectl_, {"get", "namespace", opts_.namespace_, "-o", "name"}, "",
                                              Policy(true), &stats_));
  if (!ns.ok && ns.failure.reason == "NotFound") {
    return Status::FailedPrecondition("backend.namespace: namespace '" + opts_.namespace_ +
                                      "' does not exist in the cluster" +
                                      (context.empty() ? "" : " of context '" + context + "'") +
                                      " (create it, e.g. kubectl apply -f k8s/namespace.yaml)");
  }
  preflight_ok_ = true;
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

Status KubernetesBackend::CreateObject(const std::string& manifest, const std::string& ref, const LaunchSpec& spec) {
  TUNE_ASSIGN_OR_RETURN(ApiResult r, CallApi(kubectl_, {"create", "-f", "-", "-o", "name"}, manifest, Policy(true),
                                              &stats_));
  if (r.ok) return Status::Ok();
  if (r.failure.reason == "AlreadyExists") {
    // A retry after an unknown outcome (or a resumed run): the object is
    // ours if its labels name this attempt.
    TUNE_ASSIGN_OR_RETURN(ApiResult got, CallApi(kubectl_, {"get", ref, "-o", "json"}, "", Policy(true), &stats_));
    json obj = got.ok ? json::parse(got.output.out, nullptr, false) : json();
    const json& labels = Path(obj, {"metadata", "labels"});
    if (got.ok && Str(labels, kExperimentLabel) == label_ && Str(labels, kTrialIdLabel) == std::to_string(spec.trial_id) &&
        Str(labels, kAttemptLabel) == std::to_string(spec.attempt)) {
      return Status::Ok();
    }
    return Status::FailedPrecondition("kubectl create " + ref + ": " + r.failure.message +
                                      " (and it is not this attempt's: its labels differ)");
  }
  std::string tail = r.failure.transient ? " (gave up after " + std::to_string(r.tries) + " tries)" : "";
  return Status::Unavailable("kubectl create " + ref + ": " + r.failure.message + tail);
}

Status KubernetesBackend::Launch(const LaunchSpec& spec) {
  std::string name = KubernetesObjectName(spec.experiment, spec.trial_number, spec.attempt);
  {
    // A Job adopted on resume speaks for this trial: no second Job.
    std::lock_guard<std::mutex> lock(mu_);
    auto it = attempts_.find(spec.trial_id);
    if (it != attempts_.end() && it->second->adopted) {
      Attempt& a = *it->second;
      a.adopted = false;  // a later Launch (a retry) creates a fresh Job
      std::string dir = a.spec.trial_dir;
      int attempt = a.spec.attempt;
      a.spec = spec;
      a.spec.attempt = attempt;
      if (!dir.empty() && dir != spec.trial_dir) a.spec.trial_dir = dir;
      return Status::Ok();
    }
  }
  TUNE_ASSIGN_OR_RETURN(std::string manifests, RenderTrialManifests(opts_, spec, name));
  if (Interrupted()) {
    // Ctrl-C: nothing is created; the trial runs again on --resume.
    Track(spec, name);
    return Status::Ok();
  }
  json list = json::parse(manifests);
  for (const json& item : list["items"]) {
    std::string ref = Str(item, "kind") == "Service" ? "service/" + name : workload_->Ref(name);
    Status st = CreateObject(DumpJson(item), ref, spec);
    if (!st.ok()) {
      if (Interrupted()) {
        Track(spec, name);
        return Status::Ok();
      }
      // Nothing half-made is left behind (the Service may exist without the Job).
      std::lock_guard<std::mutex> lock(mu_);
      EnqueueCleanupLocked(name);
      StartPollerLocked();
      return st;
    }
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
  st.location = "k8s:" + opts_.namespace_ + "/" + LocationKind() + "/" + a.name;
  bool logs_drained = !a.awaiting_log && (!a.follower_started || a.follower_done) && a.reports.empty();
  if (a.final && logs_drained) {
    st.state = a.state;
    st.message = a.message;
    if (a.state == RunState::kSucceeded && !a.log_error.empty()) {
      // The Job succeeded but its result could not be read: say exactly that.
      st.state = RunState::kFailed;
      st.message = "the Job completed, but " + a.log_error;
    }
    if (st.state == RunState::kFailed && !a.killed && !a.last_line.empty() &&
        st.message.find(a.last_line) == std::string::npos) {
      // Rank 0's own words, when the failed pods' statuses did not carry
      // them: the pods were gone before they were seen (the training
      // operator deletes every pod of a PyTorchJob that fails past its
      // backoffLimit or deadline), or the container has no
      // FallbackToLogsOnError (a TrainJob's runtime decides).
      st.message += (st.message.empty() ? "" : "; ") + std::string("rank 0's last log line: \"") + a.last_line + "\"";
    }
    if (!a.replaced_pods.empty() && st.state == RunState::kFailed) {
      st.message += (st.message.empty() ? "" : "; ") + std::string("rank 0's pod was replaced (") +
                    std::to_string(a.replaced_pods.size()) + "x)";
    }
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
  // Ctrl-C: the Job stays for --resume.
  if (Interrupted()) return Status::Ok();
  auto timeout = std::chrono::duration_cast<std::chrono::seconds>(grace) + std::chrono::seconds(60);
  RetryPolicy once = Policy(false);
  once.call_timeout = std::min<std::chrono::milliseconds>(timeout, Policy(false).call_timeout + grace);
  std::vector<std::string> args = {"delete"};
  for (const std::string& ref : workload_->DeleteRefs(a->name)) args.push_back(ref);
  args.insert(args.end(), {"--cascade=foreground", "--ignore-not-found", "--wait=true",
                           "--timeout=" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(once.call_timeout).count()) + "s"});
  Result<ApiResult> r = CallApi(kubectl_, args, "", once, &stats_);
  std::lock_guard<std::mutex> lock(mu_);
  a->cleaned = true;
  if (!r.ok() || !r->ok) {
    // Deletion never fails the experiment: the poller retries it.
    if (!Interrupted()) EnqueueCleanupLocked(a->name);
  }
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
  std::vector<std::thread> retired;
  (void)Interrupted();  // after Ctrl-C: the calls in flight end before the joins below
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !poller_.joinable()) return;
    stopping_ = true;
    cv_.notify_all();
    for (auto& [id, a] : attempts_) all.push_back(a);
  }
  if (poller_.joinable()) poller_.join();
  for (auto& a : all) StopFollower(*a);
  {
    std::lock_guard<std::mutex> lock(mu_);
    retired.swap(retired_);
  }
  for (auto& t : retired) {
    if (t.joinable()) t.join();
  }
  if (Interrupted()) return;  // the Jobs stay for --resume
  bool had_work = !all.empty();
  {
    std::lock_guard<std::mutex> lock(mu_);
    had_work |= !cleanup_.empty();
    for (auto& a : all) {
      if (!a->cleaned) EnqueueCleanupLocked(a->name);
      a->cleaned = true;
    }
  }
  if (!had_work) return;
  // Queued deletions, retried until api_deadline_s; then whatever carries
  // the experiment's label; what is left is reported.
  RunCleanupQueue(/*final_pass=*/true);
  if (Interrupted()) return;
  (void)DeleteAll();
  std::vector<std::string> left;
  auto listed = CallApi(kubectl_, {"get", WorkloadResources(), "-l", std::string(kExperimentLabel) + "=" + label_, "-o", "name"},
                        "", Policy(true), &stats_);
  if (listed.ok() && listed->ok) {
    std::istringstream in(listed->output.out);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) left.push_back(line);
    }
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, c] : cleanup_) {
      left.push_back((workload_->Kind() == "Job" ? std::string("job.batch") : workload_->Resource()) + "/" + name);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  leftovers_ = left;
}

std::vector<std::string> KubernetesBackend::Leftovers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leftovers_;
}

std::string KubernetesBackend::LeftoverCommand() const {
  if (Leftovers().empty()) return "";
  return KubectlCommandLine(kubectl_, {"delete", workload_->LabelledResources(), "-l",
                                       std::string(kExperimentLabel) + "=" + label_, "--cascade=foreground"});
}

Status KubernetesBackend::CheckLaunchable(const LaunchSpec& spec) {
  return RenderTrialManifests(opts_, spec, KubernetesObjectName(experiment_, spec.trial_number, spec.attempt))
      .status();
}

Result<std::optional<ResumeAdoption>> KubernetesBackend::AdoptOnResume(
    const std::map<TrialId, LaunchSpec>& running) {
  TUNE_ASSIGN_OR_RETURN(std::set<TrialId> adopted, AdoptOrClean(running));
  return std::optional<ResumeAdoption>(ResumeAdoption{std::move(adopted), WorkloadKind()});
}

std::string KubernetesBackend::RunNote() const {
  if (stats_.retried == 0 && stats_.failed == 0) return "";
  return "Kubernetes API: " + std::to_string(stats_.calls) + " calls, " + std::to_string(stats_.retried) +
         " retries after transient errors, " + std::to_string(stats_.failed) + " calls failed in the end";
}

Status KubernetesBackend::DeleteAll() {
  TUNE_ASSIGN_OR_RETURN(
      ApiResult r,
      CallApi(kubectl_,
              {"delete", workload_->LabelledResources(), "-l", std::string(kExperimentLabel) + "=" + label_,
               "--cascade=foreground", "--ignore-not-found", "--wait=true",
               "--timeout=" + std::to_string(static_cast<int>(opts_.api_call_timeout_s)) + "s"},
              "", Policy(true), &stats_));
  if (!r.ok) return Status::Unavailable("kubectl delete -l " + label_ + ": " + r.failure.message);
  return Status::Ok();
}

void KubernetesBackend::EnqueueCleanupLocked(const std::string& name) {
  if (!cleanup_.count(name)) cleanup_[name] = Cleanup{Clock::now(), 0, ""};
}

void KubernetesBackend::RunCleanupQueue(bool final_pass) {
  const auto until = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(opts_.api_deadline_s * 1000));
  for (;;) {
    std::vector<std::string> due;
    std::optional<Clock::time_point> next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [name, c] : cleanup_) {
        if (c.next_try <= Clock::now()) due.push_back(name);
        else if (!next || c.next_try < *next) next = c.next_try;
      }
    }
    for (const std::string& name : due) {
      std::vector<std::string> args = {"delete"};
      for (const std::string& ref : workload_->DeleteRefs(name)) args.push_back(ref);
      args.insert(args.end(), {"--cascade=foreground", "--ignore-not-found", "--wait=false"});
      auto r = CallApi(kubectl_, args, "", Policy(false), &stats_);
      std::lock_guard<std::mutex> lock(mu_);
      Cleanup& c = cleanup_[name];
      if (r.ok() && r->ok) {
        cleanup_.erase(name);
        continue;
      }
      ++c.tries;
      c.error = r.ok() ? r->failure.message : r.status().message();
      auto backoff = std::min(opts_.api_backoff_max_s, opts_.api_backoff_initial_s * (1 << std::min(c.tries, 10)));
      c.next_try = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(backoff * 1000));
      if (!next || c.next_try < *next) next = c.next_try;
    }
    if (!final_pass || Interrupted() || kubectl_.Cancelled()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cleanup_.empty()) return;
    }
    if (Clock::now() >= until) return;
    auto wake = std::min(next.value_or(Clock::now()), until);
    std::this_thread::sleep_until(std::max(wake, Clock::now() + std::chrono::milliseconds(20)));
  }
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
  if (a.follower_pid > 0) ::kill(-a.follower_pid, SIGKILL);
  if (!a.follower_started) a.follower_done = true;
  a.awaiting_log = false;
  if (!a.cleaned) {
    a.cleaned = true;
    EnqueueCleanupLocked(a.name);
  }
}

bool KubernetesBackend::RefreshOnce() {
  std::map<std::string, std::shared_ptr<Attempt>> watched;  // name -> attempt
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, a] : attempts_) {
      if (!a->final || a->awaiting_log) watched[a->name] = a;
    }
  }
  if (watched.empty()) return false;
  // The workloads and their pods: one call when the pods carry the
  // experiment's label, else a second one for the pods of the watched names.
  const std::string what = workload_->ListName() + (workload_->PodsCarryLabels() ? ",pods" : "");
  auto out = CallApi(kubectl_, {"get", what, "-l", std::string(kExperimentLabel) + "=" + label_, "-o", "json"},
                     "", Policy(false), &stats_);
  if (!out.ok() || !out->ok) return false;  // the next poll tries again
  json list = json::parse(out->output.out, nullptr, false);
  if (list.is_discarded() || !list.contains("items")) return false;
  json pod_list;
  if (!workload_->PodsCarryLabels()) {
    std::vector<std::string> names;
    for (const auto& [name, a] : watched) names.push_back(name);
    auto more = CallApi(kubectl_, {"get", "pods", "-l", workload_->PodSelector(names), "-o", "json"}, "",
                        Policy(false), &stats_);
    if (!more.ok() || !more->ok) return false;
    pod_list = json::parse(more->output.out, nullptr, false);
    if (pod_list.is_discarded() || !pod_list.contains("items")) return false;
  }
  std::map<std::string, const json*> jobs;
  std::map<std::string, std::vector<const json*>> pods;  // by workload name
  for (const json* l : {&list, &pod_list}) {
    if (!l->is_object() || !l->contains("items")) continue;
    for (const json& item : (*l)["items"]) {
      std::string kind = Str(item, "kind");
      std::string name = Str(Metadata(item), "name");
      if (kind == workload_->Kind()) jobs[name] = &item;
      if (kind == "Pod") pods[workload_->OwnerOf(item)].push_back(&item);
    }
  }

  bool changed = false;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, a] : watched) {
    RunState old_state = a->state;
    bool was_final = a->final;
    auto jit = jobs.find(name);
    const std::vector<const json*>& jpods = pods[name];
    if (a->final) {
      // Ended (e.g. adopted after it completed): only the log is wanted.
    } else if (jit == jobs.end()) {
      a->final = true;
      a->state = RunState::kFailed;
      a->message = workload_->Kind() + " " + name +
                   " no longer exists: it was deleted outside the tuner, or the cluster lost its "
                   "state; the attempt's pods and their results are gone";
    } else if (Deleting(*jit->second)) {
      a->final = true;
      a->state = RunState::kFailed;
      a->message = workload_->Kind() + " " + name + " was deleted outside the tuner";
    } else if (auto end = workload_->Ended(*jit->second)) {
      a->final = true;
      if (end->succeeded) {
        a->state = RunState::kSucceeded;
      } else {
        a->state = RunState::kFailed;
        a->message = workload_->Kind() + " failed: " + end->reason +
                     (end->message.empty() ? "" : " (" + end->message + ")");
        std::string pf = PodFailures(*workload_, jpods);
        if (!pf.empty()) a->message += "; " + pf;
      }
    } else if (double limit = a->spec.timeout_s; workload_->EnforceDeadline() && limit > 0 &&
               std::chrono::duration<double>(Clock::now() - a->launched).count() > limit) {
      // A kind without a deadline of its own (TrainJob): trial.timeout_s here.
      a->final = true;
      a->state = RunState::kFailed;
      a->message = workload_->Kind() + " failed: DeadlineExceeded (it ran longer than trial.timeout_s, " +
                   std::to_string(static_cast<int64_t>(std::ceil(limit))) + " s)";
      // Its pods are stopped now (as a Job's deadline stops them), which
      // also ends rank 0's log stream.
      a->cleaned = true;
      EnqueueCleanupLocked(name);
    } else {
      bool any_running = false;
      std::string pending;
      for (const json* p : jpods) {
        if (Deleting(*p)) continue;
        std::string phase = Str(Path(*p, {"status"}), "phase");
        if (phase == "Running") any_running = true;
        if (phase == "Pending" && pending.empty()) {
          pending = "pod " + Str(Metadata(*p), "name") + " " + PendingReason(*p);
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
    // Which pod speaks for the attempt: the index-0 pod that succeeded, else
    // the newest index-0 pod that is alive (not failed, not being deleted),
    // else the newest one whose container started.
    const json* speaker = nullptr;
    int rank = -1;
    for (const json* p : jpods) {
      if (workload_->RankOf(*p) != "0" || !ContainerStarted(*p)) continue;
      std::string phase = Str(Path(*p, {"status"}), "phase");
      int r = phase == "Succeeded" ? 3 : (phase != "Failed" && !Deleting(*p)) ? 2 : 1;
      if (r > rank || (r == rank && Str(Metadata(*p), "creationTimestamp") >=
                                        Str(Metadata(*speaker), "creationTimestamp"))) {
        speaker = p;
        rank = r;
      }
    }
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
    if (a->final || a->state != old_state) changed = true;
  }
  if (changed) NotifyLocked();
  return changed;
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
      if (a->follower_pid > 0) ::kill(-a->follower_pid, SIGKILL);
      retired_.push_back(std::move(a->follower));
    }
  }
  if (!a->log_pod.empty() && (a->log_pod != pod || a->log_pod_id != id)) {
    if (!a->spec.trial_dir.empty()) {
      const bool same_pod = a->log_pod == pod && a->log_pod_id.substr(0, a->log_pod_id.find('/')) ==
                                                     id.substr(0, id.find('/'));
      std::ofstream(a->spec.trial_dir + "/rank_0.log", std::ios::app)
          << "--- tune: rank 0's " << (same_pod ? "container in pod " : "pod ") << a->log_pod << " was "
          << (same_pod ? "restarted in place"
                       : a->log_pod == pod ? "replaced by a new pod of the same name" : "replaced by pod " + pod)
          << "; the reports above are the replaced pod's, stored as excluded; the steps below count ---\n";
    }
    // The replaced pod's reports stop counting (the tuner stores them as
    // excluded); the new pod reports from its start.
    MetricReport marker;
    marker.restart = kReplacedPod;
    marker.time = Now();
    a->reports.push_back(std::move(marker));
    a->report_count = 0;
    NotifyLocked();
  }
  ++a->generation;
  a->log_pod = pod;
  a->log_pod_id = id;
  a->follower_started = true;
  a->follower_done = false;
  a->follower_pid = 0;
  a->follower = std::thread([this, a, pod, id, gen = a->generation] {
    // The thread's top: an unexpected exception fails the attempt with one
    // sentence; nothing reaches std::terminate.
    std::string error;
    try {
      FollowLogs(a, pod, id, gen);
      return;
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "an unknown exception";
    }
    try {
      std::lock_guard<std::mutex> lock(mu_);
      if (a->generation != gen) return;  // replaced meanwhile: nothing of ours to end
      a->follower_pid = 0;  // its kubectl ended with the stack (Boost.Process)
      const std::string why = "rank 0's log (pod " + pod + ") could not be read: " + error;
      if (!a->final) AbandonLocked(*a, why);
      else if (a->state == RunState::kSucceeded && a->log_error.empty()) a->log_error = why;
      a->follower_done = true;
      NotifyLocked();
    } catch (...) {
    }
  });
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
    if (a.follower_pid > 0) ::kill(-a.follower_pid, SIGKILL);
    cv_.notify_all();
    t = std::move(a.follower);
  }
  if (t.joinable()) t.join();
}

void KubernetesBackend::FollowLogs(std::shared_ptr<Attempt> a, std::string pod, std::string id, int generation) {
  int64_t seen = 0;  // complete lines of this pod already handled
  auto backoff = std::chrono::milliseconds(static_cast<int64_t>(opts_.api_backoff_initial_s * 1000 / 2));
  const auto max_backoff = std::chrono::milliseconds(static_cast<int64_t>(opts_.api_backoff_max_s * 1000));
  std::optional<Clock::time_point> final_since;  // when the first last pass started
  int final_tries = 0;
  std::map<std::string, int> same_partial;  // unterminated last lines of final reads
  std::string last_error;
  // A --follow pass read the pod's log to its end. Once the workload has
  // ended its pods may be gone (the training operator deletes every pod of
  // a PyTorchJob that fails past its backoffLimit or deadline): a pod that
  // no longer exists then has nothing more to say.
  bool followed_to_end = false;
  std::ofstream log(a->spec.trial_dir.empty() ? std::string("/dev/null") : a->spec.trial_dir + "/rank_0.log",
                    std::ios::app);
  auto current = [&] { return !a->stop_follower && !stopping_ && a->generation == generation; };
  // A metric line becomes the attempt's next report (its step from time_attr,
  // else its position). Caller holds mu_; false if `line` is no metric line.
  auto append_report = [&](const std::string& line) {
    auto r = MetricReportFromLine(line, a->spec.time_attr, a->report_count + 1, Now());
    if (!r) return false;
    ++a->report_count;
    a->reports.push_back(std::move(*r));
    return true;
  };
  while (true) {
    bool was_final;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!current()) break;
      // If the Job had already ended when this pass starts, the log is
      // complete: this pass is the last one, once it reads the whole log.
      was_final = a->final;
    }
    if (was_final && !final_since) final_since = Clock::now();
    std::vector<std::string> args = {"logs", "pod/" + pod};
    if (!was_final) args.push_back("--follow");
    std::vector<std::string> argv = kubectl_.Argv(args);
    if (argv[0].empty() || kubectl_.Cancelled()) break;
    bool read_whole = false;
    // Rank 0 may run again under the same name (a pod made again by the
    // training operator, a container restarted in place): `kubectl logs
    // pod/<name>` would then read the new run's log as if it were this
    // one's. Each pass first checks that the name is still this run's; if
    // not, this follower only waits (the poller starts one for the new
    // run), or, once the workload ended, keeps what it read.
    std::optional<std::string> now_id;
    if (workload_->RestartsUnderSameName() && !id.empty()) now_id = PodIdentityNow(pod);
    if (now_id && *now_id != id) {
      if (was_final && followed_to_end) {
        read_whole = true;
      } else {
        last_error = "pod " + pod + (now_id->empty() ? " is gone" : " runs again (another pod or container)");
      }
    } else {
      try {
        bp::ipstream out, err_stream;
        bp::child child(bp::exe = argv[0], bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()),
                        bp::std_out > out, bp::std_err > err_stream, bp::std_in < bp::null,
                        internal::OwnGroupDieWithParent{});
        kubectl_.Adopt(child.id());
        // Forgotten however this pass ends (an exception too: the child's
        // destructor then ends it).
        struct Forget {
          const Kubectl& kubectl;
          pid_t pgid;
          ~Forget() { kubectl.Forget(pgid); }
        } forget{kubectl_, child.id()};
        {
          std::lock_guard<std::mutex> lock(mu_);
          a->follower_pid = child.id();
          if (!current()) ::kill(-child.id(), SIGKILL);
        }
        int64_t n = 0;
        bool partial = false;
        std::string line;
        while (std::getline(out, line)) {
          // A line cut by a dropped stream is read again whole next time.
          if (out.eof()) {
            partial = true;
            break;
          }
          if (++n <= seen) continue;
          seen = n;
          std::lock_guard<std::mutex> lock(mu_);
          if (a->generation != generation) break;  // replaced meanwhile: drop
          log << line << '\n';
          if (!line.empty()) a->last_line = line;
          if (append_report(line)) NotifyLocked();
        }
        log.flush();
        std::string errors;
        for (std::string e; std::getline(err_stream, e);) errors += (errors.empty() ? "" : " ") + e;
        std::error_code ec;
        child.wait(ec);
        kubectl_.Forget(child.id());
        {
          std::lock_guard<std::mutex> lock(mu_);
          a->follower_pid = 0;
        }
        int code = ec ? -1 : child.exit_code();
        if (code == 0 && !partial) {
          read_whole = true;
          if (!was_final) followed_to_end = true;
        } else if (was_final && followed_to_end && code != 0 && errors.find("(NotFound)") != std::string::npos) {
          read_whole = true;
        } else if (was_final && partial && code == 0 && ++same_partial[std::to_string(n) + ":" + line] >= 3) {
          // Three whole reads end with the same unterminated line: the program
          // printed it so.
          if (++n > seen) {
            seen = n;
            std::lock_guard<std::mutex> lock(mu_);
            log << line << '\n';
            if (a->generation == generation) append_report(line);
          }
          read_whole = true;
        } else {
          last_error = code != 0 ? (errors.empty() ? "kubectl logs exited with code " + std::to_string(code) : errors)
                                 : "the log stream ended mid-line";
        }
      } catch (const std::exception& e) {
        last_error = std::string("kubectl could not be started: ") + e.what();
      }
    }
    if (was_final) {
      ++final_tries;
      if (read_whole) break;
      double waited = std::chrono::duration<double>(Clock::now() - *final_since).count();
      if (waited > opts_.api_deadline_s || kubectl_.Cancelled()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (a->generation == generation) {
          a->log_error = "rank 0's log (pod " + pod + ") could not be read after " + std::to_string(final_tries) +
                         " tries over " + std::to_string(static_cast<int>(waited)) + " s: " + last_error +
                         "; its reports after step " +
                         std::to_string(a->report_count == 0 ? 0 : a->report_count) + " are lost";
        }
        break;
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, backoff, [&] { return !current(); });
    backoff = std::min(backoff * 2, max_backoff);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (a->generation == generation) {
    a->follower_done = true;
    NotifyLocked();
  }
}

// ---------------------------------------------------------------------------
// Resume

Result<std::set<TrialId>> KubernetesBackend::AdoptOrClean(const std::map<TrialId, LaunchSpec>& running) {
  TUNE_ASSIGN_OR_RETURN(ApiResult got,
                        CallApi(kubectl_, {"get", WorkloadResources(), "-l", std::string(kExperimentLabel) + "=" + label_,
                                           "-o", "json"},
                                "", Policy(true), &stats_));
  if (!got.ok) return Status::Unavailable("kubectl get " + WorkloadResources() + ": " + got.failure.message);
  json list = json::parse(got.output.out, nullptr, false);
  if (list.is_discarded() || !list.contains("items")) {
    return Status::Internal("kubectl get " + WorkloadResources() + ": output is not a JSON List");
  }
  // Per trial id, the Job of the highest attempt (running or ended).
  std::map<TrialId, std::pair<int, const json*>> best;
  std::vector<std::string> job_names, service_names;
  // A malformed item (no metadata) ends the resume with one sentence.
  try {
    for (const json& item : list["items"]) {
      std::string name = Str(Metadata(item), "name");
      if (Str(item, "kind") == "Service") {
        service_names.push_back(name);
        continue;
      }
      if (Str(item, "kind") != workload_->Kind()) continue;
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
      if (!running.count(id) || Deleting(item)) continue;
      auto it = best.find(id);
      if (it == best.end() || attempt > it->second.first) best[id] = {attempt, &item};
    }
  } catch (const std::exception& e) {
    return Status::Internal("kubectl get " + WorkloadResources() + ": unexpected output (" + e.what() + ")");
  }
  std::set<TrialId> adopted;
  std::set<std::string> kept;
  for (const auto& [id, an] : best) {
    LaunchSpec spec = running.at(id);
    spec.attempt = an.first;
    std::string name = Str(Metadata(*an.second), "name");
    auto a = Track(spec, name);
    {
      std::lock_guard<std::mutex> lock(mu_);
      a->adopted = true;
      if (auto end = workload_->Ended(*an.second)) {
        // Ended while tune was down: its result is harvested from its log.
        a->final = true;
        a->state = end->succeeded ? RunState::kSucceeded : RunState::kFailed;
        if (a->state == RunState::kFailed) {
          a->message = workload_->Kind() + " failed while the tuner was down: " + end->reason;
        }
        a->awaiting_log = true;
      }
      NotifyLocked();
    }
    adopted.insert(id);
    kept.insert(name);
  }
  std::vector<std::string> doomed;
  for (const auto& n : job_names) {
    if (!kept.count(n)) doomed.push_back(workload_->Ref(n));
  }
  for (const auto& n : service_names) {
    if (!kept.count(n)) doomed.push_back("service/" + n);
  }
  if (!doomed.empty()) {
    std::vector<std::string> args = {"delete"};
    args.insert(args.end(), doomed.begin(), doomed.end());
    args.insert(args.end(), {"--cascade=foreground", "--ignore-not-found", "--wait=true",
                             "--timeout=" + std::to_string(kDeleteTimeout.count()) + "s"});
    RetryPolicy p = Policy(true);
    p.call_timeout = kDeleteTimeout + std::chrono::seconds(10);
    TUNE_ASSIGN_OR_RETURN(ApiResult deleted, CallApi(kubectl_, args, "", p, &stats_));
    if (!deleted.ok) {
      // Deletion never fails the run: retried by the cleanup queue.
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& d : doomed) EnqueueCleanupLocked(d.substr(d.find('/') + 1));
      StartPollerLocked();
    }
  }
  return adopted;
}

}  // namespace tune
