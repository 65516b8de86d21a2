#include "tests/k8s/fake_cluster.h"

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/filesystem.hpp>

namespace tune::testing {
namespace bp = boost::process;

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
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

}  // namespace tune::testing
