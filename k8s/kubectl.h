// Kubectl: runs the real `kubectl` binary as a child process (Boost.Process).
//
// Every call adds the connection flags from KubernetesOptions (--kubeconfig,
// --context, --namespace; a context pinned by PinContext when none is
// named), so the backend talks to exactly the cluster and namespace the
// experiment names. Thread-safe: each call is its own process.
//
// Each kubectl runs in a process group of its own and dies with the thread
// that started it (PR_SET_PDEATHSIG), so no kubectl outlives tune, even when
// tune is killed. Cancel() ends every call in flight (SIGKILL to its group)
// and makes later calls return at once: what Ctrl-C needs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/kubernetes_options.h"

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
  // `timeout` (then the process group is killed and the call is
  // Unavailable). A nonzero exit is not an error here: the caller reads
  // exit_code. Non-OK only when kubectl could not be run (FailedPrecondition:
  // not found), timed out (Unavailable), or was cancelled (Cancelled()).
  Result<KubectlOutput> Run(const std::vector<std::string>& args, const std::string& input = "",
                            std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

  // Run(), with a nonzero exit turned into Unavailable carrying kubectl's
  // stderr ("kubectl get jobs: <stderr>"); returns stdout.
  Result<std::string> Check(const std::vector<std::string>& args, const std::string& input = "",
                            std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

  // The full argv for `args` (path of kubectl first), for long-running
  // children the caller manages itself (`kubectl logs -f`). Empty path if
  // kubectl cannot be found. Such children should be started with
  // KubectlChildSetup() and announced with Adopt()/Forget().
  std::vector<std::string> Argv(const std::vector<std::string>& args) const;

  // A long-running child (its pid is its process group) that Cancel() ends
  // too. Forget() once it has been waited for.
  void Adopt(pid_t pgid) const;
  void Forget(pid_t pgid) const;

  // Ends every call in flight and every adopted child (SIGKILL to their
  // process groups); from now on Run() returns Unavailable at once. Any
  // thread; idempotent.
  void Cancel() const;
  bool Cancelled() const;

  // Seconds since the API server last gave an answer that was not a
  // transient failure, if a call has been waiting for one since (a call in
  // flight, or failed calls); 0 while answers come.
  double SecondsWithoutAnswer() const;
  // Records the outcome of a call for SecondsWithoutAnswer (the retry layer
  // classifies; Run() itself records only successes).
  void NoteAnswer(bool answered) const;

  // Pins the context: when the options name none, the kubeconfig's
  // current context is read once (`kubectl config current-context`) and
  // every later call of this Kubectl and its copies passes it as
  // --context, so that a run keeps talking to one cluster (and the commands
  // printed for the user name it) even if the current context changes
  // meanwhile. Nothing is pinned when no context is current (in a pod).
  // Idempotent; thread-safe.
  void PinContext() const;
  // The context every call passes: the options', else the pinned one; ""
  // when none.
  std::string Context() const;

  const KubernetesOptions& options() const { return opts_; }

 private:
  struct Shared;
  KubernetesOptions opts_;
  std::string path_;  // resolved kubectl, empty if not found
  std::shared_ptr<Shared> shared_;
};

}  // namespace tune
