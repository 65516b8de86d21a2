// FakeCluster: tests/k8s/fake_apiserver.py as a child process, for tests
// that drive the real kubectl. Each instance gets its own temporary
// directory (kubeconfig, pod logs, kubectl's discovery cache) and server.
#pragma once

#include <string>
#include <vector>

#include <boost/process.hpp>

#include "k8s/kubectl.h"
#include "k8s/kubernetes_options.h"

namespace tune::testing {

class FakeCluster {
 public:
  // `extra`: more fake_apiserver.py flags (e.g. {"--deny", "get:pods/log"}).
  explicit FakeCluster(std::vector<std::string> extra = {});
  ~FakeCluster();  // SIGTERM to the server; it kills the pods it started

  // Options pointing kubectl at this server (namespace "default").
  KubernetesOptions Options() const;
  // A kubectl bound to Options(), for assertions.
  Kubectl Cli() const { return Kubectl(Options()); }
  // Names (`kind/name`) of objects of `kinds` with label selector `sel`.
  std::vector<std::string> Names(const std::string& kinds, const std::string& sel) const;
  const std::string& dir() const { return dir_; }

  // Replaces the server's fault injection (fake_apiserver.py, class Faults)
  // with `config`, a JSON object; "{}" turns every fault off.
  void SetFaults(const std::string& config) const;
  // The counts of faults injected so far (GET /_fake/stats), as JSON text.
  std::string FaultStats() const;
  // Pids of live processes whose command line mentions this cluster's
  // kubeconfig (kubectl children of a tune that should have ended them).
  std::vector<int> KubectlProcesses() const;

 private:
  std::string dir_;
  std::string kubeconfig_;
  boost::process::child server_;
};

// fake_apiserver.py flags that make it a cluster with the Kubeflow
// operators: it serves the PyTorchJob and TrainJob CRDs of tests/k8s/crds/
// (kubectl validates against their schemas) and the torch-distributed
// ClusterTrainingRuntime. Without them it serves neither kind.
std::vector<std::string> KubeflowFlags();

// A fresh temporary directory (mkdtemp under $TMPDIR or /tmp).
std::string MakeTempDir(const std::string& prefix);

// The whole file at `path` ("" when it cannot be read).
std::string Slurp(const std::string& path);

}  // namespace tune::testing
