// Kubectl: runs the real `kubectl` binary as a child process (Boost.Process).
//
// Every call adds the connection flags from KubernetesOptions (--kubeconfig,
// --context, --namespace), so the backend talks to exactly the cluster and
// namespace the experiment names. Thread-safe: each call is its own process.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "k8s/kubernetes_options.h"
#include "tuner/core/status.h"

namespace tune {

struct KubectlOutput {
  int exit_code = 0;
  std::string out;  // stdout
  std::string err;  // stderr
};

class Kubectl {
 public:
  explicit Kubectl(KubernetesOptions opts);

  // Runs `kubectl <flags> <args...>` with `input` on stdin and waits at most
  // `timeout` (then the process is killed and the call is Unavailable).
  // A nonzero exit is not an error here: the caller reads exit_code. Non-OK
  // only when kubectl could not be run (FailedPrecondition: not found) or
  // timed out (Unavailable).
  Result<KubectlOutput> Run(const std::vector<std::string>& args, const std::string& input = "",
                            std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

  // Run(), with a nonzero exit turned into Unavailable carrying kubectl's
  // stderr ("kubectl get jobs: <stderr>"); returns stdout.
  Result<std::string> Check(const std::vector<std::string>& args, const std::string& input = "",
                            std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

  // The full argv for `args` (path of kubectl first), for long-running
  // children the caller manages itself (`kubectl logs -f`). Empty path if
  // kubectl cannot be found.
  std::vector<std::string> Argv(const std::vector<std::string>& args) const;

  const KubernetesOptions& options() const { return opts_; }

 private:
  KubernetesOptions opts_;
  std::string path_;  // resolved kubectl, empty if not found
};

}  // namespace tune
