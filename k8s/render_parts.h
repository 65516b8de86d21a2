// Pieces shared by the manifests of every job kind (k8s/job_workload.cc:
// batch/v1 Job; k8s/pytorchjob_workload.cc: PyTorchJob;
// k8s/trainjob_workload.cc: TrainJob). Internal to tune_k8s; pure
// functions, thread-safe.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "k8s/kubernetes_options.h"
#include "trial_runner/trial_backend.h"

namespace tune::render_internal {

using nlohmann::json;

// The options and the spec every kind needs: an image, a DNS-1035 name of
// at most 52 characters, workers >= 1, a command, UTF-8 text
// (CheckManifestText, k8s/render.h). InvalidArgument otherwise.
Status CheckCommon(const KubernetesOptions& opts, const LaunchSpec& spec, const std::string& name);

// backend.<key> (tolerations, volumes, volume_mounts) as a JSON array.
Result<json> ParseArray(const std::string& text, const char* key);

// The labels (backend.labels plus tune.io/experiment, trial, trial-id,
// attempt) and annotations (backend.annotations plus the experiment's name)
// of every object and pod of the attempt.
json Labels(const KubernetesOptions& opts, const LaunchSpec& spec);
json Annotations(const KubernetesOptions& opts, const LaunchSpec& spec);

// `resources_per_worker` as a container's resources: cpu request, memory
// request and limit, nvidia.com/gpu request and limit.
json Resources(const LaunchSpec& spec);

// The argv, every element escaped for Kubernetes' $(VAR) expansion.
json Command(const LaunchSpec& spec);

// One env entry {name, value} with the value escaped.
json EnvVar(const std::string& name, const std::string& value);

// One env entry {name, valueFrom: {secretKeyRef: {name, key}}}.
json SecretEnvVar(const std::string& name, const SecretKeyRef& ref);

// The trial's env (TUNE_*, trial.env, its Secret references), by name,
// without the names in `excluded` and those starting with `excluded_prefix`
// (when not empty): those are the backend's or the operator's to set.
json TrialEnv(const LaunchSpec& spec, const std::set<std::string>& excluded, const std::string& excluded_prefix);

// The container of a Job's or a PyTorchJob's pod, named `name`: image,
// command, `env`, resources, terminationMessagePolicy
// FallbackToLogsOnError (a failed container's last log lines reach its
// status; the trial's failure message quotes the last one), and, when set,
// imagePullPolicy, workingDir (none: the image's WORKDIR) and `mounts`.
json Container(const KubernetesOptions& opts, const LaunchSpec& spec, const std::string& name, const json& env,
               const json& mounts);

// The pod-level options: serviceAccountName, nodeSelector, tolerations,
// volumes, written into `pod_spec`.
Status AddPodOptions(const KubernetesOptions& opts, json* pod_spec);

// A kubectl-ready `v1/List` of `items`, as text (2-space indent).
std::string ListText(json items);

}  // namespace tune::render_internal
