// Deleting what an experiment left in the cluster (`tune cleanup`).
//
// Everything the Kubernetes backend creates carries the label
// tune.io/experiment=<ExperimentLabelValue(name)> (k8s/render.h): the Jobs,
// Services and pods of every attempt. CleanupExperiment finds them by that
// label and deletes them, as `tune run` does at its end: every call goes
// through CallApi (k8s/api_call.h), so transient API failures are retried
// with backoff until opts.api_deadline_s, permanent ones end at once.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/kubernetes_options.h"

namespace tune {

// The kinds `tune cleanup` looks for when backend.job_kind is unknown; else
// those of its workload (Workload::LabelledResources: e.g. PyTorchJobs and
// pods).
inline constexpr const char* kCleanupKinds = "jobs,services,pods";

struct CleanupOutcome {
  // `kind/name` (as kubectl names them: "job.batch/x", "service/x",
  // "pod/x-0-abc") of every object found before deleting, in kubectl's order.
  std::vector<std::string> found;
  // Of those, the ones still there after the deletion (or all of them, if
  // the deletion failed); empty after a dry run.
  std::vector<std::string> left;
  // Why the deletion (or the listing after it) failed: kubectl's words;
  // empty if it succeeded.
  std::string error;
  // The kubectl command that deletes what is left, for messages.
  std::string command;
};

// Lists every object of the workload's kinds labelled with `experiment` in
// opts.namespace_ and, unless `dry_run`, deletes them (foreground
// propagation, waited for) and lists again. Non-OK only when the objects
// cannot be listed at all (no kubectl: FailedPrecondition; the API server
// does not answer within the deadline, or refuses: Unavailable).
Result<CleanupOutcome> CleanupExperiment(const KubernetesOptions& opts, const std::string& experiment,
                                         bool dry_run);

}  // namespace tune
