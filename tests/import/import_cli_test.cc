// `tune import katib` end to end: the real binary on Katib's examples, its
// exit status (docs/architecture.md, section 5: 0 ok, 2 invalid input), its notes on stderr,
// the file it writes, and `tune validate` on that file.
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/run_tune.h"
#include "tests/common/temp_dir.h"

namespace {

namespace fs = std::filesystem;

using Run = tune::testing::TuneRun;
using tune::testing::TempDir;

// `tune ARGS` in `dir`.
Run Tune(const TempDir& dir, const std::string& args) { return tune::testing::RunTune(args, {.cwd = dir.path}); }

std::string Example(const std::string& name) {
  return "'" + std::string(TUNE_SOURCE_DIR) + "/tests/import/katib/" + name + "'";
}

}  // namespace

TEST_CASE("import cli: every Katib example converts or fails with its reason", "[import][cli]") {
  TempDir dir;
  // Converted and accepted by tune validate.
  for (const char* name : {"random.yaml", "tpe.yaml", "multivariate-tpe.yaml", "grid.yaml", "optuna-distribution.yaml",
                           "median-stop.yaml", "bayesian-optimization.yaml", "simple-pbt.yaml"}) {
    INFO(name);
    Run r = Tune(dir, "import katib " + Example(name) + " -o exp.json");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.find("tune: wrote exp.json") != std::string::npos);
    Run v = Tune(dir, "validate exp.json");
    INFO(v.err);
    CHECK(v.exit_code == 0);
    fs::remove(dir.path / "exp.json");
  }
  // Algorithms tune does not have: exit 2, one line, nothing written.
  for (const char* name : {"cma-es.yaml", "hyperband.yaml", "sobol.yaml"}) {
    INFO(name);
    Run r = Tune(dir, "import katib " + Example(name) + " -o exp.json");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("spec.algorithm.algorithmName: expected random, tpe, multivariate-tpe, bayesianoptimization, grid or pbt") !=
          std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(dir.path / "exp.json"));
  }
}

#ifdef TUNE_HAVE_K8S
TEST_CASE("import cli: a converted Job experiment renders its trial manifests", "[import][cli]") {
  TempDir dir;
  REQUIRE(Tune(dir, "import katib " + Example("random.yaml") + " -o random.json").exit_code == 0);
  Run r = Tune(dir, "render random.json --trial 1");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"image\": \"ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest\"") != std::string::npos);
  CHECK(r.out.find("\"--lr=0.0") != std::string::npos);  // ${lr} sampled in [0.01, 0.05]
  CHECK(r.out.find("\"memory\": \"1Gi\"") != std::string::npos);
}
#endif

#ifdef TUNE_HAVE_K8S
TEST_CASE("import cli: Katib's pytorchjob-mnist becomes a pytorchjob experiment that tune render accepts",
          "[import][cli]") {
  TempDir dir;
  Run mnist = Tune(dir, "import katib " + Example("pytorchjob-mnist.yaml") + " -o mnist.json");
  INFO(mnist.err);
  REQUIRE(mnist.exit_code == 0);
  CHECK(Tune(dir, "validate mnist.json").exit_code == 0);
  Run r = Tune(dir, "render mnist.json --trial 0");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"kind\": \"PyTorchJob\"") != std::string::npos);
  CHECK(r.out.find("\"Master\": {") != std::string::npos);
  CHECK(r.out.find("\"Worker\": {") != std::string::npos);
  CHECK(r.out.find("\"name\": \"pytorch\"") != std::string::npos);
  CHECK(r.out.find("\"cleanPodPolicy\": \"None\"") != std::string::npos);
}
#endif

TEST_CASE("import cli: stdout without -o, notes on stderr", "[import][cli]") {
  TempDir dir;
  Run r = Tune(dir, "import katib " + Example("median-stop.yaml"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("{\n  \"name\": \"median-stop\",", 0) == 0);
  CHECK(r.out.find("\"type\": \"median\"") != std::string::npos);
  CHECK(r.err.find("median-stop.yaml: spec.trialTemplate.retain: not carried over") != std::string::npos);
  // Written as given, the output is an experiment tune validates.
  std::ofstream(dir.path / "piped.json") << r.out;
  CHECK(Tune(dir, "validate piped.json").exit_code == 0);
}

TEST_CASE("import cli: unreadable and malformed files exit 2", "[import][cli]") {
  TempDir dir;
  Run missing = Tune(dir, "import katib nowhere.yaml");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err == "tune: nowhere.yaml: cannot read: No such file or directory\n");
  std::ofstream(dir.path / "bad.yaml") << "apiVersion: kubeflow.org/v1beta1\nkind: Experiment\nspec: {a: [1, 2}\n";
  Run bad = Tune(dir, "import katib bad.yaml -o out.json");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.rfind("tune: bad.yaml: line 3, column ", 0) == 0);
  CHECK(bad.err.find("expected valid YAML") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "out.json"));
  CHECK(Tune(dir, "import").exit_code == 2);
}
