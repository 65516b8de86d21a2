// `tune validate` end to end: the real binary on real files, its exit status
// (SPEC section 1: 0 ok, 2 invalid input) and its one-sentence error.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Run {
  int exit_code = -1;
  std::string out, err;
};

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `tune validate <file>` with stdout and stderr captured in files.
Run Validate(const fs::path& dir, const std::string& file) {
  fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  std::string cmd = "'" + std::string(TUNE_BIN_DIR) + "/tune' validate '" + file + "' >'" +
                    out.string() + "' 2>'" + err.string() + "'";
  int status = std::system(cmd.c_str());
  Run r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadAll(out);
  r.err = ReadAll(err);
  return r;
}

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() / ("tune-validate-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST_CASE("spec: tune validate accepts every example experiment", "[spec][cli]") {
  fs::path tmp = TempDir();
  int count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TUNE_SOURCE_DIR) / "experiments")) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    Run r = Validate(tmp, entry.path().string());
    INFO(entry.path().string() << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
  }
  CHECK(count > 0);
  fs::remove_all(tmp);
}

TEST_CASE("spec: tune validate shows the TPE mode and estimator rules", "[spec][cli]") {
  fs::path tmp = TempDir();
  Run r = Validate(tmp, (fs::path(TUNE_SOURCE_DIR) / "experiments" / "default.json").string());
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("search      tpe (univariate, parzen_rules optuna5), seed 7") != std::string::npos);
  // Every setting that decides the run, defaults included.
  CHECK(r.out.find("scheduler   asha (time_attr step, max_t ") != std::string::npos);
  CHECK(r.out.find(", reduction_factor 3, brackets ") != std::string::npos);
  CHECK(r.out.find("  backend     local\n") != std::string::npos);
  fs::path file = tmp / "multivariate.json";
  std::ofstream(file) << R"({"name": "x", "objective": {"metric": "m", "mode": "min"},
      "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}},
      "search": {"algorithm": "tpe", "multivariate": true, "parzen_rules": "optuna3"},
      "trial": {"command": ["p"]}})";
  r = Validate(tmp, file.string());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("search      tpe (multivariate, parzen_rules optuna3)") != std::string::npos);
  fs::remove_all(tmp);
}

TEST_CASE("spec: tune validate rejects a bad spec with exit 2 and one sentence", "[spec][cli]") {
  fs::path tmp = TempDir();
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
       "limit: expected one of the keys \"name\", \"objective\", \"parameters\", \"search\", "
       "\"scheduler\", \"limits\", \"trial\", \"backend\" or \"storage\", got the unknown key "
       "\"limit\" (did you mean \"limits\"?)"},
      {"{\"name\": \"x\",\n}", "line 2, column 1: expected valid JSON (string literal), got unexpected '}'"},
  };
  int n = 0;
  for (const Case& c : cases) {
    fs::path file = tmp / ("bad" + std::to_string(n++) + ".json");
    std::ofstream(file) << c.text;
    Run r = Validate(tmp, file.string());
    INFO(c.text << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    // One line that names the file and the JSON path (the CLI may prefix it).
    CHECK(r.err.find(file.string() + ": " + c.sentence + "\n") != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }

  Run missing = Validate(tmp, (tmp / "nope.json").string());
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find((tmp / "nope.json").string() + ": cannot read: No such file or directory\n") !=
        std::string::npos);
  fs::remove_all(tmp);
}

}  // namespace
