// The documented GPU example, experiments/lora-kubernetes-gpu.json, as
// `tune render` prints it: one nvidia.com/gpu per worker (requests and
// limits), the GPU nodes' toleration and node selector, and manifests that
// kubectl validates strictly against the real schema, client- and
// server-side (fake_apiserver.py).
#include <algorithm>
#include <fstream>
#include <sstream>

#include <boost/filesystem.hpp>
#include <boost/process.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/k8s/fake_cluster.h"

namespace tune {
namespace {

namespace bp = boost::process;
using nlohmann::json;
using testing::FakeCluster;

TEST_CASE("the GPU example renders GPU limits, tolerations and a node selector that validate", "[k8s][validate][gpu]") {
  FakeCluster cluster;  // its temporary directory holds the render's output too
  const std::string out_path = cluster.dir() + "/render.json", err_path = cluster.dir() + "/render.err";
  const int rc = bp::system(TUNE_BIN_DIR "/tune", "render", TUNE_SOURCE_DIR "/experiments/lora-kubernetes-gpu.json",
                            bp::std_out > out_path, bp::std_err > err_path);
  std::ifstream out_file(out_path), err_file(err_path);
  std::stringstream out, err;
  out << out_file.rdbuf();
  err << err_file.rdbuf();
  INFO(err.str());
  REQUIRE(rc == 0);
  const json list = json::parse(out.str());
  const json* job = nullptr;
  for (const auto& item : list.at("items")) {
    if (item.at("kind") == "Job") job = &item;
  }
  REQUIRE(job != nullptr);
  CHECK((*job)["spec"]["completions"] == 2);  // workers: 2, one GPU each
  const json& pod = (*job)["spec"]["template"]["spec"];
  const json& c = pod["containers"][0];
  CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "1");
  CHECK(c["resources"]["requests"]["nvidia.com/gpu"] == "1");
  CHECK(pod["nodeSelector"]["nvidia.com/gpu.present"] == "true");
  REQUIRE(pod["tolerations"].size() == 1);
  CHECK(pod["tolerations"][0] == json({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}));
  const std::vector<std::string> argv = c["command"].get<std::vector<std::string>>();
  CHECK(std::find(argv.begin(), argv.end(), "--device") != argv.end());

  Kubectl kubectl = cluster.Cli();
  for (const char* mode : {"--dry-run=client", "--dry-run=server"}) {
    auto r = kubectl.Run({"create", mode, "--validate=strict", "-f", "-", "-o", "name"}, out.str());
    REQUIRE(r.ok());
    INFO(mode << ": " << r->err);
    CHECK(r->exit_code == 0);
    CHECK(r->out.find("job.batch/lora-k8s-gpu-t0-a0") != std::string::npos);
  }
}

}  // namespace
}  // namespace tune
