#include "k8s/preflight.h"

#include <future>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/object_fields.h"

namespace tune {
namespace {

using nlohmann::json;

// A Kubeflow kind: its CRD is served (discovery, which every identity may
// read).
Status CheckServed(const KubernetesOptions& opts, const Kubectl& kubectl, const Workload& workload,
                   const RetryPolicy& policy, ApiStats* stats) {
  if (workload.GroupVersion().empty()) return Status::Ok();
  TUNE_ASSIGN_OR_RETURN(ApiResult gv,
                        CallApi(kubectl, {"get", "--raw", "/apis/" + workload.GroupVersion()}, "", policy, stats));
  json list = gv.ok ? json::parse(gv.output.out, nullptr, false) : json();
  bool served = false;
  if (list.is_object() && list.contains("resources") && list["resources"].is_array()) {
    for (const json& r : list["resources"]) served |= k8s_object::Str(r, "name") == workload.Plural();
  }
  if (!served && (gv.ok || gv.failure.reason == "NotFound")) {
    return Status::FailedPrecondition(workload.NotInstalled() + " (backend.job_kind \"" + opts.job_kind + "\")");
  }
  if (!gv.ok) {
    return Status::Unavailable("kubectl get --raw /apis/" + workload.GroupVersion() + ": " + gv.failure.message);
  }
  return Status::Ok();
}

// Every permission the backend uses (k8s/rbac.yaml grants exactly these).
Status CheckPermissions(const Kubectl& kubectl, const Workload& workload, const RetryPolicy& policy,
                        ApiStats* stats, const std::string& where) {
  const std::vector<std::vector<std::string>> needed = workload.Permissions();
  std::vector<std::future<Result<ApiResult>>> checks;
  for (const auto& n : needed) {
    std::vector<std::string> args = {"auth", "can-i", n[0], n[1]};
    if (n.size() > 2) args.push_back("--subresource=" + n[2]);
    checks.push_back(std::async(std::launch::async, [&kubectl, &policy, stats, args] {
      return CallApi(kubectl, args, "", policy, stats);
    }));
  }
  std::string denied;
  Status failed = Status::Ok();
  for (size_t i = 0; i < needed.size(); ++i) {
    Result<ApiResult> r = checks[i].get();
    if (!r.ok()) {
      if (failed.ok()) failed = r.status();
      continue;
    }
    std::string perm = needed[i][0] + " " + needed[i][1] + (needed[i].size() > 2 ? "/" + needed[i][2] : "");
    // can-i exits 1 and prints "no" when denied.
    if (r->output.out.rfind("yes", 0) == 0) continue;
    if (r->output.out.rfind("no", 0) != 0) {
      if (failed.ok()) failed = Status::Unavailable("kubectl auth can-i " + perm + " failed: " + r->failure.message);
      continue;
    }
    denied += (denied.empty() ? "" : ", ") + perm;
  }
  if (!failed.ok()) return failed;
  if (!denied.empty()) {
    return Status::FailedPrecondition("RBAC: the tuner's Kubernetes identity may not " + denied + " in " + where +
                                      " (k8s/rbac.yaml grants what the backend needs)");
  }
  return Status::Ok();
}

// The namespace exists. Namespaces are cluster-scoped: an identity with
// only the kit's Role may not read them (Forbidden), then creates tell.
Status CheckNamespace(const KubernetesOptions& opts, const Kubectl& kubectl, const RetryPolicy& policy,
                      ApiStats* stats) {
  TUNE_ASSIGN_OR_RETURN(ApiResult ns,
                        CallApi(kubectl, {"get", "namespace", opts.namespace_, "-o", "name"}, "", policy, stats));
  if (!ns.ok && ns.failure.reason == "NotFound") {
    const std::string context = kubectl.Context();
    return Status::FailedPrecondition("backend.namespace: namespace '" + opts.namespace_ +
                                      "' does not exist in the cluster" +
                                      (context.empty() ? "" : " of context '" + context + "'") +
                                      " (create it, e.g. kubectl apply -f k8s/namespace.yaml)");
  }
  return Status::Ok();
}

}  // namespace

Status RunPreflight(const KubernetesOptions& opts, const Kubectl& kubectl, const Workload& workload,
                    const RetryPolicy& policy, ApiStats* stats) {
  if (opts.image.empty()) {
    return Status::InvalidArgument("backend.image: the kubernetes backend needs a container image");
  }
  if (!MakeWorkload(opts.job_kind)) {
    return Status::InvalidArgument("backend.job_kind: expected job, pytorchjob or trainjob, got \"" + opts.job_kind +
                                   "\"");
  }
  TUNE_ASSIGN_OR_RETURN(KubectlOutput client, kubectl.Run({"version", "--client"}, "", std::chrono::seconds(20)));
  if (client.exit_code != 0) return Status::FailedPrecondition("kubectl does not run: " + client.err);
  // Every call from now on goes to this context, and the commands printed
  // for the user (LeftoverCommand) name it.
  kubectl.PinContext();
  const std::string context = kubectl.Context();
  const std::string where =
      "namespace '" + opts.namespace_ + "'" + (context.empty() ? "" : " of context '" + context + "'");
  TUNE_ASSIGN_OR_RETURN(ApiResult version, CallApi(kubectl, {"get", "--raw", "/version"}, "", policy, stats));
  if (!version.ok) {
    return Status::Unavailable("cannot reach the Kubernetes API server for " + where + ": " + version.failure.message);
  }
  TUNE_RETURN_IF_ERROR(CheckServed(opts, kubectl, workload, policy, stats));
  TUNE_RETURN_IF_ERROR(CheckPermissions(kubectl, workload, policy, stats, where));
  return CheckNamespace(opts, kubectl, policy, stats);
}

}  // namespace tune
