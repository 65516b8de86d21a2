// The plain-PyTorch example (experiments/torch_loop/train.py, through
// python/tune_trial) tuned by the real `tune` binary: ASHA prunes trials
// that then stop by themselves on SIGTERM (tune_trial.should_stop) within
// trial.stop_grace_s, leaving no process; a trial killed mid-run is retried
// and continues from its checkpoint-<step> folder, not from step 0.
//
// It needs a python3 that imports torch (Debian's python3-torch,
// scripts/install-deps.sh --test); without one it warns and checks nothing.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;

const std::string kSource = TUNE_SOURCE_DIR;

// A python3 with torch, or "" (Debian's interpreter first: python3-torch
// installs there, and `python3` on PATH may be another one).
std::string TorchPython() {
  for (const char* py : {"/usr/bin/python3", "python3"}) {
    if (Sh(std::string(py) + " -c 'import torch'").code == 0) return py;
  }
  return "";
}

// The test's harness around train.py, unchanged: it sleeps TEST_SLEEP_S
// after every report (so that a decision arrives mid-run), and the trial
// and step of TEST_CRASH ("trial:step") SIGKILL their own process right
// after that report, unless the attempt continues from a checkpoint.
const char* kHarness = R"(import os, runpy, signal, sys, time
import tune_trial
real_report = tune_trial.report
def report(step, **metrics):
    real_report(step, **metrics)
    time.sleep(float(os.environ["TEST_SLEEP_S"]))
    crash = os.environ.get("TEST_CRASH", "")
    if crash and tune_trial.resume_from() is None:
        trial, at = crash.split(":")
        if tune_trial.trial_id() == int(trial) and step == int(at):
            os.kill(os.getpid(), signal.SIGKILL)
tune_trial.report = report
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
)";

// experiments/torch-loop.json, run through the harness in `dir`.
json Spec(const TempDir& dir, const std::string& python, const std::string& name, double sleep_s,
          const std::string& crash) {
  json spec = json::parse(Slurp(kSource + "/experiments/torch-loop.json"));
  std::ofstream(dir.File("harness.py")) << kHarness;
  spec["name"] = name;
  spec["trial"]["command"] = {python, dir.File("harness.py"), kSource + "/experiments/torch_loop/train.py"};
  spec["trial"]["env"]["PYTHONPATH"] = kSource + "/python";
  spec["trial"]["env"]["TEST_SLEEP_S"] = std::to_string(sleep_s);
  spec["trial"]["env"]["TEST_CRASH"] = crash;
  spec["trial"]["resources_per_worker"] = {{"cpu", 0.5}};
  spec.erase("storage");
  return spec;
}

std::string Sql(const std::string& db, const std::string& sql) {
  Output o = Sh("sqlite3 " + Quote(db) + " " + Quote(sql));
  REQUIRE(o.code == 0);
  return o.out;
}

fs::path RankLog(const TempDir& dir, const std::string& experiment, int number) {
  char trial[32];
  std::snprintf(trial, sizeof trial, "trial_%04d", number);
  return dir.path / "tune_runs" / experiment / trial / "rank_0.log";
}

TEST_CASE("the PyTorch loop under ASHA: pruned trials stop by themselves on SIGTERM", "[e2e][python]") {
  const std::string python = TorchPython();
  if (python.empty()) {
    WARN("no python3 with torch (scripts/install-deps.sh --test installs python3-torch): not run");
    return;
  }
  TempDir dir("torch_loop");
  const std::string db = dir.File("tune.db");
  fs::path spec = Write(dir.path, Spec(dir, python, "torch-asha", 0.05, ""));
  Output run = Sh(Tune("run " + Quote(spec.string()) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  CHECK(NoProcessLeft(dir.path.string()));

  std::string rows = Sql(db, "SELECT number || ' ' || state FROM trials ORDER BY number");
  INFO(rows);
  int pruned = 0, completed = 0;
  std::istringstream lines(rows);
  for (std::string line; std::getline(lines, line);) {
    int number = std::stoi(line);
    std::string state = line.substr(line.find(' ') + 1);
    std::string log = Slurp(RankLog(dir, "torch-asha", number));
    INFO("trial " << number << " " << state << "\n" << log);
    CHECK(log.find("Traceback") == std::string::npos);
    if (state == "pruned") {
      ++pruned;
      // The loop saw should_stop() and left by itself (tune's SIGKILL after
      // trial.stop_grace_s = 10 s would leave no such line), before step 60.
      CHECK(log.find("stopping at step") != std::string::npos);
      CHECK(log.find("step=60 ") == std::string::npos);
    } else {
      CHECK(state == "completed");
      ++completed;
      CHECK(log.find("step=60 loss=") != std::string::npos);
      CHECK(fs::is_directory(RankLog(dir, "torch-asha", number).parent_path() / "checkpoint-60"));
    }
  }
  CHECK(pruned + completed == 8);
  CHECK(pruned >= 2);
  CHECK(completed >= 1);
  // Nobody's process was killed: every attempt ended by itself (no retries).
  CHECK(Sql(db, "SELECT COUNT(*) FROM trials WHERE attempt > 0 OR failed_attempts > 0") == "0\n");
}

TEST_CASE("the PyTorch loop killed at step 25 is retried from checkpoint-20, not from step 0", "[e2e][python]") {
  const std::string python = TorchPython();
  if (python.empty()) {
    WARN("no python3 with torch (scripts/install-deps.sh --test installs python3-torch): not run");
    return;
  }
  TempDir dir("torch_loop");
  const std::string db = dir.File("tune.db");
  json s = Spec(dir, python, "torch-retry", 0.01, "0:25");
  s.erase("scheduler");
  s["limits"] = {{"max_trials", 1}};
  fs::path spec = Write(dir.path, s);
  Output run = Sh(Tune("run " + Quote(spec.string()) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  CHECK(NoProcessLeft(dir.path.string()));

  std::string log = Slurp(RankLog(dir, "torch-retry", 0));
  INFO(log);
  CHECK(Sql(db, "SELECT state, attempt, last_step FROM trials") == "completed|1|60\n");
  // The first attempt got to step 25; the second starts after checkpoint-20.
  size_t second = log.find("resumed from step 20");
  REQUIRE(second != std::string::npos);
  CHECK(log.find("step=25 loss=") < second);
  CHECK(log.find("step=26 loss=") > second);  // npos when absent
  std::string after = log.substr(second);
  CHECK(after.find("step=21 loss=") != std::string::npos);
  CHECK(after.find("step=1 loss=") == std::string::npos);
  CHECK(after.find("step=20 loss=") == std::string::npos);
  CHECK(after.find("step=60 loss=") != std::string::npos);
  // The trial's counted curve is whole: steps 1 to 20 carried from the first
  // attempt, 21 to 60 from the second, each once.
  CHECK(Sql(db,
            "SELECT COUNT(*), COUNT(DISTINCT r.step), MIN(r.step), MAX(r.step) FROM reports r "
            "JOIN trials t ON t.id = r.trial_id WHERE r.attempt = t.attempt AND r.excluded IS NULL") ==
        "60|60|1|60\n");
}

}  // namespace
