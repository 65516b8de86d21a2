// SIGKILL and --resume on PostgreSQL (tests/e2e/reliability_test.cc's
// guarantee, on the other engine): `tune run --db postgresql://...` killed
// at random moments and resumed ends with the same trials as a run that was
// never killed, compared through `tune trials --format json` (every field
// that does not depend on timing). Once with one objective (TPE + ASHA),
// once with two objectives and a constraint (trial_values). The server is a
// throwaway one (tests/storage/postgres_server.h); without one the cases
// are skipped with a warning.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "storage/postgres_storage.h"
#include "tests/common/in_dir.h"
#include "tests/e2e/e2e_util.h"
#include "tests/storage/storage_under_test.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;
using tune::testing::InDir;
using tune::testing::PostgresServer;

PostgresServer& Server() { return tune::testing::SharedPostgresServer(); }

// A new empty database's URL, or "" (skipped, with a warning).
std::string NewDatabase(const std::string& name) { return tune::testing::NewPostgresDatabase(name); }

// TPE + ASHA, one trial at a time, a deterministic trial program: every
// decision depends only on the history (as reliability_test.cc's KillSpec).
// With `multi`: two objectives, ASHA on the first, and a constraint.
json KillSpec(const std::string& name, int marker, bool multi) {
  json spec = {
      {"name", name},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-5}, {"high", 1e-1}}},
        {"lora_r", {{"type", "choice"}, {"values", {4, 8, 16, 32, 64}}}},
        {"dropout", {{"type", "quniform"}, {"low", 0.0}, {"high", 0.4}, {"q", 0.05}}}}},
      {"search", {{"algorithm", "tpe"}, {"seed", 3}, {"n_startup_trials", 4}}},
      {"scheduler", {{"type", "asha"}, {"max_t", 27}, {"grace_period", 3}, {"reduction_factor", 3}}},
      {"limits", {{"max_trials", 10}, {"max_concurrent_trials", 1}}},
      {"trial",
       {{"command",
         {kBin + "/synthetic_trial", "--lr", "${lr}", "--lora-r", "${lora_r}", "--dropout", "${dropout}", "--steps",
          "30", "--report-every", "1", "--sleep-ms", "8", "--seed", std::to_string(marker), "--costs"}}}},
  };
  if (multi) {
    spec["objective"] =
        json::array({{{"metric", "eval_loss"}, {"mode", "min"}}, {{"metric", "adapter_mb"}, {"mode", "min"}}});
    spec["scheduler"]["metric"] = "eval_loss";
    spec["constraints"] = {{{"metric", "peak_mem_gb"}, {"max", 10}}};
  }
  return spec;
}

// `tune trials --format json` without what depends on timing: when each
// trial ran, for how long, where, its attempts (the kills interrupt some)
// and the messages of interrupted attempts.
json Trials(const std::string& url, const std::string& name) {
  Output o = Sh(Tune("trials --db " + Quote(url) + " --experiment " + name + " --format json"));
  INFO(o.out);
  REQUIRE(o.code == 0);
  json rows = json::parse(o.out);
  for (json& r : rows) {
    for (const char* key : {"trial_id", "started_at", "ended_at", "duration_s", "location", "attempts",
                            "failed_attempts", "message"}) {
      REQUIRE(r.contains(key));
      r.erase(key);
    }
  }
  return rows;
}

// An uninterrupted run into one database; `kills` SIGKILLed --resume runs
// (seeded moments over a third of the uninterrupted run's time) and a last
// --resume into another: the same trials.
void CheckKilledEqualsNeverKilled(const fs::path& dir, int marker, int kills, bool multi) {
  const std::string name = multi ? "pg-killed-multi" : "pg-killed";
  const std::string full = NewDatabase(std::string("tune_") + (multi ? "multi" : "single") + "_full");
  if (full.empty()) return;
  const std::string cut = NewDatabase(std::string("tune_") + (multi ? "multi" : "single") + "_cut");
  fs::path spec = Write(dir, KillSpec(name, marker, multi));
  fs::create_directories(dir / "full");
  fs::create_directories(dir / "cut");

  const auto t0 = std::chrono::steady_clock::now();
  {
    InDir in(dir / "full");
    Output once = Sh(Tune("run " + Quote(spec) + " --db " + Quote(full) + " --quiet"));
    INFO(once.out);
    REQUIRE(once.code == 0);
  }
  const double full_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  InDir in(dir / "cut");
  const fs::path log = dir / (name + ".log");
  KillResumedRuns(spec, cut, log, kills, 20261128u + (multi ? 1u : 0u), std::max(0.3, full_s / 3));
  INFO(Slurp(log));
  CHECK(NoProcessLeft(std::to_string(marker)));
  const std::string db_name = cut.substr(cut.rfind('/') + 1);
  WARN("after " << kills << " kills: interrupted attempts, trials begun: "
                << Server().Psql(db_name, "SELECT sum(attempt) || ' ' || count(*) FROM trials WHERE state <> 'pending'")
                << " (uninterrupted run " << full_s << " s)");
  // A killed tuner's advisory lock went with its session: the last --resume
  // may have to wait for the server to notice (as postgres_e2e_test does).
  Output last;
  for (int i = 0; i < 20; ++i) {
    last = Sh(Tune("run " + Quote(spec) + " --db " + Quote(cut) + " --resume --quiet"));
    if (last.out.find("is being run by another") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  INFO(last.out);
  REQUIRE(last.code == 0);
  const json a = Trials(full, name), b = Trials(cut, name);
  CHECK(a.size() == 10);
  CHECK(b.dump(1) == a.dump(1));
  if (multi) {
    int with_values = 0;
    for (const json& r : b) {
      if (r["state"] != "completed") continue;
      ++with_values;
      CHECK(r["values"].size() == 2);
      CHECK(r["constraints"].size() == 1);
    }
    CHECK(with_values > 0);
  }
  CHECK(NoProcessLeft(std::to_string(marker)));
}

}  // namespace

TEST_CASE("PostgreSQL: killed = never killed, SIGKILL at 8 random moments, --resume, the same trials",
          "[e2e][reliability][postgres]") {
  TempDir dir;
  CheckKilledEqualsNeverKilled(dir.path, 828281, 8, false);
}

TEST_CASE("PostgreSQL: killed = never killed with two objectives and a constraint, their values the same",
          "[e2e][reliability][postgres]") {
  TempDir dir;
  CheckKilledEqualsNeverKilled(dir.path, 828282, 6, true);
}
