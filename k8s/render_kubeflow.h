// Rendering of one trial attempt as a Kubeflow training job
// (backend.job_kind "pytorchjob" or "trainjob"), for clusters that run the
// Kubeflow training operator (v1) or Kubeflow Trainer (v2).
//
// PyTorchJob (kubeflow.org/v1): one Master replica and workers - 1 Worker
// replicas (restartPolicy Never, or ExitCode when backend.backoff_limit > 0:
// the operator then makes a pod killed by a signal again under the same
// name), each a pod whose container is named `pytorch` (the name the
// operator and Katib look for); the Master's port is named
// `pytorchjob-port`. The operator, not tune, sets MASTER_ADDR, MASTER_PORT,
// WORLD_SIZE, RANK and PET_* in every pod (and creates a Service per pod),
// so a trial.env entry of those names is left out; TUNE_*, the rest of
// trial.env and LOCAL_RANK=0, LOCAL_WORLD_SIZE=1 (one process per pod) are
// set. runPolicy: backoffLimit = backend.backoff_limit (0: retries are the
// tuner's), activeDeadlineSeconds = ceil(trial.timeout_s),
// cleanPodPolicy None (the pods outlive the job until tune has read rank
// 0's log and deletes the PyTorchJob), ttlSecondsAfterFinished =
// backend.ttl_seconds_after_finished (the backstop if tune dies).
//
// TrainJob (trainer.kubeflow.org/v1alpha1): runtimeRef names the
// ClusterTrainingRuntime backend.runtime_ref (default torch-distributed);
// trainer holds image, command, env, numNodes = workers and
// resourcesPerNode. The runtime sets the PET_* variables for torchrun;
// pod options (service account, node selector, tolerations, volumes and
// mounts) go through podSpecOverrides to the runtime's trainer node. A
// TrainJob has no deadline of its own: the backend enforces trial.timeout_s.
//
// Both carry the labels and annotations of k8s/render.h on the object and
// on the pods (PyTorchJob: the replica templates; TrainJob: spec.labels,
// which the runtime passes to its JobSet and Jobs).
//
// Pure functions, thread-safe. InvalidArgument as RenderTrialManifests.
#pragma once

#include <string>

#include "core/status.h"
#include "k8s/kubernetes_options.h"
#include "trial_runner/trial_backend.h"

namespace tune {

// The PyTorchJob's container name and its Master's port (the operator's
// defaults).
inline constexpr const char* kPyTorchContainer = "pytorch";
inline constexpr const char* kPyTorchPortName = "pytorchjob-port";
inline constexpr int kPyTorchPort = 23456;

// The torch-distributed runtime's replicated job and container that the
// TrainJob's trainer fills in (podSpecOverrides target them).
inline constexpr const char* kTrainerReplicatedJob = "trainer-node";
inline constexpr const char* kTrainerContainer = "trainer";

// A `v1/List` holding the one PyTorchJob of the attempt.
Result<std::string> RenderPyTorchJob(const KubernetesOptions& opts, const LaunchSpec& spec,
                                     const std::string& object_name);

// A `v1/List` holding the one TrainJob of the attempt.
Result<std::string> RenderTrainJob(const KubernetesOptions& opts, const LaunchSpec& spec,
                                   const std::string& object_name);

}  // namespace tune
