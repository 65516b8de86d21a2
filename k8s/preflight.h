// The Kubernetes backend's preflight (KubernetesBackend::Preflight,
// k8s/kubernetes_backend.h): what must hold before the first attempt is
// created, each failure one sentence that names what to fix.
#pragma once

#include "core/status.h"
#include "k8s/api_call.h"
#include "k8s/kubectl.h"
#include "k8s/kubernetes_options.h"
#include "k8s/workload.h"

namespace tune {

// In order: an image (InvalidArgument); a known backend.job_kind
// (InvalidArgument); kubectl runs (FailedPrecondition); the context is
// pinned (Kubectl::PinContext); the API server answers (`kubectl get --raw
// /version`; Unavailable); for a Kubeflow kind, its group/version serves
// the workload's resource (FailedPrecondition: the operator is not
// installed); `kubectl auth can-i` allows every permission of
// Workload::Permissions (k8s/rbac.yaml grants exactly these;
// FailedPrecondition naming every one denied, checked in parallel); the
// namespace exists, when the identity may read namespaces
// (FailedPrecondition). API calls go through CallApi with `policy`,
// counted in `stats`.
Status RunPreflight(const KubernetesOptions& opts, const Kubectl& kubectl, const Workload& workload,
                    const RetryPolicy& policy, ApiStats* stats);

}  // namespace tune
