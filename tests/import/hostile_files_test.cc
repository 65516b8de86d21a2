// Files made to crash or exhaust `tune`, given to the real binary as a user
// would: `tune import katib` (aliases inside what they name, an alias bomb,
// deep nesting, /dev/zero, a FIFO, a file over the cap) and `tune validate`
// (/dev/zero, a FIFO, a file over the cap). Each ends in exit 2 with one
// `tune: <file>: ...` line and writes nothing. Each command runs under
// `timeout`, so that a regression (a FIFO that blocks) fails instead of
// hanging the suite.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

// `tune ARGS` in `dir`; at most 120 s (exit 124 past that).
Run Tune(const TempDir& dir, const std::string& args) {
  return tune::testing::RunTune(args, {.cwd = dir.path, .timeout_s = 120});
}

// Katib's random.yaml with `volumes: <value>` in the pod spec (a subtree the
// importer copies whole) and `extra_top` before `spec:`.
std::string KatibWithVolumes(const std::string& value, const std::string& extra_top = "") {
  std::string d = ReadAll(std::string(TUNE_SOURCE_DIR) + "/tests/import/katib/random.yaml");
  const std::string pod_end = "            restartPolicy: Never\n";
  REQUIRE(d.find(pod_end) != std::string::npos);
  d.insert(d.find(pod_end) + pod_end.size(), "            volumes: " + value + "\n");
  d.insert(d.find("\nspec:\n") + 1, extra_top);
  return d;
}

// Exit 2, one line naming `file` that holds `what`, and no output file.
void CheckRefused(const TempDir& dir, const Run& r, const std::string& file, const std::string& what) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("tune: " + file + ": ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(what) != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "out.json"));
}

}  // namespace

TEST_CASE("hostile files: import katib refuses an alias inside the node it names", "[import][cli]") {
  // `volumes: &v [*v]` made the importer recurse until SIGSEGV.
  TempDir dir;
  std::ofstream(dir.path / "selfref.yaml") << KatibWithVolumes("&v [*v]");
  CheckRefused(dir, Tune(dir, "import katib selfref.yaml -o out.json"), "selfref.yaml",
               "line 58: spec.trialTemplate.trialSpec.spec.template.spec.volumes[0]: expected a value, got an alias "
               "to spec.trialTemplate.trialSpec.spec.template.spec.volumes, which holds it");
}

TEST_CASE("hostile files: import katib refuses a billion-laughs alias bomb", "[import][cli]") {
  // 9 levels of 9 aliases: 387 million nodes from about 1.2 KB, which grew
  // to 4 GB and ended in bad_alloc.
  TempDir dir;
  std::string top = "x-lol:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    top += "  a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 9; ++k) top += ", " + prev;
    top += "]\n";
  }
  std::ofstream(dir.path / "bomb.yaml") << KatibWithVolumes("*a9", top);
  CheckRefused(dir, Tune(dir, "import katib bomb.yaml -o out.json"), "bomb.yaml",
               "expected at most 100000 nodes with aliases expanded, got more");
}

TEST_CASE("hostile files: import katib refuses nesting past the limit", "[import][cli]") {
  TempDir dir;
  std::ofstream(dir.path / "deep.yaml") << KatibWithVolumes(std::string(100000, '[') + std::string(100000, ']'));
  CheckRefused(dir, Tune(dir, "import katib deep.yaml -o out.json"), "deep.yaml",
               "line 58: expected at most 100 levels of nesting, got more");
  std::ofstream(dir.path / "deep150.yaml") << KatibWithVolumes(std::string(150, '[') + std::string(150, ']'));
  CheckRefused(dir, Tune(dir, "import katib deep150.yaml -o out.json"), "deep150.yaml",
               "expected at most 100 levels of nesting with aliases expanded, got more");
}

TEST_CASE("hostile files: import katib refuses /dev/zero, a FIFO and a file over 1 MiB", "[import][cli]") {
  TempDir dir;
  // /dev/zero was read until bad_alloc; a FIFO blocked forever.
  CheckRefused(dir, Tune(dir, "import katib /dev/zero -o out.json"), "/dev/zero",
               "expected a regular file, got a character device");
  REQUIRE(::mkfifo((dir.path / "exp.fifo").c_str(), 0600) == 0);
  CheckRefused(dir, Tune(dir, "import katib exp.fifo -o out.json"), "exp.fifo", "expected a regular file, got a FIFO");
  // A valid experiment, padded with a comment past the cap: it used to be
  // converted.
  std::string big = KatibWithVolumes("[]") + "# " + std::string(1 << 20, 'x') + "\n";
  std::ofstream(dir.path / "big.yaml") << big;
  CheckRefused(dir, Tune(dir, "import katib big.yaml -o out.json"), "big.yaml",
               "expected a file of at most 1 MiB (1048576 bytes), got " + std::to_string(big.size()) + " bytes");
}

TEST_CASE("hostile files: validate refuses /dev/zero, a FIFO and an experiment.json over 4 MiB", "[spec][cli]") {
  TempDir dir;
  // /dev/zero ended in bad_alloc (exit 134); a FIFO blocked forever.
  CheckRefused(dir, Tune(dir, "validate /dev/zero"), "/dev/zero", "expected a regular file, got a character device");
  REQUIRE(::mkfifo((dir.path / "exp.fifo").c_str(), 0600) == 0);
  CheckRefused(dir, Tune(dir, "validate exp.fifo"), "exp.fifo", "expected a regular file, got a FIFO");
  std::string big = R"({"name": "big", "pad": ")" + std::string(4 << 20, 'x') + "\"}\n";
  std::ofstream(dir.path / "big.json") << big;
  CheckRefused(dir, Tune(dir, "validate big.json"), "big.json",
               "expected a file of at most 4 MiB (4194304 bytes), got " + std::to_string(big.size()) + " bytes");
}
