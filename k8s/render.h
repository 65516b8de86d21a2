// Rendering of one trial attempt as Kubernetes objects (docs/kubernetes.md):
// the names, labels and escaping every kind shares, and
// RenderTrialManifests, which hands the attempt to the Workload of
// backend.job_kind (k8s/workload.h). What each kind creates is described
// in its own file: k8s/job_workload.h (the default: an Indexed batch/v1
// Job plus a headless Service), k8s/pytorchjob_workload.h,
// k8s/trainjob_workload.h.
//
// Pure functions: no cluster, no kubectl, thread-safe.
#pragma once

#include <string>

#include "core/status.h"
#include "k8s/kubernetes_options.h"
#include "trial_runner/trial_backend.h"

namespace tune {

// The port rank 0 listens on for the torch.distributed rendezvous.
inline constexpr int kMasterPort = 29500;

// Labels every object (and pod) of a trial carries.
inline constexpr const char* kExperimentLabel = "tune.io/experiment";
inline constexpr const char* kTrialLabel = "tune.io/trial";        // trial number
inline constexpr const char* kTrialIdLabel = "tune.io/trial-id";   // database id
inline constexpr const char* kAttemptLabel = "tune.io/attempt";
// Annotation with the experiment's name as written (labels are restricted).
inline constexpr const char* kExperimentAnnotation = "tune.io/experiment-name";

// `experiment` as a valid label value (at most 63 characters of
// [a-z0-9-], starting with a letter, ending alphanumeric): lower-cased, other
// characters turned into '-', and a short hash of the original appended when
// that changed or shortened the name, so distinct names stay distinct.
std::string ExperimentLabelValue(const std::string& experiment);

// The name of the Job and Service of one attempt: a DNS-1035 label
// `<experiment label>-t<number>-a<attempt>`, at most 47 characters so the
// pods' hostnames (`<name>-<index>`) stay valid. Fresh for every attempt.
std::string KubernetesObjectName(const std::string& experiment, int trial_number, int attempt);

// `s` escaped for Kubernetes' `$(VAR)` expansion of a container's command,
// args and env values: every '$' doubled, so that the kubelet's expansion
// (`$$` -> `$`, `$(NAME)` -> NAME's value) gives back exactly `s`. A value
// such as `$(SECRET_TOKEN)` then reaches the trial as written, never as the
// value of a variable of the container.
std::string EscapeForKubernetesExpansion(const std::string& s);

// Kubernetes takes only UTF-8 text. OK if every string of `spec` that a
// manifest carries (argv, env values, working_dir, the experiment's name)
// is UTF-8; else InvalidArgument naming the first field that is not
// (TUNE_TRIAL_DIR, trial.command[2], ...) and its text, each byte that is
// not UTF-8 shown as \xNN. Never a replaced byte: a manifest must not
// publish a path that does not exist.
Status CheckManifestText(const LaunchSpec& spec);

// Renders the attempt as a kubectl-ready JSON `v1/List` through
// MakeWorkload(opts.job_kind)->Render: for job_kind "job" the Service and
// the Job, in that order; "pytorchjob" and "trainjob": the one object.
// InvalidArgument for another job_kind, or if an option cannot be used
// (no image, tolerations/volumes that are not JSON arrays, workers < 1, a
// name that is not a DNS-1035 label). The schema itself is left to kubectl's
// validation, or text that is not UTF-8 (CheckManifestText). Every argv
// element and env value is written through EscapeForKubernetesExpansion;
// a Secret reference (LaunchSpec::secret_env) becomes valueFrom.secretKeyRef.
// No workingDir when spec.working_dir is empty: the image's WORKDIR.
Result<std::string> RenderTrialManifests(const KubernetesOptions& opts, const LaunchSpec& spec,
                                         const std::string& object_name);

}  // namespace tune
