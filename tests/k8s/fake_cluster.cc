#include "tests/k8s/fake_cluster.h"

#include <signal.h>
#include <stdlib.h>

#include <dirent.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/filesystem.hpp>

namespace tune::testing {
namespace bp = boost::process;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::vector<std::string> KubeflowFlags() {
  const std::string crds = TUNE_SOURCE_DIR "/tests/k8s/crds/";
  return {"--crd", crds + "kubeflow.org_pytorchjobs.yaml", "--crd", crds + "trainer.kubeflow.org_trainjobs.yaml",
          "--crd", crds + "torch_distributed_runtime.yaml"};
}

FakeCluster::FakeCluster(std::vector<std::string> extra) {
  dir_ = MakeTempDir("tune_k8s_");
  kubeconfig_ = dir_ + "/kubeconfig.json";
  // kubectl's discovery cache, per server (each has its own port anyway).
  setenv("KUBECACHEDIR", (dir_ + "/kube-cache").c_str(), 1);
  std::vector<std::string> args = {TUNE_SOURCE_DIR "/tests/k8s/fake_apiserver.py",
                                   "--kubeconfig", kubeconfig_,
                                   "--openapi", TUNE_SOURCE_DIR "/tests/k8s/openapi/definitions.json",
                                   "--work-dir", dir_ + "/pods",
                                   "--lifetime", "240"};
  args.insert(args.end(), extra.begin(), extra.end());
  server_ = bp::child(bp::search_path("python3"), args, bp::std_out > bp::null);
  for (int i = 0; i < 200 && !boost::filesystem::exists(kubeconfig_); ++i) {
    if (!server_.running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!boost::filesystem::exists(kubeconfig_)) throw std::runtime_error("fake_apiserver.py did not start");
}

FakeCluster::~FakeCluster() {
  if (server_.valid() && server_.running()) {
    ::kill(server_.id(), SIGTERM);
    std::error_code ec;
    if (!server_.wait_for(std::chrono::seconds(10), ec)) server_.terminate(ec);
  }
  boost::system::error_code ec;
  boost::filesystem::remove_all(dir_, ec);
}

KubernetesOptions FakeCluster::Options() const {
  KubernetesOptions o;
  o.kubeconfig = kubeconfig_;
  o.namespace_ = "default";
  o.image = "registry.example/tune:test";
  return o;
}

std::vector<std::string> FakeCluster::Names(const std::string& kinds, const std::string& sel) const {
  auto out = Cli().Check({"get", kinds, "-l", sel, "-o", "name"});
  if (!out.ok()) throw std::runtime_error(out.status().message());
  std::vector<std::string> names;
  std::istringstream in(*out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

void FakeCluster::SetFaults(const std::string& config) const {
  auto out = Cli().Check({"create", "--raw", "/_fake/faults", "-f", "-"}, config);
  if (!out.ok()) throw std::runtime_error(out.status().message());
}

std::string FakeCluster::FaultStats() const {
  auto out = Cli().Check({"get", "--raw", "/_fake/stats"});
  if (!out.ok()) throw std::runtime_error(out.status().message());
  return *out;
}

std::vector<int> FakeCluster::KubectlProcesses() const {
  std::vector<int> pids;
  DIR* proc = opendir("/proc");
  if (!proc) return pids;
  while (dirent* e = readdir(proc)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    // Slurp: a process that ended since the listing reads as "" (an
    // istreambuf_iterator would throw on ESRCH).
    std::string cmdline = Slurp(std::string("/proc/") + e->d_name + "/cmdline");
    if (cmdline.find("kubectl") == std::string::npos || cmdline.find(kubeconfig_) == std::string::npos) continue;
    std::string st = Slurp(std::string("/proc/") + e->d_name + "/stat");
    size_t close = st.rfind(')');
    if (close != std::string::npos && close + 2 < st.size() && st[close + 2] == 'Z') continue;  // a zombie
    pids.push_back(pid);
  }
  closedir(proc);
  return pids;
}

}  // namespace tune::testing
