// End to end: the real `tune` binary runs real experiments of real trial
// processes (synthetic_trial), and its results are read back through the
// query commands and plain SQL.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;

json SyntheticSpec(const std::string& name, int max_trials, int concurrent, int steps, int sleep_ms) {
  json spec = {
      {"name", name},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-5}, {"high", 1e-1}}},
        {"lora_r", {{"type", "choice"}, {"values", {4, 8, 16, 32}}}},
        {"dropout", {{"type", "uniform"}, {"low", 0.0}, {"high", 0.4}}}}},
      {"search", {{"algorithm", "random"}, {"seed", 11}}},
      {"limits", {{"max_trials", max_trials}, {"max_concurrent_trials", concurrent}}},
      {"trial",
       {{"command",
         {kBin + "/synthetic_trial", "--lr", "${lr}", "--lora-r", "${lora_r}", "--dropout", "${dropout}", "--steps",
          std::to_string(steps), "--report-every", "5", "--sleep-ms", std::to_string(sleep_ms)}},
        {"workers", 1},
        {"timeout_s", 120}}},
  };
  return spec;
}

// `tune run SPEC --db DB --quiet` in the background, output to `log`.
pid_t StartTuneRun(const fs::path& spec_path, const std::string& db, const fs::path& log) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl((kBin + "/tune").c_str(), "tune", "run", spec_path.c_str(), "--db", db.c_str(), "--quiet", nullptr);
    _exit(127);
  }
  return pid;
}

// Writes `spec` to dir/file, then `tune run FILE --db DB --resume --quiet`.
Output ResumeWith(const fs::path& dir, const std::string& file, const json& spec, const std::string& db) {
  fs::path path = dir / file;
  std::ofstream(path) << spec.dump(2);
  return Sh(Tune("run " + Quote(path) + " --db " + Quote(db) + " --resume --quiet"));
}

fs::path Write(const fs::path& dir, const json& spec) {
  fs::path p = dir / (spec["name"].get<std::string>() + ".json");
  std::ofstream(p) << spec.dump(2);
  return p;
}

TEST_CASE("tune run runs concurrent real trials and tune best reproduces the best one", "[e2e]") {
  TempDir dir;
  json spec = SyntheticSpec("e2e-basic", 8, 3, 30, 2);
  fs::path spec_path = Write(dir.path, spec);
  std::string db = (dir.path / "r.db").string();

  Output run = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  CHECK(run.out.find("max_trials reached") != std::string::npos);

  Output trials = Sh(Tune("trials --db " + Quote(db) + " --experiment e2e-basic --format json"));
  INFO(trials.out);
  REQUIRE(trials.code == 0);
  json rows = json::parse(trials.out);
  REQUIRE(rows.size() == 8);
  for (const auto& r : rows) CHECK(r["state"] == "completed");

  // Every trial kept its log, and rank 0's metric lines are in the database.
  for (int i = 0; i < 8; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "trial_%04d", i);
    CHECK(fs::exists(dir.path / "tune_runs" / "e2e-basic" / name / "rank_0.log"));
  }
  Output curve = Sh("sqlite3 " + Quote(db) + " \"SELECT count(*) FROM metrics WHERE name = 'eval_loss'\"");
  if (curve.code == 0) CHECK(std::stoi(curve.out) == 8 * 6);

  Output best = Sh(Tune("best --db " + Quote(db) + " --experiment e2e-basic --format json"));
  INFO(best.out);
  REQUIRE(best.code == 0);
  json b = json::parse(best.out);
  double best_value = b["value"].get<double>();
  for (const auto& r : rows) {
    if (r["value"].is_number()) CHECK(best_value <= r["value"].get<double>());
  }
  // The first of the trials sorted by value is the best trial.
  Output top = Sh(Tune("trials --db " + Quote(db) + " --experiment e2e-basic --sort value --limit 1 --format json"));
  REQUIRE(top.code == 0);
  json top_rows = json::parse(top.out);
  REQUIRE(top_rows.size() == 1);
  CHECK(top_rows[0]["number"] == b["number"]);
  // The run's closing line names the best trial and its parameters.
  const std::string lora_r = "lora_r=" + std::to_string(b["params"]["lora_r"].get<int64_t>());
  const std::string best_line = "tune: best trial " + std::to_string(b["number"].get<int>()) + ": eval_loss ";
  const auto line_at = run.out.find(best_line);
  REQUIRE(line_at != std::string::npos);
  const std::string line = run.out.substr(line_at, run.out.find('\n', line_at) - line_at);
  CHECK(line.find(lora_r) != std::string::npos);
  CHECK(line.find(" lr=") != std::string::npos);
  // Importances cover every parameter, most important first, summing to 1.
  Output imp = Sh(Tune("importance --db " + Quote(db) + " --experiment e2e-basic --format json"));
  INFO(imp.out);
  REQUIRE(imp.code == 0);
  json importances = json::parse(imp.out);
  CHECK(importances["trials"] == 8);
  CHECK(importances["top_trials"] == 1);
  REQUIRE(importances["importances"].size() == 3);
  double total = 0, previous = 2;
  std::set<std::string> named;
  for (const json& entry : importances["importances"]) {
    const double v = entry["importance"].get<double>();
    CHECK(v <= previous);
    previous = v;
    total += v;
    named.insert(entry["parameter"].get<std::string>());
  }
  CHECK(total == Approx(1.0));
  CHECK(named == std::set<std::string>{"dropout", "lora_r", "lr"});
  // The params, substituted into the command, reproduce the best trial.
  const json& p = b["params"];
  CHECK(p["lora_r"].is_number_integer());
  std::ostringstream cmd;
  cmd << Quote(kBin + "/synthetic_trial") << " --lr " << p["lr"].dump() << " --lora-r " << p["lora_r"].dump()
      << " --dropout " << p["dropout"].dump() << " --steps 30 --report-every 5";
  Output again = Sh(cmd.str());
  REQUIRE(again.code == 0);
  auto pos = again.out.rfind("eval_loss=");
  REQUIRE(pos != std::string::npos);
  CHECK(std::stod(again.out.substr(pos + 10)) == Approx(best_value).epsilon(1e-5));

  Output status = Sh(Tune("status --db " + Quote(db)));
  CHECK(status.code == 0);
  CHECK(status.out.find("e2e-basic") != std::string::npos);
}

TEST_CASE("tune run rejects bad input with exit 2 and no database", "[e2e]") {
  TempDir dir;
  json spec = SyntheticSpec("e2e-bad", 2, 1, 5, 0);
  spec["parameters"]["lr"]["low"] = 0.5;  // above high
  fs::path spec_path = Write(dir.path, spec);
  std::string db = (dir.path / "bad.db").string();
  Output run = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db)));
  CHECK(run.code == 2);
  CHECK(run.out.find("parameters.lr.low") != std::string::npos);
  CHECK(!fs::exists(db));

  // A trial program that is not there: refused before the database exists.
  json no_program = SyntheticSpec("e2e-bad", 2, 1, 5, 0);
  no_program["trial"]["command"][0] = "no_such_program_xyz";
  Output absent = Sh(Tune("run " + Quote(Write(dir.path, no_program)) + " --db " + Quote(db)));
  CHECK(absent.code == 2);
  CHECK(absent.out.find("trial.command[0]: expected a program on PATH") != std::string::npos);
  CHECK(!fs::exists(db));

  Output missing = Sh(Tune("run " + Quote((dir.path / "nope.json").string())));
  CHECK(missing.code == 2);
  CHECK(missing.out.find("nope.json") != std::string::npos);

  Output usage = Sh(Tune("frobnicate"));
  CHECK(usage.code == 2);
  Output no_db = Sh(Tune("best --db " + Quote((dir.path / "none.db").string())));
  CHECK(no_db.code != 0);
  CHECK(!fs::exists(dir.path / "none.db"));
}

TEST_CASE("a run whose every trial fails exits 1 and says why each failed", "[e2e]") {
  TempDir dir;
  json spec = SyntheticSpec("e2e-allfail", 2, 1, 5, 0);
  for (const char* arg : {"--fail-at", "1", "--exit-code", "3"}) spec["trial"]["command"].push_back(arg);
  std::string db = (dir.path / "fail.db").string();
  Output run = Sh(Tune("run " + Quote(Write(dir.path, spec)) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  CHECK(run.code == 1);
  CHECK(run.out.find("experiment 'e2e-allfail' failed: max_trials reached, but every trial failed (2)") !=
        std::string::npos);
  CHECK(run.out.find("2 trials failed  (why: tune trials --db " + db + " --experiment e2e-allfail --state failed)") !=
        std::string::npos);
  // The stored message quotes the trial's last words; the table shows them.
  Output trials = Sh(Tune("trials --db " + Quote(db) + " --state failed"));
  CHECK(trials.code == 0);
  CHECK(trials.out.find("error") != std::string::npos);
  CHECK(trials.out.find("rank 0 exited with code 3: \"synthetic_trial: failing at step 1 as asked\"") !=
        std::string::npos);
  Output status = Sh(Tune("status --db " + Quote(db)));
  CHECK(status.out.find("e2e-allfail  failed") != std::string::npos);
}

TEST_CASE("a SIGKILLed tuner leaves no trial process, and --resume finishes the experiment", "[e2e]") {
  TempDir dir;
  // Slow trials (about 1 s each), a unique marker in their command lines.
  json spec = SyntheticSpec("e2e-kill", 6, 2, 40, 25);
  std::string marker = "--seed";
  spec["trial"]["command"].push_back("--seed");
  spec["trial"]["command"].push_back("424242");
  fs::path spec_path = Write(dir.path, spec);
  std::string db = (dir.path / "k.db").string();

  pid_t pid = StartTuneRun(spec_path, db, dir.path / "first.log");
  REQUIRE(pid > 0);
  // Wait until at least two trials finished, then kill the tuner outright.
  bool two_done = false;
  for (int i = 0; i < 300 && !two_done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Output c = Sh("sqlite3 " + Quote(db) + " \"SELECT count(*) FROM trials WHERE state = 'completed'\"");
    two_done = c.code == 0 && !c.out.empty() && std::isdigit(static_cast<unsigned char>(c.out[0])) && std::stoi(c.out) >= 2;
  }
  REQUIRE(two_done);
  REQUIRE(CountProcesses("424242") > 0);
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  // Trial processes die with the tuner.
  int left = -1;
  for (int i = 0; i < 50 && left != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = CountProcesses("424242");
  }
  CHECK(left == 0);

  Output done_before = Sh("sqlite3 " + Quote(db) + " \"SELECT number FROM trials WHERE state = 'completed' ORDER BY number\"");
  Output resume = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db) + " --resume --quiet"));
  INFO(resume.out);
  REQUIRE(resume.code == 0);
  Output trials = Sh(Tune("trials --db " + Quote(db) + " --experiment e2e-kill --format json"));
  json rows = json::parse(trials.out);
  REQUIRE(rows.size() == 6);
  for (const auto& r : rows) CHECK(r["state"] == "completed");
  // Trials finished before the kill were not run again.
  std::istringstream numbers(done_before.out);
  int n;
  while (numbers >> n) CHECK(resume.out.find("trial " + std::to_string(n) + " started") == std::string::npos);
}

TEST_CASE("tune run guards an experiment: one tuner at a time, resume keeps the search, bad runs leave nothing",
          "[e2e]") {
  TempDir dir;
  json spec = SyntheticSpec("e2e-guard", 3, 1, 40, 25);  // about 1 s per trial
  fs::path spec_path = Write(dir.path, spec);
  std::string db = (dir.path / "g.db").string();
  fs::path lock = db + ".e2e-guard.lock";

  pid_t pid = StartTuneRun(spec_path, db, dir.path / "first.log");
  REQUIRE(pid > 0);
  for (int i = 0; i < 100 && !fs::exists(lock); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(fs::exists(lock));
  // Refused twice, and the refusals leave the running tuner's lock alone:
  // a third attempt is refused too (it used to take the experiment over).
  for (const char* extra : {"", " --resume", " --resume"}) {
    Output again = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db) + " --quiet" + extra));
    INFO(again.out);
    CHECK(again.code == 2);
    CHECK(again.out.find("is being run by another tune process") != std::string::npos);
    CHECK(fs::exists(lock));
  }
  int st = 0;
  waitpid(pid, &st, 0);
  std::ifstream first_log(dir.path / "first.log");
  std::string first((std::istreambuf_iterator<char>(first_log)), std::istreambuf_iterator<char>());
  INFO(first);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK(!fs::exists(lock));
  for (const auto& r : json::parse(Sh(Tune("trials --db " + Quote(db) + " --format json")).out)) {
    CHECK(r["attempts"] == 1);
  }

  // A resume must keep the search space...
  json changed = spec;
  changed["parameters"]["lr"]["high"] = 0.2;
  Output refused = ResumeWith(dir.path, "changed.json", changed, db);
  INFO(refused.out);
  CHECK(refused.code == 2);
  CHECK(refused.out.find("changed.json: parameters.lr.high: expected 0.1 as when experiment 'e2e-guard'") !=
        std::string::npos);
  // ...but may raise the limits: the stored spec follows.
  json more = spec;
  more["limits"]["max_trials"] = 5;
  Output resumed = ResumeWith(dir.path, "more.json", more, db);
  INFO(resumed.out);
  CHECK(resumed.code == 0);
  CHECK(resumed.out.find("resuming 'e2e-guard' with the limits of") != std::string::npos);
  CHECK(json::parse(Sh(Tune("trials --db " + Quote(db) + " --format json")).out).size() == 5);
  Output stored = Sh("sqlite3 " + Quote(db) + " \"SELECT json_extract(spec_json, '$.limits.max_trials') FROM experiments\"");
  if (stored.code == 0) CHECK(stored.out == "5\n");

  // A trial bigger than this machine, or a missing working directory: exit
  // 2 before any database exists.
  for (int variant = 0; variant < 2; ++variant) {
    json big = SyntheticSpec("e2e-big", 2, 1, 5, 0);
    if (variant == 0) big["trial"]["workers"] = 100000;
    if (variant == 1) big["trial"]["working_dir"] = "no-such-dir";
    fs::path big_path = Write(dir.path, big);
    std::string big_db = (dir.path / "big.db").string();
    Output validate = Sh(Tune("validate " + Quote(big_path)));
    Output run = Sh(Tune("run " + Quote(big_path) + " --db " + Quote(big_db)));
    INFO(run.out);
    CHECK(validate.code == 2);
    CHECK(run.code == 2);
    CHECK(run.out.find(variant == 0 ? "trial.resources_per_worker" : "trial.working_dir") != std::string::npos);
    CHECK(!fs::exists(big_db));
  }
}

TEST_CASE("limits.time_budget_s spans every run of an experiment", "[e2e]") {
  TempDir dir;
  json spec = SyntheticSpec("e2e-budget", 4, 1, 400, 25);  // 10 s trials
  spec["limits"]["time_budget_s"] = 1.5;
  fs::path spec_path = Write(dir.path, spec);
  std::string db = (dir.path / "b.db").string();
  Output first = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db) + " --quiet"));
  INFO(first.out);
  CHECK(first.code == 0);
  CHECK(first.out.find("time_budget_s reached") != std::string::npos);
  // Spent: a resume starts nothing...
  Output again = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db) + " --resume --quiet"));
  INFO(again.out);
  CHECK(again.code == 0);
  CHECK(again.out.find("time_budget_s reached") != std::string::npos);
  CHECK(again.out.find("started") == std::string::npos);
  // ...until the budget is raised: then it gets what is left.
  spec["limits"]["time_budget_s"] = 3.0;
  Output more = ResumeWith(dir.path, "more.json", spec, db);
  INFO(more.out);
  CHECK(more.code == 0);
  CHECK(more.out.find("trial 1 started") != std::string::npos);
  // All runs together: 3 s and the stopping, not 1.5 + a fresh 3.
  Output spent = Sh("sqlite3 " + Quote(db) + " \"SELECT run_seconds FROM experiments\"");
  REQUIRE(spent.code == 0);
  CHECK(std::stod(spent.out) >= 3.0);
  CHECK(std::stod(spent.out) < 4.5);
  json rows = json::parse(Sh(Tune("trials --db " + Quote(db) + " --format json")).out);
  REQUIRE(rows.size() == 2);
  for (const auto& r : rows) CHECK(r["state"] == "stopped");
}

}  // namespace

namespace {

json AshaSpec(const std::string& name, int max_trials, int concurrent, int sleep_ms) {
  json spec = SyntheticSpec(name, max_trials, concurrent, 60, sleep_ms);
  spec["scheduler"] = {{"type", "asha"}, {"max_t", 60}, {"grace_period", 5}, {"reduction_factor", 3}};
  return spec;
}

// Trial number -> (state, pruned rung) from `tune trials --format json`.
std::map<int, std::pair<std::string, std::string>> Outcomes(const std::string& db, const std::string& name) {
  Output trials = Sh(Tune("trials --db " + Quote(db) + " --experiment " + name + " --format json"));
  REQUIRE(trials.code == 0);
  std::map<int, std::pair<std::string, std::string>> out;
  for (const auto& r : json::parse(trials.out)) {
    out[r["number"].get<int>()] = {r["state"].get<std::string>(), r.value("pruned_rung", json()).dump()};
  }
  return out;
}

}  // namespace

TEST_CASE("ASHA-pruned trials really stop near their rung and their processes are gone", "[e2e]") {
  TempDir dir;
  json spec = AshaSpec("e2e-asha", 12, 3, 15);
  spec["trial"]["command"].push_back("--seed");
  spec["trial"]["command"].push_back("515151");
  fs::path spec_path = Write(dir.path, spec);
  std::string db = (dir.path / "a.db").string();
  Output run = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  CHECK(CountProcesses("515151") == 0);

  auto outcomes = Outcomes(db, "e2e-asha");
  REQUIRE(outcomes.size() == 12);
  int pruned = 0;
  for (const auto& [number, o] : outcomes) {
    if (o.first != "pruned") continue;
    ++pruned;
    int rung = std::stoi(o.second);
    CHECK((rung == 5 || rung == 15 || rung == 45));
    char name[32];
    std::snprintf(name, sizeof name, "trial_%04d", number);
    std::ifstream log(dir.path / "tune_runs" / "e2e-asha" / name / "rank_0.log");
    std::string line, last_step_line;
    bool got_sigterm = false;
    while (std::getline(log, line)) {
      if (line.rfind("step=", 0) == 0) last_step_line = line;
      if (line.find("SIGTERM") != std::string::npos) got_sigterm = true;
    }
    INFO("trial " << number << " rung " << rung << " last line " << last_step_line);
    REQUIRE(!last_step_line.empty());
    int last_step = std::stoi(last_step_line.substr(5));
    // Stopped within a few reports of its rung, far before max_t.
    CHECK(last_step >= rung);
    CHECK(last_step <= rung + 15);
    CHECK(got_sigterm);
  }
  CHECK(pruned > 0);
}

TEST_CASE("reports after max_t are stored, marked, and never change a trial's value", "[e2e]") {
  TempDir dir;
  // The trial runs on to step 100 (within the kill grace) after ASHA has
  // completed it at max_t 20; its loss keeps falling, so a late report
  // that counted would change the value under either scope.
  for (const std::string scope : {"last", "best"}) {
    json spec = SyntheticSpec("e2e-maxt-" + scope, 2, 1, 100, 4);
    spec["objective"]["scope"] = scope;
    spec["parameters"] = {{"lr", {{"type", "choice"}, {"values", {3e-4}}}},
                          {"lora_r", {{"type", "choice"}, {"values", {8, 16}}}},
                          {"dropout", {{"type", "choice"}, {"values", {0.1}}}}};
    spec["scheduler"] = {{"type", "asha"}, {"max_t", 20}, {"grace_period", 20}, {"reduction_factor", 2}};
    fs::path spec_path = Write(dir.path, spec);
    std::string db = (dir.path / (scope + ".db")).string();
    Output run = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db) + " --quiet"));
    INFO(run.out);
    REQUIRE(run.code == 0);
    auto q = [&](const std::string& sql) {
      Output o = Sh("sqlite3 " + Quote(db) + " " + Quote(sql));
      REQUIRE(o.code == 0);
      return o.out;
    };
    // Every trial: completed, last_step 20, value = its step-20 report (last)
    // or the best report up to step 20 (best); later reports kept, marked.
    CHECK(q("SELECT count(*) FROM trials WHERE state = 'completed' AND last_step = 20") == "2\n");
    CHECK(q("SELECT count(*) FROM trials t WHERE t.value = (SELECT " +
            (scope == "last" ? std::string("objective") : "min(objective)") +
            " FROM reports r WHERE r.trial_id = t.id AND r.step " + (scope == "last" ? "= 20" : "<= 20") + ")") ==
          "2\n");
    CHECK(q("SELECT count(*) FROM reports WHERE excluded IS NULL AND step > 20") == "0\n");
    CHECK(q("SELECT count(*) FROM trials t WHERE (SELECT max(step) FROM reports r WHERE r.trial_id = t.id "
            "AND r.excluded = 'after max_t') > 20") == "2\n");
    CHECK(q("SELECT count(*) FROM trials t WHERE (SELECT min(objective) FROM reports r WHERE r.trial_id = t.id "
            "AND r.excluded IS NOT NULL) < t.value - 0.1") == "2\n");
    CHECK(q("SELECT count(DISTINCT report_id) FROM observation_logs WHERE excluded = 'after max_t'") != "0\n");
  }
}

TEST_CASE("a resumed ASHA experiment decides as the uninterrupted one", "[e2e]") {
  TempDir dir;
  // One trial at a time: report order, hence every decision, is fixed.
  json spec = AshaSpec("e2e-replay", 10, 1, 4);
  spec["trial"]["command"].push_back("--seed");
  spec["trial"]["command"].push_back("626262");
  fs::path spec_path = Write(dir.path, spec);
  std::string db_full = (dir.path / "full.db").string();
  std::string db_cut = (dir.path / "cut.db").string();
  REQUIRE(Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db_full) + " --quiet")).code == 0);

  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = ::open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    dup2(fd, 2);
    execl((kBin + "/tune").c_str(), "tune", "run", spec_path.c_str(), "--db", db_cut.c_str(), "--quiet", nullptr);
    _exit(127);
  }
  bool some_done = false;
  for (int i = 0; i < 300 && !some_done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Output c = Sh("sqlite3 " + Quote(db_cut) + " \"SELECT count(*) FROM trials WHERE state IN ('completed','pruned')\"");
    some_done = c.code == 0 && !c.out.empty() && std::isdigit(static_cast<unsigned char>(c.out[0])) && std::stoi(c.out) >= 4;
  }
  REQUIRE(some_done);
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  Output resume = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db_cut) + " --resume --quiet"));
  INFO(resume.out);
  REQUIRE(resume.code == 0);
  CHECK(Outcomes(db_cut, "e2e-replay") == Outcomes(db_full, "e2e-replay"));
}

TEST_CASE("Ctrl-C stops trials cleanly and --resume finishes the experiment", "[e2e]") {
  TempDir dir;
  json spec = SyntheticSpec("e2e-int", 4, 2, 40, 25);
  spec["trial"]["command"].push_back("--seed");
  spec["trial"]["command"].push_back("737373");
  fs::path spec_path = Write(dir.path, spec);
  std::string db = (dir.path / "i.db").string();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = ::open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    dup2(fd, 2);
    execl((kBin + "/tune").c_str(), "tune", "run", spec_path.c_str(), "--db", db.c_str(), "--quiet", nullptr);
    _exit(127);
  }
  for (int i = 0; i < 100 && CountProcesses("737373") == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(CountProcesses("737373") > 0);
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 130);
  CHECK(CountProcesses("737373") == 0);
  Output states = Sh("sqlite3 " + Quote(db) + " \"SELECT state FROM experiments\"");
  CHECK(states.out.find("stopped") != std::string::npos);
  Output resume = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(db) + " --resume --quiet"));
  INFO(resume.out);
  REQUIRE(resume.code == 0);
  auto outcomes = Outcomes(db, "e2e-int");
  REQUIRE(outcomes.size() == 4);
  for (const auto& [n, o] : outcomes) CHECK(o.first == "completed");
}
