// trial.env values that name a Kubernetes Secret, on the local backend, end
// to end on the real binary: the value is the tuner's own environment
// variable of the same name; without it `tune validate` and `tune run`
// refuse in one sentence before anything starts; the value reaches the
// trial and nothing tune writes (database, logs, output).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/run_tune.h"
#include "tests/common/temp_dir.h"

namespace {

namespace fs = std::filesystem;

using Run = tune::testing::TuneRun;
using tune::testing::TempDir;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `tune ARGS` in `dir`, with the variables of `env` set and HF_TOKEN
// otherwise removed from the environment.
Run Tune(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& env, const std::string& args) {
  return tune::testing::RunTune(args, {.cwd = dir, .env = env, .unset_env = {"HF_TOKEN"}});
}

// Every byte of every file under `dir`.
std::string AllFiles(const fs::path& dir) {
  std::string all;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) all += ReadAll(e.path());
  }
  return all;
}

// The trial reports the length of the value it got as its loss, so that the
// value itself appears nowhere in the experiment.
const char* kExperiment = R"({
  "name": "secret-env",
  "objective": {"metric": "loss", "mode": "min"},
  "parameters": {"x": {"type": "choice", "values": [1]}},
  "limits": {"max_trials": 1},
  "trial": {
    "command": ["/bin/sh", "-c", "printf '%s' \"$HF_TOKEN\" | wc -c | sed 's/^ */loss=/'"],
    "env": {"HF_TOKEN": {"secret": "hf-token", "key": "token"}, "PLAIN": "1"}
  },
  "storage": {"path": "tune.db"}
})";

TEST_CASE("trial env: a Secret reference on the local backend is the tuner's own variable, stored nowhere",
          "[spec][cli]") {
  TempDir dir;
  std::ofstream(dir.path / "exp.json") << kExperiment;
  const std::string secret = "hf_s3cret_Zq7";  // 13 bytes
  Run run = Tune(dir.path, {{"HF_TOKEN", secret}}, "run exp.json --quiet");
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  Run best = Tune(dir.path, {}, "best --db tune.db --format json");
  INFO(best.err);
  REQUIRE(best.exit_code == 0);
  CHECK(best.out.find("\"value\": 13") != std::string::npos);  // the trial saw the value
  // Neither the database nor a log nor anything printed holds it.
  CHECK(AllFiles(dir.path).find(secret) == std::string::npos);
  CHECK((run.out + run.err + best.out + best.err).find(secret) == std::string::npos);
}

TEST_CASE("trial env: without the tuner's variable, validate and run refuse before anything starts",
          "[spec][cli]") {
  TempDir dir;
  std::ofstream(dir.path / "exp.json") << kExperiment;
  const std::string why =
      "tune: exp.json: trial.env.HF_TOKEN: the local backend takes the value of Secret \"hf-token\" (key "
      "\"token\") from the tuner's own environment variable HF_TOKEN, which is not set (export it before tune "
      "run)\n";
  Run validate = Tune(dir.path, {}, "validate exp.json");
  CHECK(validate.exit_code == 2);
  CHECK(validate.err == why);
  Run run = Tune(dir.path, {}, "run exp.json --quiet");
  CHECK(run.exit_code == 2);
  CHECK(run.err == why);
  CHECK_FALSE(fs::exists(dir.path / "tune.db"));  // nothing started, nothing left behind
  CHECK_FALSE(fs::exists(dir.path / "tune_runs"));
  // An empty value is a value.
  CHECK(Tune(dir.path, {{"HF_TOKEN", ""}}, "validate exp.json").exit_code == 0);
}

}  // namespace
