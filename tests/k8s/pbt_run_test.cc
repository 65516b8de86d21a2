// Population Based Training on the Kubernetes backend: the real tune binary
// and the real kubectl against fake_apiserver.py, whose pods run the trial
// program on this machine. Trial directories lie under a mounted claim, as
// in the kit; without one, tune refuses PBT in one sentence.
#include <fstream>

#include <boost/filesystem.hpp>
#include <boost/process.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "k8s/render.h"
#include "tests/k8s/fake_cluster.h"

namespace tune {
namespace {

namespace bp = boost::process;
using nlohmann::json;
using testing::FakeCluster;
using testing::Slurp;

json PbtExperiment(const FakeCluster& cluster, const std::string& dir, bool mounted) {
  json backend = {{"type", "kubernetes"}, {"namespace", "default"}, {"image", "registry.example/tune:test"},
                  {"kubeconfig", cluster.Options().kubeconfig}};
  if (mounted) {
    backend["volumes"] = {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "tune-data"}}}}};
    backend["volume_mounts"] = {{{"name", "data"}, {"mountPath", dir}}};
  }
  return {{"name", "k8s-pbt"},
          {"objective", {{"metric", "score"}, {"mode", "max"}}},
          {"parameters", {{"lr", {{"type", "uniform"}, {"low", 0.0001}, {"high", 0.02}}}}},
          {"search", {{"algorithm", "random"}, {"seed", 4}}},
          {"scheduler", {{"type", "pbt"}, {"max_t", 40}, {"perturbation_interval", 5}}},
          {"limits", {{"max_trials", 4}, {"max_concurrent_trials", 4}}},
          {"trial",
           {{"command", {TUNE_BIN_DIR "/pbt_toy_trial", "--lr", "${lr}", "--seed", "${trial_id}", "--max-steps", "40",
                         "--checkpoint-every", "5", "--sleep-ms", "50", "--done-at", "0"}},
            {"resources_per_worker", {{"cpu", 0.1}}}}},
          {"backend", backend},
          {"storage", {{"path", dir + "/tune.db"}}}};
}

int RunTune(const std::string& dir, const json& exp) {
  std::ofstream(dir + "/experiment.json") << exp.dump(2);
  boost::filesystem::remove(dir + "/run.out");
  boost::filesystem::remove(dir + "/run.err");
  return bp::system(TUNE_BIN_DIR "/tune", "run", dir + "/experiment.json", "--quiet", bp::std_out > dir + "/run.out",
                    bp::std_err > dir + "/run.err", bp::start_dir = dir);
}

TEST_CASE("tune run: PBT on Kubernetes pauses, copies checkpoints between trial Jobs and continues them",
          "[k8s][e2e][pbt]") {
  FakeCluster cluster;
  const std::string dir = cluster.dir();
  int rc = RunTune(dir, PbtExperiment(cluster, dir, true));
  INFO(Slurp(dir + "/run.out") << Slurp(dir + "/run.err"));
  REQUIRE(rc == 0);
  rc = bp::system(TUNE_BIN_DIR "/tune", "trials", "--db", dir + "/tune.db", "--format", "json",
                  bp::std_out > dir + "/trials.json", bp::std_err > dir + "/trials.err");
  REQUIRE(rc == 0);
  json trials = json::parse(Slurp(dir + "/trials.json"));
  INFO(trials.dump(2));
  REQUIRE(trials.size() == 4);
  int exploited = 0;
  for (const json& t : trials) {
    CHECK(t["state"] == "completed");
    CHECK(t["location"].get<std::string>().rfind("k8s:default/job/", 0) == 0);
    exploited += static_cast<int>(t["schedule"].size()) - 1;
  }
  // With 4 trials the bottom and the top quantile hold one each: the worst
  // trial at an interval takes the best one's checkpoint.
  CHECK(exploited > 0);
  // A continued attempt ran as a new Job from the copied checkpoint.
  bool continued = false;
  for (int n = 0; n < 4; ++n) {
    const std::string log = Slurp(dir + "/tune_runs/k8s-pbt/trial_000" + std::to_string(n) + "/rank_0.log");
    continued = continued || log.find("resuming from") != std::string::npos;
  }
  CHECK(continued);
  CHECK(cluster.Names("jobs,services,pods", std::string(kExperimentLabel) + "=k8s-pbt").empty());
}

TEST_CASE("tune run: PBT on Kubernetes without the trial directories on a mounted claim is refused",
          "[k8s][pbt]") {
  FakeCluster cluster;
  const std::string dir = cluster.dir();
  int rc = RunTune(dir, PbtExperiment(cluster, dir, false));
  const std::string err = Slurp(dir + "/run.err");
  INFO(Slurp(dir + "/run.out") << err);
  CHECK(rc == 2);
  const std::string runs = boost::filesystem::path(dir + "/tune_runs").lexically_normal().string();
  CHECK_THAT(err, Catch::Contains("scheduler pbt continues trials from checkpoints, so on Kubernetes the trial "
                                  "directories (" + runs + ") must lie on a persistentVolumeClaim"));
  CHECK(!boost::filesystem::exists(dir + "/tune.db"));
  CHECK(cluster.Names("jobs,services,pods", std::string(kExperimentLabel) + "=k8s-pbt").empty());
}

}  // namespace
}  // namespace tune
