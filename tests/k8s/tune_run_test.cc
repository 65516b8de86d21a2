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

struct TuneRun {
  int rc = -1;
  std::string out, err;
};

// `tune run <dir>/experiment.json --quiet` in `dir`, with `exp` written there.
TuneRun RunIn(const std::string& dir, const json& exp) {
  std::ofstream(dir + "/experiment.json") << exp.dump(2);
  boost::filesystem::remove(dir + "/run.out");  // Boost.Process appends
  boost::filesystem::remove(dir + "/run.err");
  TuneRun r;
  r.rc = bp::system(TUNE_BIN_DIR "/tune", "run", dir + "/experiment.json", "--quiet", bp::std_out > dir + "/run.out",
                    bp::std_err > dir + "/run.err", bp::start_dir = dir);
  r.out = Slurp(dir + "/run.out");
  r.err = Slurp(dir + "/run.err");
  return r;
}

json OneTrialExperiment(const FakeCluster& cluster, const std::string& name, const std::string& db) {
  return {{"name", name},
          {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
          {"parameters", {{"lr", {{"type", "choice"}, {"values", {0.01}}}}}},
          {"limits", {{"max_trials", 1}}},
          {"trial", {{"command", {TUNE_BIN_DIR "/synthetic_trial", "--lr", "${lr}", "--steps", "10"}},
                     {"resources_per_worker", {{"cpu", 0.1}}}}},
          {"backend", {{"type", "kubernetes"}, {"namespace", "default"}, {"image", "registry.example/tune:test"},
                       {"kubeconfig", cluster.Options().kubeconfig}, {"pending_timeout_s", 3}}},
          {"storage", {{"path", db}}}};
}

TEST_CASE("tune run: a trial.env Secret reference reaches the pod, never tune's database or manifests",
          "[k8s][e2e][secret]") {
  FakeCluster cluster;
  const std::string dir = cluster.dir();
  const std::string secret = "hf_s3cret_Zq7";  // 13 bytes
  // (The stand-in reads JSON bodies only, so no `kubectl create secret`;
  // its OpenAPI document has no Secret, so no client-side validation.)
  json manifest = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", "hf-token"}}},
                   {"stringData", {{"token", secret}}}};
  auto made = cluster.Cli().Run({"create", "--validate=false", "-f", "-"}, manifest.dump());
  REQUIRE(made.ok());
  INFO(made->err);
  REQUIRE(made->exit_code == 0);
  json exp = OneTrialExperiment(cluster, "secret-run", dir + "/tune.db");
  // The trial reports the length of what it got: the value itself appears
  // nowhere in the experiment.
  exp["trial"]["command"] = {"/bin/sh", "-c", "printf '%s' \"$HF_TOKEN\" | wc -c | sed 's/^ */eval_loss=/'"};
  exp["trial"]["env"] = {{"HF_TOKEN", {{"secret", "hf-token"}, {"key", "token"}}}};
  TuneRun r = RunIn(dir, exp);
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  int rc = bp::system(TUNE_BIN_DIR "/tune", "trials", "--db", dir + "/tune.db", "--format", "json",
                      bp::std_out > dir + "/trials.json", bp::std_err > dir + "/trials.err");
  REQUIRE(rc == 0);
  json trials = json::parse(Slurp(dir + "/trials.json"));
  REQUIRE(trials.size() == 1);
  CHECK(trials[0]["state"] == "completed");
  CHECK(trials[0]["value"] == 13);
  CHECK(Slurp(dir + "/tune.db").find(secret) == std::string::npos);
  CHECK(r.out.find(secret) == std::string::npos);

  // A Secret that does not exist: the pod waits in CreateContainerConfigError
  // with the kubelet's words, and the attempt fails after pending_timeout_s.
  exp["name"] = "secret-missing";
  exp["trial"]["env"] = {{"HF_TOKEN", {{"secret", "no-such-secret"}, {"key", "token"}}}};
  TuneRun missing = RunIn(dir, exp);
  INFO(missing.out << missing.err);
  CHECK(missing.rc == 1);
  rc = bp::system(TUNE_BIN_DIR "/tune", "trials", "--db", dir + "/tune.db", "--experiment", "secret-missing",
                  "--format", "json", bp::std_out > dir + "/missing.json", bp::std_err > dir + "/missing.err");
  REQUIRE(rc == 0);
  json failed = json::parse(Slurp(dir + "/missing.json"));
  REQUIRE(failed.size() == 1);
  CHECK(failed[0]["state"] == "failed");
  CHECK(failed[0]["message"].get<std::string>().find(
            "CreateContainerConfigError: secret \"no-such-secret\" not found") != std::string::npos);
  CHECK(cluster.Names("jobs,services,pods", std::string(kExperimentLabel) + "=secret-missing").empty());
}

TEST_CASE("tune run: a trial directory whose path is not UTF-8 is refused before anything starts",
          "[k8s][e2e][utf8]") {
  FakeCluster cluster;
  const std::string dir = cluster.dir() + "/caf\xe9";  // "cafe" with a Latin-1 e-acute
  boost::filesystem::create_directory(dir);
  // The database beside the experiment, in that directory (experiment.json,
  // being UTF-8, can only name it relative to the directory tune runs in).
  TuneRun r = RunIn(dir, OneTrialExperiment(cluster, "latin1-dir", "tune.db"));
  CHECK(r.rc == 2);
  // Before: the Jobs were created with U+FFFD in TUNE_TRIAL_DIR, a directory
  // that exists nowhere. Now: one sentence naming the field and the path.
  CHECK(r.err == "tune: TUNE_TRIAL_DIR: expected UTF-8 text for a Kubernetes manifest, got \"" + cluster.dir() +
                     "/caf\\xE9/tune_runs/latin1-dir/trial_0000\" (byte \\xE9 is not UTF-8; it holds the "
                     "trial's directory, which lies beside the results database: give the database a path that "
                     "is UTF-8 (--db or storage.path))\n");
  CHECK_FALSE(boost::filesystem::exists(dir + "/tune.db"));
  CHECK(cluster.Names("jobs,services,pods", std::string(kExperimentLabel) + "=latin1-dir").empty());
  // tune render agrees: what a run would refuse it refuses too, and what it
  // prints carries no byte that is not UTF-8 (its trial directory is
  // /tune/runs/..., its pods start in the image's WORKDIR).
  boost::filesystem::remove(dir + "/render.out");
  int rc = bp::system(TUNE_BIN_DIR "/tune", "render", dir + "/experiment.json", bp::std_out > dir + "/render.out",
                      bp::std_err > dir + "/render.err");
  CHECK(rc == 0);
  CHECK(Slurp(dir + "/render.out").find("\xef\xbf\xbd") == std::string::npos);
  CHECK(Slurp(dir + "/render.out").find("caf") == std::string::npos);
}

}  // namespace
}  // namespace tune
