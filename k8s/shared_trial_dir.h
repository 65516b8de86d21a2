// Whether trial pods and the tuner see the same trial directories: what
// checkpoint-aware scheduling needs on Kubernetes (docs/kubernetes.md,
// "Checkpoints and Population Based Training").
#pragma once

#include <string>

#include "core/status.h"
#include "k8s/kubernetes_options.h"

namespace tune {

// OK if `runs_dir` (absolute, the tuner's <runs_dir>; trial directories lie
// below it) is at or below the mountPath of one of `options`'
// volume_mounts whose volume is a persistentVolumeClaim: the trial pods then
// write their checkpoint folders where the tuner, running in the cluster
// with the same claim mounted at the same path (the kit's tuner Job), reads
// and copies them. Otherwise FailedPrecondition, one sentence naming
// `what` (e.g. "scheduler pbt"), the directory and what to mount.
Status CheckTrialDirsShared(const KubernetesOptions& options, const std::string& runs_dir, const std::string& what);

}  // namespace tune
