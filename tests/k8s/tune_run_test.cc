// `tune run --backend kubernetes` end to end: the real tune binary and the
// real kubectl against fake_apiserver.py, 2-worker trials of
// synthetic_trial, ASHA, a trial that fails and is retried as a new Job.
#include <fstream>
#include <sstream>

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

TEST_CASE("tune run with the kubernetes backend runs, prunes, retries and cleans up", "[k8s][e2e]") {
  FakeCluster cluster;
  const std::string dir = cluster.dir();
  const std::string exp_name = "k8s-e2e";
  json exp = {
      {"name", exp_name},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "grid"}, {"values", {0.0003, 0.01, 0.05}}}},
        {"fail_at", {{"type", "grid"}, {"values", {-1, 4}}}}}},
      {"search", {{"algorithm", "grid"}}},
      {"scheduler", {{"type", "asha"}, {"time_attr", "step"}, {"max_t", 60}, {"grace_period", 10},
                     {"reduction_factor", 3}}},
      {"limits", {{"max_trials", 6}, {"max_concurrent_trials", 3}}},
      {"trial",
       {{"command", {TUNE_BIN_DIR "/synthetic_trial", "--lr", "${lr}", "--fail-at", "${fail_at}", "--steps",
                     "60", "--report-every", "10", "--sleep-ms", "30"}},
        {"workers", 2},
        {"resources_per_worker", {{"cpu", 0.1}}},
        {"max_retries", 1}}},
      {"backend", {{"type", "kubernetes"}, {"namespace", "default"}, {"image", "registry.example/tune:test"},
                   {"kubeconfig", cluster.Options().kubeconfig}}},
      {"storage", {{"path", dir + "/tune.db"}}}};
  std::ofstream(dir + "/experiment.json") << exp.dump(2);

  int rc = bp::system(TUNE_BIN_DIR "/tune", "run", dir + "/experiment.json", "--quiet",
                      bp::std_out > dir + "/run.out", bp::std_err > dir + "/run.err", bp::start_dir = dir);
  INFO(Slurp(dir + "/run.out") << Slurp(dir + "/run.err"));
  REQUIRE(rc == 0);

  rc = bp::system(TUNE_BIN_DIR "/tune", "trials", "--db", dir + "/tune.db", "--format", "json",
                  bp::std_out > dir + "/trials.json", bp::std_err > dir + "/trials.err");
  REQUIRE(rc == 0);
  json trials = json::parse(Slurp(dir + "/trials.json"));
  INFO(trials.dump(2));
  REQUIRE(trials.size() == 6);
  int completed = 0, failed = 0;
  for (const json& t : trials) {
    CHECK(t["location"].get<std::string>().rfind("k8s:default/job/", 0) == 0);
    if (t["params"]["fail_at"] == 4) {
      // Both attempts ran as Jobs and failed: retried under max_retries.
      CHECK(t["state"] == "failed");
      CHECK(t["attempts"] == 2);
      CHECK(t["message"].get<std::string>().find("BackoffLimitExceeded") != std::string::npos);
      ++failed;
    } else {
      CHECK((t["state"] == "completed" || t["state"] == "pruned"));
      completed += t["state"] == "completed";
    }
  }
  CHECK(failed == 3);
  CHECK(completed >= 1);
  // Nothing labelled with the experiment is left: Jobs of completed,
  // pruned and failed trials are all deleted.
  CHECK(cluster.Names("jobs,services,pods", std::string(kExperimentLabel) + "=" + exp_name).empty());
}

}  // namespace
}  // namespace tune
