// `tune` on a PostgreSQL database end to end: the same synthetic experiment
// run with --db tune.db and with --db postgresql://... gives `tune trials
// --format json` of the same shape and values; the query commands, report
// and storage.url read it; a second tuner on the experiment is refused and
// a SIGKILLed tuner's lock is gone for --resume. The server is a throwaway
// one (tests/storage/postgres_server.h).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <thread>

#include "storage/postgres_storage.h"
#include "tests/common/run_tune.h"
#include "tests/common/temp_dir.h"
#include "tests/storage/postgres_server.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::kBin;
using testing::Output;
using testing::PostgresServer;
using testing::Quote;
using testing::Sh;
using testing::TempDir;
using testing::Tune;

PostgresServer& Server() {
  static PostgresServer server;
  return server;
}

std::string NewDatabase(const std::string& name) {
  if (!PostgresSupported()) {
    WARN("built without libpq: PostgreSQL storage is not tested");
    return "";
  }
  if (!Server().ok()) {
    WARN("no PostgreSQL server: " << Server().why_not());
    return "";
  }
  return Server().CreateDatabase(name);
}

json Spec(const std::string& name, int max_trials, int concurrent, int steps, int sleep_ms) {
  return {
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
}

fs::path Write(const fs::path& dir, const json& spec, const std::string& file) {
  fs::path p = dir / file;
  std::ofstream(p) << spec.dump(2);
  return p;
}

// `tune ARGS` run in `dir` (a URL's trial directories go to ./tune_runs).
Output TuneIn(const fs::path& dir, const std::string& args) {
  return Sh("cd " + Quote(dir.string()) + " && " + Tune(args));
}

// The rows without what differs between two runs of one experiment: times,
// trial ids, where each ran and its log paths.
json Comparable(json rows) {
  for (json& r : rows) {
    for (const char* key : {"started_at", "ended_at", "duration_s", "id", "location", "log", "logs", "dir"}) {
      if (r.contains(key)) r[key] = "-";
    }
  }
  return rows;
}

// `tune dashboard --db DB --port 0` in the background: its pid and port.
std::pair<pid_t, int> StartDashboard(const fs::path& dir, const std::string& db) {
  const fs::path log = dir / ("dashboard." + std::to_string(std::hash<std::string>()(db)) + ".log");
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(127);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl((kBin + "/tune").c_str(), "tune", "dashboard", "--db", db.c_str(), "--port", "0", nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 100; ++i) {
    std::ifstream f(log);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t at = text.find("http://127.0.0.1:");
    if (at != std::string::npos && text.find("/ (Ctrl-C", at) != std::string::npos) {
      return {pid, std::stoi(text.substr(at + 17))};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {pid, 0};
}

TEST_CASE("tune run, trials, best, status, importance and report on PostgreSQL equal SQLite's",
          "[e2e][postgres]") {
  const std::string url = NewDatabase("tune_e2e_same");
  if (url.empty()) return;
  TempDir dir;
  fs::path spec = Write(dir.path, Spec("pg-e2e", 6, 1, 20, 0), "pg-e2e.json");
  const std::string file = (dir.path / "r.db").string();

  Output a = TuneIn(dir.path, "run " + Quote(spec.string()) + " --db " + Quote(file) + " --quiet");
  INFO(a.out);
  REQUIRE(a.code == 0);
  Output b = TuneIn(dir.path, "run " + Quote(spec.string()) + " --db " + Quote(url) + " --quiet");
  INFO(b.out);
  REQUIRE(b.code == 0);
  CHECK(b.out.find("results in " + url) != std::string::npos);
  for (int i = 0; i < 6; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "trial_%04d", i);
    CHECK(fs::exists(dir.path / "tune_runs" / "pg-e2e" / name / "rank_0.log"));
  }

  Output ta = TuneIn(dir.path, "trials --db " + Quote(file) + " --experiment pg-e2e --format json");
  Output tb = TuneIn(dir.path, "trials --db " + Quote(url) + " --experiment pg-e2e --format json");
  INFO(ta.out << "\n" << tb.out);
  REQUIRE(ta.code == 0);
  REQUIRE(tb.code == 0);
  json rows_a = json::parse(ta.out), rows_b = json::parse(tb.out);
  REQUIRE(rows_b.size() == 6);
  REQUIRE(rows_a.size() == rows_b.size());
  for (size_t i = 0; i < rows_a.size(); ++i) {
    std::vector<std::string> keys_a, keys_b;
    for (auto& [k, v] : rows_a[i].items()) keys_a.push_back(k);
    for (auto& [k, v] : rows_b[i].items()) keys_b.push_back(k);
    CHECK(keys_a == keys_b);  // the same shape
  }
  CHECK(Comparable(rows_a) == Comparable(rows_b));  // and, with one trial at a time, the same trials

  for (const std::string cmd : {"best --experiment pg-e2e --format json", "status",
                                 "importance --experiment pg-e2e --format json"}) {
    Output qa = TuneIn(dir.path, cmd + " --db " + Quote(file));
    Output qb = TuneIn(dir.path, cmd + " --db " + Quote(url));
    INFO(cmd << ": " << qa.out << "\n" << qb.out);
    CHECK(qb.code == qa.code);
    CHECK(qb.code == 0);
  }
  Output best_a = TuneIn(dir.path, "best --db " + Quote(file) + " --experiment pg-e2e --format json");
  Output best_b = TuneIn(dir.path, "best --db " + Quote(url) + " --experiment pg-e2e --format json");
  CHECK(Comparable(json::array({json::parse(best_a.out)})) == Comparable(json::array({json::parse(best_b.out)})));

  // report reads through a read-only session.
  Output report = TuneIn(dir.path, "report --db " + Quote(url) + " --experiment pg-e2e --out " +
                                       Quote((dir.path / "r.html").string()));
  INFO(report.out);
  CHECK(report.code == 0);
  CHECK(fs::file_size(dir.path / "r.html") > 1000);

  // The dashboard (a read-only session) serves the same experiment.
  json pages[2];
  int n = 0;
  for (const std::string& db : {file, url}) {
    auto [pid, port] = StartDashboard(dir.path, db);
    CHECK(port > 0);
    Output api = Sh("curl -s http://127.0.0.1:" + std::to_string(port) + "/api/experiment?name=pg-e2e");
    Output list = Sh("curl -s http://127.0.0.1:" + std::to_string(port) + "/api/experiments");
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    INFO(api.out << "\n" << list.out);
    REQUIRE(api.code == 0);
    pages[n++] = json::parse(api.out);
    CHECK(list.out.find("pg-e2e") != std::string::npos);
  }
  std::vector<std::string> keys[2];
  for (int i = 0; i < 2; ++i) {
    for (auto& [k, v] : pages[i].items()) keys[i].push_back(k);
  }
  CHECK(keys[0] == keys[1]);
  REQUIRE(pages[1].contains("trial_rows"));
  CHECK(pages[1]["trial_rows"].size() == 6);
  CHECK(pages[0]["trial_rows"].size() == pages[1]["trial_rows"].size());
  CHECK(pages[0]["best"] == pages[1]["best"]);
  CHECK(pages[0]["curves"] == pages[1]["curves"]);

  // tune migrate: the SQLite run into a new PostgreSQL database and back
  // into a new file; trials --format json is the same, byte for byte.
  const std::string copy = NewDatabase("tune_e2e_copy");
  const std::string back = (dir.path / "back.db").string();
  Output there = TuneIn(dir.path, "migrate --from " + Quote(file) + " --to " + Quote(copy));
  INFO(there.out);
  REQUIRE(there.code == 0);
  CHECK(there.out.find("tune migrate: 1 experiment copied from " + file + " to " + copy) != std::string::npos);
  Output home = TuneIn(dir.path, "migrate --from " + Quote(copy) + " --to " + Quote(back) + " -e pg-e2e");
  REQUIRE(home.code == 0);
  for (const std::string& db : {copy, back}) {
    Output t = TuneIn(dir.path, "trials --db " + Quote(db) + " --experiment pg-e2e --format json");
    REQUIRE(t.code == 0);
    CHECK(t.out == ta.out);
  }
  Output twice = TuneIn(dir.path, "migrate --from " + Quote(file) + " --to " + Quote(copy));
  CHECK(twice.code == 2);
  CHECK(twice.out.find("'pg-e2e' already exists there; nothing was copied") != std::string::npos);

  // A query on a database that holds no tune results creates nothing.
  const std::string empty = NewDatabase("tune_e2e_empty");
  Output none = TuneIn(dir.path, "trials --db " + Quote(empty));
  CHECK(none.code == 2);
  CHECK(none.out.find("holds no tune results") != std::string::npos);
  CHECK(Server().Psql("tune_e2e_empty", "SELECT to_regclass('experiments') IS NULL") == "t\n");
}

TEST_CASE("storage.url names the database, and a password in a URL is refused before anything runs",
          "[e2e][postgres]") {
  const std::string url = NewDatabase("tune_e2e_url");
  if (url.empty()) return;
  TempDir dir;
  json spec = Spec("pg-url", 2, 2, 10, 0);
  spec["storage"] = {{"url", url}};
  fs::path path = Write(dir.path, spec, "pg-url.json");
  Output run = TuneIn(dir.path, "run " + Quote(path.string()) + " --quiet");
  INFO(run.out);
  REQUIRE(run.code == 0);
  CHECK(!fs::exists(dir.path / "tune.db"));
  Output trials = TuneIn(dir.path, "trials --db " + Quote(url) + " --experiment pg-url --format json");
  REQUIRE(trials.code == 0);
  CHECK(json::parse(trials.out).size() == 2);

  spec["storage"] = {{"url", url}, {"path", "x.db"}};
  Output both = TuneIn(dir.path, "run " + Quote(Write(dir.path, spec, "both.json").string()) + " --quiet");
  CHECK(both.code == 2);
  CHECK(both.out.find("both.json: storage: expected either path (an SQLite file) or url (a postgresql:// "
                      "database), got both") != std::string::npos);

  spec["storage"] = {{"url", "postgresql://postgres:hunter2@127.0.0.1/db"}};
  Output secret = TuneIn(dir.path, "run " + Quote(Write(dir.path, spec, "secret.json").string()) + " --quiet");
  CHECK(secret.code == 2);
  CHECK(secret.out.find("storage.url: a database URL must not contain a password") != std::string::npos);
  CHECK(secret.out.find("hunter2") == std::string::npos);

  Output flag = TuneIn(dir.path, "trials --db 'postgres://u:hunter2@127.0.0.1/db'");
  CHECK(flag.code == 2);
  CHECK(flag.out.find("--db: a database URL must not contain a password") != std::string::npos);
  CHECK(flag.out.find("hunter2") == std::string::npos);
}

TEST_CASE("one tune run per experiment on PostgreSQL, and a SIGKILLed tuner lock is released for --resume",
          "[e2e][postgres]") {
  const std::string url = NewDatabase("tune_e2e_lock");
  if (url.empty()) return;
  TempDir dir;
  fs::path spec = Write(dir.path, Spec("pg-lock", 4, 2, 40, 50), "pg-lock.json");
  const fs::path log = dir.path / "first.log";
  pid_t first = ::fork();
  if (first == 0) {
    if (::chdir(dir.path.c_str()) != 0) ::_exit(127);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl((kBin + "/tune").c_str(), "tune", "run", spec.c_str(), "--db", url.c_str(), "--quiet", nullptr);
    ::_exit(127);
  }
  // Wait until the first tuner has a trial running.
  bool running = false;
  for (int i = 0; i < 100 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    running = Server().Psql("tune_e2e_lock", "SELECT count(*) FROM trials WHERE state = 'running'") != "0\n" &&
              Server().Psql("tune_e2e_lock", "SELECT count(*) FROM trials WHERE state = 'running'").find("ERROR") ==
                  std::string::npos;
  }
  REQUIRE(running);
  Output second = TuneIn(dir.path, "run " + Quote(spec.string()) + " --db " + Quote(url) + " --resume --quiet");
  CHECK(second.code == 2);
  CHECK(second.out.find("experiment 'pg-lock' in " + url + " is being run by another tune process") !=
        std::string::npos);
  ::kill(first, SIGKILL);
  ::waitpid(first, nullptr, 0);
  // Its trials outlive it for a moment (their own process group ends them);
  // the lock went with its session.
  Output resumed;
  for (int i = 0; i < 20; ++i) {
    resumed = TuneIn(dir.path, "run " + Quote(spec.string()) + " --db " + Quote(url) + " --resume --quiet");
    if (resumed.out.find("is being run by another") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  INFO(resumed.out);
  CHECK(resumed.code == 0);
  Output trials = TuneIn(dir.path, "trials --db " + Quote(url) + " --experiment pg-lock --format json");
  REQUIRE(trials.code == 0);
  json rows = json::parse(trials.out);
  CHECK(rows.size() == 4);
  for (const json& r : rows) CHECK(r["state"] == "completed");
}

}  // namespace
}  // namespace tune
