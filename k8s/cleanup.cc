#include "k8s/cleanup.h"

#include <algorithm>
#include <sstream>

#include "k8s/api_call.h"
#include "k8s/kubectl.h"
#include "k8s/render.h"
#include "k8s/workload.h"

namespace tune {
namespace {

RetryPolicy Policy(const KubernetesOptions& o) {
  RetryPolicy p;
  p.initial_backoff = std::chrono::milliseconds(static_cast<int64_t>(o.api_backoff_initial_s * 1000));
  p.max_backoff = std::chrono::milliseconds(static_cast<int64_t>(o.api_backoff_max_s * 1000));
  p.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.api_call_timeout_s * 1000));
  p.deadline = std::chrono::milliseconds(static_cast<int64_t>(o.api_deadline_s * 1000));
  return p;
}

// `kubectl get KINDS -l SELECTOR -o name`, one object a line.
Result<std::vector<std::string>> List(const Kubectl& kubectl, const std::string& kinds, const std::string& selector,
                                      const RetryPolicy& policy) {
  TUNE_ASSIGN_OR_RETURN(ApiResult r, CallApi(kubectl, {"get", kinds, "-l", selector, "-o", "name"}, "",
                                              policy, nullptr));
  if (!r.ok) {
    return Status::Unavailable("kubectl get " + kinds + " -l " + selector + ": " + r.failure.message);
  }
  std::vector<std::string> names;
  std::istringstream in(r.output.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

}  // namespace

Result<CleanupOutcome> CleanupExperiment(const KubernetesOptions& opts, const std::string& experiment,
                                         bool dry_run) {
  const Kubectl kubectl(opts);
  kubectl.PinContext();  // the command printed for what is left names it
  const RetryPolicy policy = Policy(opts);
  const std::string selector = std::string(kExperimentLabel) + "=" + ExperimentLabelValue(experiment);
  // The experiment's workload kind (Job, PyTorchJob, TrainJob), its
  // companion Services and the pods that carry the label.
  std::unique_ptr<Workload> workload = MakeWorkload(opts.job_kind);
  const std::string kinds = workload ? workload->LabelledResources() : std::string(kCleanupKinds);
  CleanupOutcome out;
  out.command = KubectlCommandLine(kubectl, {"delete", kinds, "-l", selector, "--cascade=foreground"});
  TUNE_ASSIGN_OR_RETURN(out.found, List(kubectl, kinds, selector, policy));
  if (dry_run || out.found.empty()) return out;
  RetryPolicy del = policy;
  const int wait_s = static_cast<int>(std::max(30.0, opts.api_call_timeout_s));
  del.call_timeout = std::chrono::seconds(wait_s + 10);
  TUNE_ASSIGN_OR_RETURN(ApiResult deleted,
                        CallApi(kubectl,
                                {"delete", kinds, "-l", selector, "--cascade=foreground",
                                 "--ignore-not-found", "--wait=true", "--timeout=" + std::to_string(wait_s) + "s"},
                                "", del, nullptr));
  if (!deleted.ok) out.error = deleted.failure.message;
  Result<std::vector<std::string>> after = List(kubectl, kinds, selector, policy);
  if (!after.ok()) {
    if (out.error.empty()) out.error = after.status().message();
    out.left = out.found;  // unknown: say all of them
    return out;
  }
  out.left = *after;
  if (!out.left.empty() && out.error.empty()) {
    out.error = "they still exist after the deletion (a finalizer, or the deletion is still under way)";
  }
  return out;
}

}  // namespace tune
