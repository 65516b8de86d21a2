// Every example experiment under experiments/ is a valid spec.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>

#include "spec/experiment_spec.h"

namespace tune {
namespace {

namespace fs = std::filesystem;

TEST_CASE("spec: every experiments/*.json parses", "[spec]") {
  fs::path dir = fs::path(TUNE_SOURCE_DIR) / "experiments";
  std::set<std::string> names;
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    auto spec = LoadExperimentSpec(entry.path().string());
    INFO(entry.path().filename().string() << ": " << spec.status().message());
    REQUIRE(spec.ok());
    CHECK(spec->base_dir == dir.lexically_normal().string());
    CHECK_FALSE(spec->trial.command.empty());
    // Each example is its own experiment.
    CHECK(names.insert(spec->name).second);
  }
  CHECK(count >= 5);
}

TEST_CASE("spec: the grid example enumerates its whole grid by default", "[spec]") {
  auto spec = LoadExperimentSpec(std::string(TUNE_SOURCE_DIR) + "/experiments/synthetic-grid.json");
  INFO(spec.status().message());
  REQUIRE(spec.ok());
  CHECK(spec->search.algorithm == "grid");
  // learning_rate 3 x lora_r {8, 16, 24, 32} x optimizer 2.
  CHECK(spec->limits.max_trials == 24);
}

}  // namespace
}  // namespace tune
