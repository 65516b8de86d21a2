// End to end: `tune run` with ASHA over real synthetic_trial processes.
// Pruned trials must really stop: the database records the rung, the trial's
// log ends between that rung and max_t, and no trial process outlives the
// tuner. Prints the SIGTERM latency each pruned trial noted (report line ->
// signal), for bench/RESULTS.md; no assertion on time.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST_CASE("tune run with ASHA: pruned trials stop at their rung and leave no process",
          "[e2e][asha]") {
  TempDir dir;
  // A seed no other test uses marks this test's trial processes.
  const std::string marker = std::to_string(910000000 + getpid());
  const json spec = {
      {"name", "asha-e2e"},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-5}, {"high", 1e-1}}},
        {"lora_r", {{"type", "choice"}, {"values", {4, 8, 16, 32}}}},
        {"dropout", {{"type", "uniform"}, {"low", 0.0}, {"high", 0.4}}}}},
      {"search", {{"algorithm", "random"}, {"seed", 3}}},
      {"scheduler",
       {{"type", "asha"}, {"time_attr", "step"}, {"max_t", 90}, {"grace_period", 10},
        {"reduction_factor", 3}, {"brackets", 1}}},
      {"limits", {{"max_trials", 12}, {"max_concurrent_trials", 2}}},
      {"trial",
       {{"command",
         {kBin + "/synthetic_trial", "--lr", "${lr}", "--lora-r", "${lora_r}", "--dropout",
          "${dropout}", "--steps", "90", "--report-every", "5", "--sleep-ms", "20", "--seed",
          marker}},
        {"timeout_s", 120}}},
  };
  const fs::path spec_path = dir.path / "asha-e2e.json";
  std::ofstream(spec_path) << spec.dump(2);
  const std::string db = (dir.path / "r.db").string();
  const std::string tune = Quote(kBin + "/tune");

  auto [code, out] =
      Sh("cd " + Quote(dir.path) + " && " + tune + " run " + Quote(spec_path) + " --db " +
         Quote(db) + " --quiet");
  INFO(out);
  REQUIRE(code == 0);
  CHECK(CountProcesses(marker) == 0);  // every process group is gone

  auto [tcode, tout] = Sh(tune + " trials --db " + Quote(db) + " --experiment asha-e2e --format json");
  INFO(tout);
  REQUIRE(tcode == 0);
  const json rows = json::parse(tout);
  REQUIRE(rows.size() == 12);
  const std::regex step_re(R"(step=(\d+) )");
  const std::regex term_re(R"(SIGTERM (\d+) us after the last report)");
  int pruned = 0, completed = 0;
  for (const auto& r : rows) {
    char name[32];
    std::snprintf(name, sizeof name, "trial_%04d", r["number"].get<int>());
    const std::string log = ReadFile(dir.path / "tune_runs" / "asha-e2e" / name / "rank_0.log");
    int64_t last_step = -1;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), step_re);
         it != std::sregex_iterator(); ++it) {
      last_step = std::stoll((*it)[1]);
    }
    INFO("trial " << r.dump() << "\nlog:\n" << log);
    if (r["state"] == "pruned") {
      ++pruned;
      REQUIRE(r["pruned_rung"].is_number_integer());
      const int64_t rung = r["pruned_rung"];
      CHECK((rung == 10 || rung == 30));
      // It reported at its rung, then stopped long before max_t.
      CHECK(last_step >= rung);
      CHECK(last_step < 90);
      std::smatch m;
      if (std::regex_search(log, m, term_re)) {
        std::printf("asha_e2e: trial %d pruned at rung %lld, last step %lld, SIGTERM %s us "
                    "after its last report\n",
                    r["number"].get<int>(), static_cast<long long>(rung),
                    static_cast<long long>(last_step), m[1].str().c_str());
      }
    } else {
      CHECK(r["state"] == "completed");
      CHECK(r["pruned_rung"].is_null());
      CHECK(last_step == 90);  // stopped by max_t only after its last report
      ++completed;
    }
  }
  CHECK(pruned >= 4);  // rf 3: about 2 of 3 trials stop at rung 10
  CHECK(completed >= 1);
}

}  // namespace
