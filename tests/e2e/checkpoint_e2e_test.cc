// Checkpoint-aware trials and Population Based Training end to end: the real
// tune binary, real trial processes (experiments/pbt_toy_trial.cc, which
// saves checkpoint-<step> folders and continues from TUNE_RESUME_FROM),
// SIGKILL of `tune run` and --resume.
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;

// The toy (Ray's pbt_function, deterministic). Its processes are found by
// `marker`: --done-at is 1e9 + marker, a score the toy never reaches (so it
// runs to --max-steps, as with --done-at 0).
std::string Marker(int marker) { return std::to_string(1000000000 + marker); }

json ToySpec(const std::string& name, int population, int concurrent, int max_t, int sleep_ms, int marker) {
  return {
      {"name", name},
      {"objective", {{"metric", "score"}, {"mode", "max"}}},
      {"parameters",
       {{"lr", {{"type", "uniform"}, {"low", 0.0001}, {"high", 0.02}}},
        {"some_other_factor", {{"type", "choice"}, {"values", {1, 2}}}}}},
      {"search", {{"algorithm", "random"}, {"seed", 11}}},
      {"limits", {{"max_trials", population}, {"max_concurrent_trials", concurrent}}},
      {"trial",
       {{"command",
         {kBin + "/pbt_toy_trial", "--lr", "${lr}", "--some-other-factor", "${some_other_factor}", "--seed",
          "${trial_id}", "--max-steps", std::to_string(max_t), "--checkpoint-every", "5", "--sleep-ms",
          std::to_string(sleep_ms), "--done-at", Marker(marker),
          "--resume-from=${resume_from}"}},
        {"resources_per_worker", {{"cpu", 0.1}}},
        {"timeout_s", 120}}},
  };
}

json Pbt(json spec, int max_t, bool synch = false) {
  spec["scheduler"] = {{"type", "pbt"},         {"max_t", max_t},      {"perturbation_interval", 5},
                       {"synch", synch},        {"quantile_fraction", 0.25}};
  return spec;
}

std::string Sql(const std::string& db, const std::string& sql) {
  Output o = Sh("sqlite3 " + Quote(db) + " " + Quote(sql));
  REQUIRE(o.code == 0);
  return o.out;
}

// Every trial's counted curve, one "number step value" line per report.
std::string Curves(const std::string& db) {
  return Sql(db,
             "SELECT t.number, r.step, r.objective FROM reports r JOIN trials t ON t.id = r.trial_id "
             "WHERE r.attempt = t.attempt AND r.excluded IS NULL AND r.objective IS NOT NULL ORDER BY t.number, r.step");
}

std::string TrialRows(const std::string& db) {
  return Sql(db, "SELECT number, state, params_json, value, last_step FROM trials ORDER BY number");
}

json TrialsJson(const std::string& db) {
  Output o = Sh(Tune("trials --db " + Quote(db) + " --format json"));
  REQUIRE(o.code == 0);
  return json::parse(o.out);
}

TEST_CASE("a failed attempt's retry continues from the newest checkpoint and ends as an uninterrupted run",
          "[e2e][checkpoint]") {
  TempDir dir;
  json plain = ToySpec("retry-plain", 2, 2, 60, 0, 515151);
  json failing = plain;
  failing["name"] = "retry-fail";
  failing["trial"]["command"].push_back("--fail-at-step");
  failing["trial"]["command"].push_back("42");
  failing["trial"]["max_retries"] = 1;
  const std::string plain_db = (dir.path / "plain.db").string(), fail_db = (dir.path / "fail.db").string();
  Output a = Sh(Tune("run " + Quote(Write(dir.path, plain).string()) + " --db " + Quote(plain_db) + " --quiet"));
  INFO(a.out);
  REQUIRE(a.code == 0);
  Output b = Sh(Tune("run " + Quote(Write(dir.path, failing).string()) + " --db " + Quote(fail_db) + " --quiet"));
  INFO(b.out);
  REQUIRE(b.code == 0);
  // Both trials failed once at step 42 and went on from checkpoint-42.
  CHECK(Sql(fail_db, "SELECT group_concat(attempt || '/' || failed_attempts || '/' || state) FROM trials") ==
        "1/1/completed,1/1/completed\n");
  for (int n : {0, 1}) {
    const std::string log = Slurp(dir.path / "tune_runs" / "retry-fail" / ("trial_000" + std::to_string(n)) / "rank_0.log");
    CHECK_THAT(log, Catch::Contains("resuming from") && Catch::Contains("checkpoint-42"));
    // The retry printed steps 43.. only.
    CHECK(log.find("step=43 ") != std::string::npos);
    CHECK(log.find("step=1 ", log.find("resuming from")) == std::string::npos);
  }
  // The curves (reports up to the checkpoint carried into the retry, then
  // the retry's) equal the uninterrupted run's.
  CHECK(Curves(fail_db) == Curves(plain_db));
  CHECK(Sql(fail_db, "SELECT count(*) FROM reports WHERE carried_from IS NOT NULL") == "84\n");

  SECTION("with trial.resume_from_checkpoint false the retry starts from step 0") {
    failing["name"] = "retry-scratch";
    failing["trial"]["resume_from_checkpoint"] = false;
    const std::string db = (dir.path / "scratch.db").string();
    Output c = Sh(Tune("run " + Quote(Write(dir.path, failing).string()) + " --db " + Quote(db) + " --quiet"));
    INFO(c.out);
    // It fails at 42 again (the toy fails there unless it resumed past it).
    CHECK(Sql(db, "SELECT group_concat(attempt || '/' || state) FROM trials") == "1/failed,1/failed\n");
    const std::string log = Slurp(dir.path / "tune_runs" / "retry-scratch" / "trial_0000" / "rank_0.log");
    CHECK(log.find("resuming from") == std::string::npos);
    CHECK(Sql(db, "SELECT count(*) FROM reports WHERE carried_from IS NOT NULL") == "0\n");
  }
}

TEST_CASE("killed = never killed with checkpoints: SIGKILL, --resume, trials continue where they were",
          "[e2e][checkpoint][reliability]") {
  TempDir dir;
  const int marker = 626262;
  json spec = ToySpec("ckpt-kill", 4, 2, 80, 15, marker);
  const fs::path spec_path = Write(dir.path, spec);
  // Each database with its own trial directories (tune_runs beside it).
  fs::create_directories(dir.path / "full");
  fs::create_directories(dir.path / "cut");
  const std::string full = (dir.path / "full" / "t.db").string(), cut = (dir.path / "cut" / "t.db").string();
  Output once = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(full) + " --quiet"));
  INFO(once.out);
  REQUIRE(once.code == 0);

  const fs::path log = dir.path / "cut.log";
  for (int reports : {25, 90, 170}) {
    pid_t pid = StartTune(spec_path, cut, log, "--resume");
    REQUIRE(pid > 0);
    if (!WaitCount(cut, "SELECT count(*) FROM reports", reports)) FAIL(Slurp(log));
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    REQUIRE(NoProcessLeft(Marker(marker)));
  }
  Output last = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(cut) + " --resume --quiet"));
  INFO(Slurp(log) << last.out);
  REQUIRE(last.code == 0);
  CHECK(TrialRows(cut) == TrialRows(full));
  CHECK(Curves(cut) == Curves(full));
  // Interrupted attempts went on from their checkpoints, not from step 0.
  const int carried = std::stoi(Sql(cut, "SELECT count(*) FROM reports WHERE carried_from IS NOT NULL"));
  CHECK(carried > 0);
  CHECK(Sql(cut, "SELECT sum(failed_attempts) FROM trials") == "0\n");
  CHECK(NoProcessLeft(Marker(marker)));
}

TEST_CASE("failed attempts count across --resume: max_retries is not restored by a restart", "[e2e][checkpoint]") {
  TempDir dir;
  const int marker = 737373;
  json spec = ToySpec("retry-count", 1, 1, 60, 20, marker);
  spec["trial"]["command"].push_back("--fail-at-step");
  spec["trial"]["command"].push_back("10");
  spec["trial"]["max_retries"] = 1;
  spec["trial"]["resume_from_checkpoint"] = false;  // so every attempt fails at step 10
  const fs::path spec_path = Write(dir.path, spec);
  const std::string db = (dir.path / "t.db").string();
  const fs::path log = dir.path / "run.log";
  pid_t pid = StartTune(spec_path, db, log);
  // Attempt 0 failed; kill the tuner while attempt 1 runs.
  if (!WaitCount(db, "SELECT failed_attempts FROM trials", 1)) FAIL(Slurp(log));
  if (!WaitCount(db, "SELECT count(*) FROM reports WHERE attempt = 1", 2)) FAIL(Slurp(log));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  REQUIRE(NoProcessLeft(Marker(marker)));
  Output resumed = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db) + " --resume --quiet"));
  INFO(Slurp(log) << resumed.out);
  // Attempt 1 was interrupted (not counted); attempt 2 failed: two failures
  // with max_retries 1 end the trial.
  // (failed_attempts counts the retried failures: the last one ended it.)
  CHECK(Sql(db, "SELECT state || ' ' || attempt || ' ' || failed_attempts FROM trials") == "failed 2 1\n");
}

// PBT's population: every trial completed at max_t, exploits recorded with
// parameters inside their domains, schedules shown by `tune trials`.
void CheckPopulation(const std::string& db, int population, int max_t) {
  CHECK(Sql(db, "SELECT count(*) FROM trials WHERE state = 'completed'") == std::to_string(population) + "\n");
  const int exploits = std::stoi(Sql(db, "SELECT count(*) FROM exploits"));
  CHECK(exploits > 0);
  json trials = TrialsJson(db);
  REQUIRE(trials.size() == static_cast<size_t>(population));
  int with_donor = 0;
  for (const json& t : trials) {
    CHECK(t["last_step"].get<int>() <= max_t);
    const json& schedule = t["schedule"];
    REQUIRE(!schedule.empty());
    CHECK(schedule[0]["donor"].is_null());
    for (const json& e : schedule) {
      const double lr = e["params"]["lr"].get<double>();
      CHECK(lr >= 0.0001);
      CHECK(lr <= 0.02);
      const int f = e["params"]["some_other_factor"].get<int>();
      CHECK((f == 1 || f == 2));
      if (!e["donor"].is_null()) ++with_donor;
    }
  }
  CHECK(with_donor == exploits);
}

TEST_CASE("PBT at population 8: all concurrent, and 4 concurrent taking turns", "[e2e][pbt]") {
  TempDir dir;
  SECTION("8 concurrent") {
    json spec = Pbt(ToySpec("pbt-8", 8, 8, 100, 2, 848484), 100);
    const std::string db = (dir.path / "t.db").string();
    Output o = Sh(Tune("run " + Quote(Write(dir.path, spec).string()) + " --db " + Quote(db) + " --quiet"));
    INFO(o.out);
    REQUIRE(o.code == 0);
    CheckPopulation(db, 8, 100);
  }
  SECTION("4 concurrent: trials pause at their interval and take turns") {
    json spec = Pbt(ToySpec("pbt-4", 8, 4, 100, 2, 848485), 100);
    const std::string db = (dir.path / "t.db").string();
    Output o = Sh(Tune("run " + Quote(Write(dir.path, spec).string()) + " --db " + Quote(db) + " --quiet"));
    INFO(o.out);
    REQUIRE(o.code == 0);
    CheckPopulation(db, 8, 100);
    // The last trials started long before any trial ended: the first four
    // paused to let them run.
    CHECK(Sql(db, "SELECT (SELECT max(started_at) FROM trials) < (SELECT min(ended_at) FROM trials)") == "1\n");
    // Every trial was paused (a new attempt) more than once.
    CHECK(Sql(db, "SELECT min(attempt) >= 2 FROM trials") == "1\n");
  }
}

TEST_CASE("PBT: SIGKILL of tune run, --resume, every interrupted trial continues from its checkpoint",
          "[e2e][pbt][reliability]") {
  TempDir dir;
  const int marker = 959595;
  json spec = Pbt(ToySpec("pbt-kill", 8, 4, 100, 10, marker), 100);
  const fs::path spec_path = Write(dir.path, spec);
  const std::string db = (dir.path / "t.db").string();
  const fs::path log = dir.path / "run.log";
  pid_t pid = StartTune(spec_path, db, log);
  if (!WaitCount(db, "SELECT count(*) FROM exploits", 3)) FAIL(Slurp(log));
  if (!WaitCount(db, "SELECT count(*) FROM trials WHERE state = 'running' AND last_step >= 7", 1)) FAIL(Slurp(log));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  REQUIRE(NoProcessLeft(Marker(marker)));
  // The trials that were between checkpoints (running or paused) and how
  // far each had got.
  const std::string interrupted =
      Sql(db, "SELECT group_concat(number || ':' || attempt) FROM trials WHERE state IN ('running', 'paused') AND "
              "last_step >= 5");
  REQUIRE(!interrupted.empty());
  Output resumed = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db) + " --resume --quiet"));
  INFO(Slurp(log) << resumed.out << interrupted);
  REQUIRE(resumed.code == 0);
  CheckPopulation(db, 8, 100);
  // Each of them: its first attempt after the kill reported from a step
  // past 1 (it continued from a checkpoint), with the reports up to it
  // carried over.
  std::string rest = interrupted;
  rest.pop_back();  // the newline
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string item = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? rest.size() : comma + 1;
    const std::string number = item.substr(0, item.find(':'));
    const std::string attempt = item.substr(item.find(':') + 1);
    INFO("trial " << number << " at attempt " << attempt);
    CHECK(Sql(db, "SELECT min(r.step) > 1 FROM reports r JOIN trials t ON t.id = r.trial_id WHERE t.number = " +
                      number + " AND r.attempt > " + attempt + " AND r.carried_from IS NULL AND r.attempt = "
                      "(SELECT min(attempt) FROM reports r2 WHERE r2.trial_id = t.id AND r2.attempt > " + attempt +
                      ")") == "1\n");
  }
  CHECK(NoProcessLeft(Marker(marker)));
}

}  // namespace
