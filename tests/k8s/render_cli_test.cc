// `tune render` as a user meets it (the real binary, real files): what a
// pod's manifest says about the tuner's machine. No local path is
// published: the container starts in its image's WORKDIR unless
// trial.working_dir names a directory in it, an experiment in a directory
// whose name is not UTF-8 renders without it, and a trial.env value taken
// from a Secret is a secretKeyRef, never a literal. The manifests validate
// against the real schema (fake_apiserver.py serves it).
#include <fstream>

#include <boost/filesystem.hpp>
#include <boost/process.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/k8s/fake_cluster.h"

namespace tune {
namespace {

namespace bp = boost::process;
namespace fs = boost::filesystem;
using nlohmann::json;
using testing::Slurp;

struct Rendered {
  int rc = -1;
  std::string out, err;
};

// A temporary directory removed at the end of the scope.
struct Scratch {
  std::string path = testing::MakeTempDir("tune_render_cli_");
  ~Scratch() {
    boost::system::error_code ec;
    fs::remove_all(path, ec);
  }
};

json Experiment() {
  return {{"name", "render-cli"},
          {"objective", {{"metric", "loss"}, {"mode", "min"}}},
          {"parameters", {{"lr", {{"type", "choice"}, {"values", {0.01}}}}}},
          {"trial", {{"command", {"train", "--lr", "${lr}"}}, {"workers", 2}}},
          {"backend", {{"type", "kubernetes"}, {"image", "registry.example/train:1"}}}};
}

// Writes `exp` as <dir>/experiment.json and runs `tune render` on it.
Rendered Render(const std::string& dir, const json& exp, const std::string& job_kind = "job") {
  json e = exp;
  e["backend"]["job_kind"] = job_kind;
  std::ofstream(dir + "/experiment.json") << e.dump(2);
  // Boost.Process appends to an existing file: start from empty ones.
  fs::remove(dir + "/render.out");
  fs::remove(dir + "/render.err");
  Rendered r;
  r.rc = bp::system(TUNE_BIN_DIR "/tune", "render", dir + "/experiment.json", "--trial", "0",
                    bp::std_out > dir + "/render.out", bp::std_err > dir + "/render.err", bp::start_dir = dir);
  r.out = Slurp(dir + "/render.out");
  r.err = Slurp(dir + "/render.err");
  return r;
}

// Every container of the rendered attempt that runs the trial's command.
std::vector<json> TrialContainers(const json& list) {
  std::vector<json> out;
  for (const json& item : list["items"]) {
    if (item["kind"] == "Job") out.push_back(item["spec"]["template"]["spec"]["containers"][0]);
    if (item["kind"] == "TrainJob") out.push_back(item["spec"]["trainer"]);
    if (item["kind"] == "PyTorchJob") {
      for (const auto& [type, r] : item["spec"]["pytorchReplicaSpecs"].items()) {
        out.push_back(r["template"]["spec"]["containers"][0]);
      }
    }
  }
  return out;
}

TEST_CASE("tune render: a pod starts in its image's WORKDIR unless trial.working_dir names one",
          "[k8s][render][cli]") {
  Scratch dir;
  for (const char* kind : {"job", "pytorchjob", "trainjob"}) {
    INFO(kind);
    Rendered r = Render(dir.path, Experiment(), kind);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    // Before: workingDir was the directory of experiment.json on this machine.
    CHECK(r.out.find("workingDir") == std::string::npos);
    CHECK(r.out.find(dir.path) == std::string::npos);
  }
  json exp = Experiment();
  exp["trial"]["working_dir"] = "/workspace/src";
  for (const char* kind : {"job", "pytorchjob"}) {
    Rendered r = Render(dir.path, exp, kind);
    REQUIRE(r.rc == 0);
    for (const json& c : TrialContainers(json::parse(r.out))) CHECK(c["workingDir"] == "/workspace/src");
  }
  // A relative directory is the local backend's (it starts at the
  // experiment file's directory, on this machine): refused for a pod.
  exp["trial"]["working_dir"] = "src";
  Rendered rel = Render(dir.path, exp);
  CHECK(rel.rc == 2);
  CHECK(rel.out.empty());
  CHECK(rel.err == "tune: " + dir.path +
                       "/experiment.json: trial.working_dir: expected an absolute path in the container for the "
                       "kubernetes backend (leave the key out for the image's WORKDIR; relative paths are the local "
                       "backend's), got \"src\"\n");
}

TEST_CASE("tune render: an experiment in a directory whose name is Latin-1 renders, publishing no path",
          "[k8s][render][cli]") {
  Scratch scratch;
  const std::string dir = scratch.path + "/caf\xe9";  // "cafe" with a Latin-1 e-acute: not UTF-8
  fs::create_directory(dir);
  Rendered r = Render(dir, Experiment());
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  // Before: aborted (invalid UTF-8 in the JSON dump), then a workingDir with
  // U+FFFD in place of the byte: a directory that exists nowhere.
  CHECK(r.out.find("\xef\xbf\xbd") == std::string::npos);
  CHECK(r.out.find("caf") == std::string::npos);
  CHECK(json::parse(r.out)["items"].size() == 2);
}

TEST_CASE("tune render: a Secret reference in trial.env is a secretKeyRef in every kind, and validates",
          "[k8s][render][cli][validate]") {
  testing::FakeCluster cluster(testing::KubeflowFlags());
  json exp = Experiment();
  exp["trial"]["env"] = {{"HF_TOKEN", {{"secret", "hf-token"}, {"key", "token"}}}, {"OMP_NUM_THREADS", "2"}};
  for (const char* kind : {"job", "pytorchjob", "trainjob"}) {
    INFO(kind);
    Rendered r = Render(cluster.dir(), exp, kind);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const std::vector<json> containers = TrialContainers(json::parse(r.out));
    REQUIRE_FALSE(containers.empty());
    for (const json& c : containers) {
      int found = 0;
      for (const json& e : c["env"]) {
        if (e["name"] != "HF_TOKEN") continue;
        ++found;
        CHECK(e == json::parse(R"({"name": "HF_TOKEN",
                                   "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}})"));
      }
      CHECK(found == 1);
    }
    for (const char* mode : {"--dry-run=client", "--dry-run=server"}) {
      auto v = cluster.Cli().Run({"create", mode, "--validate=strict", "-f", "-", "-o", "name"}, r.out);
      REQUIRE(v.ok());
      INFO(mode << ": " << v->err);
      CHECK(v->exit_code == 0);
    }
  }
}

}  // namespace
}  // namespace tune
