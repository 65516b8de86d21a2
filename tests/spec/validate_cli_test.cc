// `tune validate` end to end: the real binary on real files, its exit status
// (docs/architecture.md, section 5: 0 ok, 2 invalid input) and its one-sentence error.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/common/run_tune.h"
#include "tests/common/temp_dir.h"

namespace {

namespace fs = std::filesystem;

using Run = tune::testing::TuneRun;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `tune validate <file>`, with the build's programs (synthetic_trial,
// lora_train) on PATH, as a user who installed them has.
Run Validate(const std::string& file) {
  return tune::testing::RunTune("validate " + tune::testing::Quote(file), {.bin_on_path = true});
}

using tune::testing::TempDir;

// lora_train is built only with libtorch (TUNE_WITH_TORCH).
bool LoraTrainBuilt() { return fs::exists(fs::path(TUNE_BIN_DIR) / "lora_train"); }

TEST_CASE("spec: tune validate accepts every example experiment", "[spec][cli]") {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TUNE_SOURCE_DIR) / "experiments")) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    Run r = Validate(entry.path().string());
    INFO(entry.path().string() << "\nstdout: " << r.out << "\nstderr: " << r.err);
    std::string text = ReadAll(entry.path());
#ifndef TUNE_HAVE_K8S
    if (text.find("\"kubernetes\"") != std::string::npos) {  // built without k8s/
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("backend.type: 'kubernetes' is not available in this build") != std::string::npos);
      continue;
    }
#endif
    bool local_lora = text.find("\"lora_train\"") != std::string::npos &&
                      text.find("\"kubernetes\"") == std::string::npos;
    if (local_lora && !LoraTrainBuilt()) {
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("trial.command[0]: expected a program on PATH") != std::string::npos);
      continue;
    }
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
  }
  CHECK(count > 0);
}

TEST_CASE("spec: tune validate shows the TPE mode and estimator rules", "[spec][cli]") {
  const TempDir scratch;
  const fs::path& tmp = scratch.path;
  fs::path default_json = fs::path(TUNE_SOURCE_DIR) / "experiments" / "default.json";
  if (!LoraTrainBuilt()) {  // the same spec with a program that is there
    std::string text = ReadAll(default_json);
    text.replace(text.find("\"lora_train\""), 12, "\"true\"");
    default_json = tmp / "default.json";
    std::ofstream(default_json) << text;
  }
  Run r = Validate(default_json.string());
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("search      tpe (multivariate, parzen_rules optuna5), seed 7") != std::string::npos);
  // Every setting that decides the run, defaults included.
  CHECK(r.out.find("scheduler   asha (time_attr step, max_t ") != std::string::npos);
  CHECK(r.out.find(", reduction_factor 3, brackets ") != std::string::npos);
  CHECK(r.out.find("  backend     local\n") != std::string::npos);
  fs::path file = tmp / "multivariate.json";
  std::ofstream(file) << R"({"name": "x", "objective": {"metric": "m", "mode": "min"},
      "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}},
      "search": {"algorithm": "tpe", "multivariate": true, "parzen_rules": "optuna3",
                 "points_to_evaluate": [{"lr": 0.5}, {}]},
      "trial": {"command": ["true"]}})";
  r = Validate(file.string());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("search      tpe (multivariate, parzen_rules optuna3)\n"
                   "              trial 0 tries lr=0.5\n"
                   "              trial 1 tries what is sampled\n") != std::string::npos);
  fs::remove_all(tmp);
}

TEST_CASE("spec: tune validate shows where ASHA checks trials, bracket by bracket", "[spec][cli]") {
  const TempDir scratch;
  const fs::path& tmp = scratch.path;
  auto validate = [&](const std::string& scheduler) {
    fs::path file = tmp / "asha.json";
    std::ofstream(file) << R"({"name": "x", "objective": {"metric": "m", "mode": "min"},
        "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}},
        "scheduler": )" << scheduler << R"(, "trial": {"command": ["true"]}})";
    Run r = Validate(file.string());
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  std::string out = validate(R"({"type": "asha", "max_t": 100, "grace_period": 10, "reduction_factor": 3})");
  CHECK(out.find("\n              rungs at step 10, 30, 90, then max_t 100\n") != std::string::npos);
  // Ray's bracket shares: softmax of the rung counts (5, 4, 3, 2, 1).
  out = validate(R"({"type": "asha", "max_t": 81, "grace_period": 1, "reduction_factor": 3, "brackets": 5})");
  CHECK(out.find("bracket 0 (63.6% of trials): rungs at step 1, 3, 9, 27, then max_t 81\n") != std::string::npos);
  CHECK(out.find("bracket 3 (3.2% of trials): rungs at step 27, then max_t 81\n") != std::string::npos);
  CHECK(out.find("bracket 4 (1.2% of trials): no rung below max_t 81: its trials always run to max_t\n") !=
        std::string::npos);
  // A grace period at max_t leaves ASHA nothing to do: said before the run.
  out = validate(R"({"type": "asha", "max_t": 50, "grace_period": 50})");
  CHECK(out.find("no rung below max_t 50: no trial is ever stopped early\n") != std::string::npos);
  // Other schedulers get no rung lines.
  CHECK(validate(R"({"type": "median"})").find("rung") == std::string::npos);
  fs::remove_all(tmp);
}

TEST_CASE("spec: tune validate shows PBT's keys and the mutated parameters", "[spec][cli]") {
  const TempDir scratch;
  const fs::path file = scratch.path / "pbt.json";
  std::ofstream(file) << R"({"name": "x", "objective": {"metric": "m", "mode": "max"},
      "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-1},
                     "r": {"type": "choice", "values": [4, 8]}},
      "limits": {"max_trials": 8, "max_concurrent_trials": 4},
      "scheduler": {"type": "pbt", "max_t": 300, "synch": true, "hyperparam_mutations": ["lr"]},
      "trial": {"command": ["true", "--lora-r", "${r}"]}})";
  Run r = Validate(file.string());
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("scheduler   pbt (time_attr step, max_t 300, perturbation_interval 20, burn_in_period 0, "
                   "quantile_fraction 0.25, resample_probability 0.25, perturbation_factors [1.2, 0.8], "
                   "synchronous, population 8)\n") != std::string::npos);
  CHECK(r.out.find("\n              mutates lr in loguniform(1e-05, 0.1)\n") != std::string::npos);
  CHECK(r.out.find("mutates r") == std::string::npos);
}

TEST_CASE("spec: tune validate rejects a bad spec with exit 2 and one sentence", "[spec][cli]") {
  const TempDir scratch;
  const fs::path& tmp = scratch.path;
  struct Case {
    const char* text;
    const char* sentence;  // after "<file>: "
  };
  const Case cases[] = {
      {R"({"name": "x", "objective": {"metric": "m", "mode": "min"},
           "parameters": {"lr": {"type": "loguniform", "low": 0.5, "high": 0.01}},
           "trial": {"command": ["p"]}})",
       "parameters.lr.low: expected a number below high (0.01), got 0.5"},
      {R"({"name": "x", "objective": {"metric": "m", "mode": "min"},
           "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}},
           "trial": {"command": []}})",
       "trial.command: expected a non-empty array of strings (argv, no shell), got []"},
      {R"({"name": "x", "objective": {"metric": "m", "mode": "min"}, "limit": {},
           "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}},
           "trial": {"command": ["p"]}})",
       "limit: expected one of the keys \"name\", \"objective\", \"constraints\", \"parameters\", \"search\", "
       "\"scheduler\", \"limits\", \"trial\", \"backend\", \"tracking\" or \"storage\", got the unknown key "
       "\"limit\" (did you mean \"limits\"?)"},
      {"{\"name\": \"x\",\n}", "line 2, column 1: expected valid JSON (string literal), got unexpected '}'"},
  };
  int n = 0;
  for (const Case& c : cases) {
    fs::path file = tmp / ("bad" + std::to_string(n++) + ".json");
    std::ofstream(file) << c.text;
    Run r = Validate(file.string());
    INFO(c.text << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    // One line that names the file and the JSON path (the CLI may prefix it).
    CHECK(r.err.find(file.string() + ": " + c.sentence + "\n") != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }

  // A trial program that is not there would fail every trial; a relative
  // path is looked up from trial.working_dir (here the file's directory).
  const char* no_program = R"({"name": "x", "objective": {"metric": "m", "mode": "min"},
      "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}},
      "trial": {"command": ["%s", "${lr}"]}})";
  for (const std::string program : {"no_such_program_xyz", "./bin/trial.sh"}) {
    fs::path file = tmp / "no_program.json";
    char text[512];
    std::snprintf(text, sizeof text, no_program, program.c_str());
    std::ofstream(file) << text;
    Run r = Validate(file.string());
    INFO(program << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(file.string() + ": trial.command[0]: expected a program on PATH or the path of an "
                     "executable file (relative paths start at trial.working_dir), got \"" + program + "\"") !=
          std::string::npos);
  }
  fs::create_directories(tmp / "bin");
  std::ofstream(tmp / "bin" / "trial.sh") << "#!/bin/sh\necho m=1\n";
  fs::permissions(tmp / "bin" / "trial.sh", fs::perms::owner_all);
  Run found = Validate((tmp / "no_program.json").string());
  INFO("stderr: " << found.err);
  CHECK(found.exit_code == 0);

  Run missing = Validate((tmp / "nope.json").string());
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find((tmp / "nope.json").string() + ": cannot read: No such file or directory\n") !=
        std::string::npos);
  fs::remove_all(tmp);
}

TEST_CASE("spec: tune validate names the GPUs and how many trials fit at once", "[spec][cli]") {
  const TempDir scratch;
  const fs::path& tmp = scratch.path;
  auto validate = [&](const std::string& resources, const std::string& backend) {
    fs::path file = tmp / "gpus.json";
    std::ofstream(file) << R"({"name": "x", "objective": {"metric": "m", "mode": "min"},
        "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}},
        "limits": {"max_concurrent_trials": 4},
        "trial": {"command": ["true"], "workers": 1, "resources_per_worker": )" << resources << R"(},
        "backend": )" << backend << "}";
    Run r = Validate(file.string());
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  // Three GPUs from backend.gpus, one per trial: 3 of 4 run at once.
  std::string out = validate(R"({"cpu": 0.5, "gpu": 1})", R"({"type": "local", "gpus": ["0", "2", "5"],
                                                              "cpus": 16})");
  CHECK(out.find("\n  GPUs        3 (0, 2, 5), from backend.gpus\n") != std::string::npos);
  CHECK(out.find("\n  capacity    3 trials at once: each takes 1 worker(s) x 0.5 CPU slot(s) and 1 GPU(s) of 16 "
                 "CPU slots and 3 GPUs; max_concurrent_trials 4 (3 run, the rest wait)\n") != std::string::npos);
  // Two GPUs per trial: one at a time.
  out = validate(R"({"cpu": 1, "gpu": 2})", R"({"type": "local", "gpus": ["0", "2", "5"], "cpus": 16})");
  CHECK(out.find("\n  capacity    1 trial at once: ") != std::string::npos);
  // CPU slots bound: 16 / 8.
  out = validate(R"({"cpu": 8})", R"({"type": "local", "cpus": 16})");
  CHECK(out.find("\n  capacity    2 trials at once: each takes 1 worker(s) x 8 CPU slot(s) of 16 CPU slots") !=
        std::string::npos);
  // What this machine has (nvidia-smi's list, none here without a GPU).
  CHECK(out.find("\n  GPUs        ") != std::string::npos);
}

}  // namespace
