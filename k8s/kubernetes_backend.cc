#include "k8s/kubernetes_backend.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "k8s/kubernetes_attempt.h"
#include "k8s/object_fields.h"
#include "k8s/preflight.h"
#include "k8s/render.h"
#include "k8s/workload.h"
#include "trial_runner/metric_report.h"

namespace tune {
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace k8s_object;

namespace {

constexpr auto kDeleteTimeout = std::chrono::seconds(180);

// What a resume finds: the names of the workloads and Services listed and,
// per trial id in `running`, its workload of the highest attempt (running
// or ended; not being deleted). Throws on an item without metadata.
struct ResumeListing {
  std::map<TrialId, std::pair<int, const json*>> best;
  std::vector<std::string> job_names, service_names;
};

ResumeListing ReadResumeListing(const Workload& w, const json& list, const std::map<TrialId, LaunchSpec>& running) {
  ResumeListing out;
  for (const json& item : list.at("items")) {
    std::string name = Str(Metadata(item), "name");
    if (Str(item, "kind") == "Service") {
      out.service_names.push_back(name);
      continue;
    }
    if (Str(item, "kind") != w.Kind()) continue;
    out.job_names.push_back(name);
    const json& labels = LabelsOf(item);
    TrialId id;
    int attempt;
    try {
      id = std::stoll(Str(labels, kTrialIdLabel));
      attempt = std::stoi(Str(labels, kAttemptLabel));
    } catch (const std::exception&) {
      continue;
    }
    if (!running.count(id) || Deleting(item)) continue;
    auto it = out.best.find(id);
    if (it == out.best.end() || attempt > it->second.first) out.best[id] = {attempt, &item};
  }
  return out;
}

// kubectl references of the listed workloads and Services not in `kept`.
std::vector<std::string> NotKept(const Workload& w, const ResumeListing& listing, const std::set<std::string>& kept) {
  std::vector<std::string> refs;
  for (const auto& n : listing.job_names) {
    if (!kept.count(n)) refs.push_back(w.Ref(n));
  }
  for (const auto& n : listing.service_names) {
    if (!kept.count(n)) refs.push_back("service/" + n);
  }
  return refs;
}

}  // namespace

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
  TUNE_RETURN_IF_ERROR(RunPreflight(opts_, kubectl_, *workload_, Policy(true), &stats_));
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
  ResumeListing listing;
  try {
    listing = ReadResumeListing(*workload_, list, running);
  } catch (const std::exception& e) {
    // A malformed item (no metadata) ends the resume with one sentence.
    return Status::Internal("kubectl get " + WorkloadResources() + ": unexpected output (" + e.what() + ")");
  }
  const auto& best = listing.best;
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
  const std::vector<std::string> doomed = NotKept(*workload_, listing, kept);
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
