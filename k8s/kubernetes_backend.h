// KubernetesBackend: runs each trial attempt as a headless Service plus an
// Indexed batch/v1 Job (k8s/render.h), driven through the real kubectl.
//
//   Launch   `kubectl create -f -` with the rendered List on stdin.
//   State    one background poller runs `kubectl get jobs,pods -l
//            tune.io/experiment=<label> -o json` for all attempts at once,
//            every 0.5 s while something changes, backing off to 4 s when
//            nothing does. A Job condition Complete/Failed ends the attempt
//            (Failed carries Kubernetes' reason: BackoffLimitExceeded,
//            DeadlineExceeded, ...); a pod Pending longer than
//            pending_timeout_s (Unschedulable, ImagePullBackOff, ...) fails
//            it with the reason Kubernetes gives, and its objects are deleted.
//   Poll     rank 0's output comes from `kubectl logs -f pod/<index-0 pod>`
//            (one follower thread per attempt). A dropped stream is resumed
//            without duplicates: lines already seen from that pod are
//            skipped. Every line is also appended to <trial_dir>/rank_0.log.
//   Kill     `kubectl delete job/<n> service/<n> --cascade=foreground
//            --wait`: the pods go before the Job, nothing is left behind.
// Objects of attempts that ended are deleted once their final state has been
// read; Shutdown deletes everything labelled with the experiment.
//
// Thread-safety: the TrialBackend methods are called from the tuner's thread;
// the poller and log followers are internal threads guarded by mu_.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "k8s/kubectl.h"
#include "k8s/kubernetes_options.h"
#include "trial_runner/trial_backend.h"

namespace tune {

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
  Status Preflight() override;
  Status Launch(const LaunchSpec& spec) override;
  Result<std::vector<MetricReport>> Poll(TrialId id) override;
  Result<RunStatus> State(TrialId id) override;
  Status Kill(TrialId id, std::chrono::milliseconds grace = std::chrono::seconds(5)) override;
  void WaitForEvent(std::chrono::milliseconds timeout) override;
  void Shutdown() override;

  // For `tune run --resume`. Lists the experiment's Jobs and Services by
  // label. For each trial in `running` (id -> the LaunchSpec it would get
  // now) whose Job of the highest attempt still runs, the backend adopts
  // that Job instead of creating a duplicate: it is tracked as if Launch had
  // been called, and Poll returns its reports from the start of the log (the
  // tuner drops steps it already has). Every other object of the experiment
  // (ended Jobs, trials not in `running`, older attempts, orphan Services) is
  // deleted with foreground propagation. Returns the adopted trial ids; call
  // before any Launch.
  Result<std::set<TrialId>> AdoptOrClean(const std::map<TrialId, LaunchSpec>& running);

  // Deletes every Job and Service labelled with the experiment and waits
  // until they and their pods are gone.
  Status DeleteAll();

 private:
  struct Attempt;

  void StartPollerLocked();
  void PollerLoop();
  bool RefreshOnce();  // one `kubectl get`; true if anything changed
  void FollowLogs(std::shared_ptr<Attempt> a, std::string pod);
  void StartFollowerLocked(const std::shared_ptr<Attempt>& a, const std::string& pod);
  Status DeleteObjects(const std::string& name, bool wait);
  void StopFollower(Attempt& a);
  void NotifyLocked();
  std::shared_ptr<Attempt> Track(const LaunchSpec& spec, const std::string& name);

  const KubernetesOptions opts_;
  const std::string experiment_;
  const std::string label_;  // ExperimentLabelValue(experiment_)
  const Kubectl kubectl_;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t events_ = 0;                                  // guarded by mu_
  std::map<TrialId, std::shared_ptr<Attempt>> attempts_;  // guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
  std::thread poller_;
};

// The factory the tuner uses for `backend.type: "kubernetes"`.
std::unique_ptr<KubernetesBackend> MakeKubernetesBackend(const KubernetesOptions& opts,
                                                         const std::string& experiment);

}  // namespace tune
