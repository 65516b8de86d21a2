// KubernetesBackend: runs each trial attempt as the Workload of
// backend.job_kind (k8s/workload.h; by default a headless Service plus an
// Indexed batch/v1 Job, k8s/job_workload.h), driven through the real kubectl.
// Implemented in k8s/kubernetes_backend.cc and k8s/kubernetes_poller.cc (the
// poller and the log followers); the preflight is k8s/preflight.h.
//
//   Launch   `kubectl create -f -` for the Service, then the Job. Every API
//            call goes through CallApi (k8s/api_call.h): transient failures
//            are retried with backoff until the api_deadline_s; a create
//            whose retry meets AlreadyExists adopts the object when its
//            labels say it is this attempt's.
//   State    one background poller runs `kubectl get jobs,pods -l
//            tune.io/experiment=<label> -o json` for all attempts at once,
//            every 0.5 s while something changes, backing off to 4 s when
//            nothing does. A Job condition Complete/Failed ends the attempt
//            (Failed carries Kubernetes' reason: BackoffLimitExceeded,
//            DeadlineExceeded, ...); a pod Pending longer than
//            pending_timeout_s (Unschedulable, ImagePullBackOff, ...) fails
//            it with the reason Kubernetes gives, and its objects are deleted.
//   Poll     rank 0's output comes from `kubectl logs -f pod/<index-0 pod>`
//            (one LogFollower, k8s/log_follower.h, on a thread per attempt). A dropped stream is resumed
//            without duplicates: lines already seen from that pod are
//            skipped. Every line is also appended to <trial_dir>/rank_0.log.
//            Which pod speaks for the attempt: the index-0 pod the Job
//            finishes with. When the Job controller replaces it (a failed
//            or evicted pod, under backoffLimit), the new pod's log is
//            read from its start; the dead pod's reports are marked in
//            rank_0.log, a restart marker (MetricReport::restart =
//            "replaced pod") follows them in Poll's reports, so the tuner
//            stores them as excluded, and the new pod reports its steps
//            again (docs/kubernetes.md). A pod is known by its uid and its
//            container's restart count: the training operator makes a
//            replaced PyTorchJob pod again under the same name, and a
//            TrainJob's container restarts in place; either counts as a
//            replaced pod. A log that cannot be read at the end is
//            retried; if it stays unreadable the attempt fails with that
//            reason, never with a false one.
//   Kill     `kubectl delete job/<n> service/<n> --cascade=foreground
//            --wait`: the pods go before the Job. Never fails: a delete
//            that does not succeed goes to the cleanup queue.
// Objects of attempts that ended are deleted once their final state has been
// read, through the cleanup queue, which the poller retries until each
// delete succeeds. Shutdown drains it, deletes everything labelled with the
// experiment, and lists in Leftovers() whatever it could not delete.
// After an interrupt (SetStopFlag), kubectl calls in flight are ended and
// nothing is deleted: the Jobs are left for `tune run --resume`.
//
// Thread-safety: the TrialBackend methods are called from the tuner's thread;
// the poller and log followers are internal threads guarded by mu_.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "k8s/api_call.h"
#include "k8s/kubectl.h"
#include "k8s/log_follower.h"
#include "k8s/kubernetes_options.h"
#include "k8s/workload.h"
#include "trial_runner/trial_backend.h"

namespace tune {

struct ClusterView;  // k8s/attempt_status.h

class KubernetesBackend : public TrialBackend {
 public:
  // `experiment`: the experiment's name; every object is labelled with
  // ExperimentLabelValue(experiment) and polled by that label.
  KubernetesBackend(KubernetesOptions opts, std::string experiment);
  ~KubernetesBackend() override;  // Shutdown()

  KubernetesBackend(const KubernetesBackend&) = delete;
  KubernetesBackend& operator=(const KubernetesBackend&) = delete;

  // kubectl present, API server reachable (`kubectl get --raw /version`),
  // and RBAC: `kubectl auth can-i` for every verb the backend uses, which
  // are exactly the Role's in k8s/rbac.yaml (create, get, list, watch,
  // delete jobs and services; get, list, watch, delete pods; get pods/log)
  // in the namespace. Non-OK: FailedPrecondition (no kubectl, permissions
  // missing, all named in one message), Unavailable (no cluster),
  // InvalidArgument (no image).
  // Then the namespace exists (`kubectl get namespace`, when the identity
  // may read namespaces). A successful preflight is not repeated.
  Status Preflight() override;
  Status Launch(const LaunchSpec& spec) override;
  Result<std::vector<MetricReport>> Poll(TrialId id) override;
  Result<RunStatus> State(TrialId id) override;
  Status Kill(TrialId id, std::chrono::milliseconds grace = std::chrono::seconds(5)) override;
  void WaitForEvent(std::chrono::milliseconds timeout) override;
  void Shutdown() override;
  // "the Kubernetes API server has not answered for N s" while calls stall
  // (first after 10 s, then as it grows), and once when answers are back.
  std::string TakeNotice() override;

  // Ctrl-C: once `*stop` is true, every kubectl in flight is ended (its
  // process group killed), no new call is made, and Kill/Shutdown leave the
  // Jobs for --resume. Call before Launch.
  void SetStopFlag(const std::atomic<bool>* stop) override;
  // The attempt's manifests render (RenderTrialManifests): what `tune
  // render` refuses is refused before anything is created.
  Status CheckLaunchable(const LaunchSpec& spec) override;
  // AdoptOrClean, with the workload's kind.
  Result<std::optional<ResumeAdoption>> AdoptOnResume(const std::map<TrialId, LaunchSpec>& running) override;
  // "Kubernetes API: N calls, R retries after transient errors, F calls
  // failed in the end" when any call was retried or failed.
  std::string RunNote() const override;

  // After Shutdown: `kind/name` of the objects labelled with the experiment
  // that could not be deleted, and the kubectl command that deletes them
  // (empty if none).
  std::vector<std::string> Leftovers() const override;
  std::string LeftoverCommand() const override;
  // The kind each attempt runs as ("Job", "PyTorchJob", "TrainJob").
  std::string WorkloadKind() const { return workload_->Kind(); }
  // API calls made, retried and failed (for the soak benchmark).
  const ApiStats& api_stats() const { return stats_; }

  // For `tune run --resume`. Lists the experiment's Jobs and Services by
  // label. For each trial in `running` (id -> the LaunchSpec it would get
  // now) whose Job of the highest attempt still exists, running or ended
  // while tune was down, the backend adopts that Job instead of creating a
  // duplicate: it is tracked as if Launch had been called (a later Launch
  // for the trial takes it over rather than creating a Job), and Poll
  // returns its reports from the start of its log, so a Job that completed
  // is harvested. Every other object of the experiment (trials not in
  // `running`, older attempts, orphan Services) is deleted. Returns the
  // adopted trial ids; call before any Launch. Transient API failures are
  // retried.
  Result<std::set<TrialId>> AdoptOrClean(const std::map<TrialId, LaunchSpec>& running);

  // Deletes every Job and Service labelled with the experiment and waits
  // until they and their pods are gone.
  Status DeleteAll();

 private:
  struct Attempt;

  void StartPollerLocked();
  // The poller thread: PollOnce until stopping; an exception out of one
  // round fails the attempts in flight (PollerFailed) and the loop goes on.
  void PollerLoop();
  bool PollOnce(std::chrono::milliseconds* interval);  // false: stop
  void PollerFailed(const std::string& what) noexcept;
  // Ends the attempt as failed with `message`, stops reading its log and
  // queues the deletion of its objects.
  void AbandonLocked(Attempt& a, const std::string& message);
  bool RefreshOnce();  // one `kubectl get`; true if anything changed
  // Lists the workloads named `names` and their pods (into `list`,
  // `pod_list`, indexed in `view`); false if the API did not answer.
  bool ListWatched(const std::vector<std::string>& names, nlohmann::json* list, nlohmann::json* pod_list,
                   ClusterView* view);
  // What `object` (nullptr: not listed) and `pods` say about `a`: its end,
  // a pod pending too long, the pod that speaks for it. True if it changed.
  bool UpdateAttemptLocked(const std::shared_ptr<Attempt>& a, const nlohmann::json* object,
                           const std::vector<const nlohmann::json*>& pods);
  void WatchPendingLocked(Attempt& a, const std::vector<const nlohmann::json*>& pods);
  // Follows rank 0's log: `pod` (its uid and restart count `id`, "<uid>/<n>")
  // speaks for the attempt; one LogFollower on a thread of its own.
  void StartFollowerLocked(const std::shared_ptr<Attempt>& a, const std::string& pod, const std::string& id);
  std::shared_ptr<LogFollower> MakeFollowerLocked(const std::shared_ptr<Attempt>& a, const std::string& pod,
                                                  const std::string& id);
  // rank_0.log says that rank 0's pod was replaced by `pod`, and a restart
  // marker joins the reports.
  void MarkReplacedLocked(Attempt& a, const std::string& pod, const std::string& id);
  void FollowerEnded(Attempt& a, const std::string& pod, int generation, const LogFollower::Outcome& outcome);
  // "<uid>/<restart count>" of the pod named `pod` now ("" if it is gone);
  // nullopt if the API did not answer.
  std::optional<std::string> PodIdentityNow(const std::string& pod);
  void StopFollower(Attempt& a);
  void NotifyLocked();
  std::shared_ptr<Attempt> Track(const LaunchSpec& spec, const std::string& name);
  Status CreateObject(const std::string& manifest, const std::string& ref, const LaunchSpec& spec);
  // Queues the deletion of the attempt's Job and Service (foreground).
  void EnqueueCleanupLocked(const std::string& name);
  void RunCleanupQueue(bool final_pass);
  bool Interrupted() const;
  RetryPolicy Policy(bool retry) const;
  // "jobs.batch,services" (kubectl resources of the objects tune creates),
  // "pytorchjobs.kubeflow.org", ...; and "job", "pytorchjob" for locations.
  std::string WorkloadResources() const;
  std::string LocationKind() const;

  const KubernetesOptions opts_;
  const std::string experiment_;
  const std::string label_;  // ExperimentLabelValue(experiment_)
  const Kubectl kubectl_;
  // The kind of each attempt (backend.job_kind; an unknown kind, which
  // Preflight refuses, is treated as "job").
  const std::unique_ptr<Workload> workload_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  struct Cleanup {
    std::chrono::steady_clock::time_point next_try;
    int tries = 0;
    std::string error;
  };
  std::map<std::string, Cleanup> cleanup_;  // guarded by mu_: object name -> deletion to retry
  std::vector<std::string> leftovers_;      // guarded by mu_
  std::vector<std::thread> retired_;        // guarded by mu_: followers of replaced pods
  bool preflight_ok_ = false;
  const std::atomic<bool>* stop_flag_ = nullptr;
  std::thread stop_watcher_;
  double noticed_stall_s_ = 0;              // guarded by mu_: the last stall announced
  ApiStats stats_;
  uint64_t events_ = 0;                                  // guarded by mu_
  std::map<TrialId, std::shared_ptr<Attempt>> attempts_;  // guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
  std::thread poller_;
};

// The factory the tuner uses for `backend.type: "kubernetes"`.
std::unique_ptr<KubernetesBackend> MakeKubernetesBackend(const KubernetesOptions& opts,
                                                         const std::string& experiment);

}  // namespace tune
