// Reliability guarantees of `tune run`, each on the real binary with real
// trial processes: a database that disappears mid-run is noticed.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;

// A synthetic experiment; `marker` (a --seed value) finds its processes.
json Spec(const std::string& name, int max_trials, int concurrent, int steps, int sleep_ms, int marker) {
  return {
      {"name", name},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-5}, {"high", 1e-1}}},
        {"lora_r", {{"type", "choice"}, {"values", {4, 8, 16, 32}}}}}},
      {"search", {{"algorithm", "random"}, {"seed", 5}}},
      {"limits", {{"max_trials", max_trials}, {"max_concurrent_trials", concurrent}}},
      {"trial",
       {{"command",
         {kBin + "/synthetic_trial", "--lr", "${lr}", "--lora-r", "${lora_r}", "--steps", std::to_string(steps),
          "--report-every", "5", "--sleep-ms", std::to_string(sleep_ms), "--seed", std::to_string(marker)}}}},
  };
}

}  // namespace

TEST_CASE("a database deleted mid-run stops tune with one sentence and a non-zero exit", "[e2e][reliability]") {
  TempDir dir;
  for (const bool whole_dir : {false, true}) {
    const int marker = whole_dir ? 717172 : 717171;
    fs::path db_dir = dir.path / (whole_dir ? "gone" : "kept");
    fs::create_directories(db_dir);
    json spec = Spec(whole_dir ? "deldir" : "delfile", 8, 2, 60, 10, marker);
    fs::path spec_path = Write(dir.path, spec);
    std::string db = (db_dir / "t.db").string();
    fs::path log = dir.path / (spec["name"].get<std::string>() + ".log");
    pid_t pid = StartTune(spec_path, db, log);
    if (!WaitCount(db, "SELECT count(*) FROM trials WHERE state = 'completed'", 1)) FAIL(Slurp(log));
    if (whole_dir) {
      fs::remove_all(db_dir);
    } else {
      for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
    }
    const int code = WaitExit(pid, 60);
    INFO(Slurp(log));
    CHECK(code == 1);
    CHECK_THAT(Slurp(log), Catch::Contains("tune: " + db +
                                           ": the database file was deleted or replaced while tune was using it"));
    CHECK(NoProcessLeft(std::to_string(marker)));
  }
}

namespace {

// TPE (or the GP sampler) + ASHA, one trial at a time, a deterministic
// trial program (its noise is seeded by --seed): every decision depends only
// on the history.
json KillSpec(const std::string& name, int workers, int marker, const std::string& algorithm) {
  return {
      {"name", name},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-5}, {"high", 1e-1}}},
        {"lora_r", {{"type", "choice"}, {"values", {4, 8, 16, 32}}}},
        {"dropout", {{"type", "quniform"}, {"low", 0.0}, {"high", 0.4}, {"q", 0.05}}}}},
      {"search", {{"algorithm", algorithm}, {"seed", 3}, {"n_startup_trials", 4}}},
      {"scheduler", {{"type", "asha"}, {"max_t", 27}, {"grace_period", 3}, {"reduction_factor", 3}}},
      {"limits", {{"max_trials", 12}, {"max_concurrent_trials", 1}}},
      {"trial",
       {{"command",
         {kBin + "/synthetic_trial", "--lr", "${lr}", "--lora-r", "${lora_r}", "--dropout", "${dropout}", "--steps",
          "40", "--report-every", "1", "--sleep-ms", "8", "--seed", std::to_string(marker)}},
        {"workers", workers}}},
  };
}

// Every trial as `tune` recorded it: number, state, params, value, pruned
// rung, last step, one line each.
std::string Trials(const std::string& db) {
  Output o = Sh("sqlite3 " + Quote(db) +
                " \"SELECT number, state, params_json, value, pruned_rung, last_step FROM trials ORDER BY number\"");
  REQUIRE(o.code == 0);
  return o.out;
}

// SIGKILLs `tune run --resume` at `kills` random moments (seeded), then lets
// a last --resume finish; the trials must equal an uninterrupted run's.
void CheckKilledEqualsNeverKilled(const fs::path& dir, int workers, int marker, int kills,
                                  const std::string& algorithm = "tpe") {
  const std::string name = "killed-" + algorithm + "-w" + std::to_string(workers);
  fs::path spec_path = Write(dir, KillSpec(name, workers, marker, algorithm));
  const std::string full = (dir / (name + "-full.db")).string();
  const std::string cut = (dir / (name + "-cut.db")).string();
  const auto t0 = std::chrono::steady_clock::now();
  Output once = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(full) + " --quiet"));
  INFO(once.out);
  REQUIRE(once.code == 0);
  const double full_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Moments spread over a third of a full run.
  const fs::path log = dir / (name + ".log");
  KillResumedRuns(spec_path, cut, log, kills, 20261125u + static_cast<unsigned>(workers), std::max(0.3, full_s / 3));
  INFO(Slurp(log));
  CHECK(NoProcessLeft(std::to_string(marker)));
  // The kills hit: attempts were interrupted and run again, and the runs
  // between the kills got somewhere.
  const std::string hits = Sh("sqlite3 " + Quote(cut) +
                              " \"SELECT sum(attempt) || ' ' || count(*) FROM trials WHERE state <> 'pending'\"")
                               .out;
  WARN("after " << kills << " kills: interrupted attempts, trials begun: " << hits << " (uninterrupted run "
                << full_s << " s)");
  Output last = Sh(Tune("run " + Quote(spec_path) + " --db " + Quote(cut) + " --resume --quiet"));
  INFO(last.out);
  REQUIRE(last.code == 0);
  CHECK(Trials(cut) == Trials(full));
  CHECK(NoProcessLeft(std::to_string(marker)));
}

}  // namespace

TEST_CASE("killed = never killed: SIGKILL at 20 random moments, --resume, same trials", "[e2e][reliability]") {
  TempDir dir;
  CheckKilledEqualsNeverKilled(dir.path, 1, 818181, 20);
}

TEST_CASE("killed = never killed, with 2-worker trials", "[e2e][reliability]") {
  TempDir dir;
  CheckKilledEqualsNeverKilled(dir.path, 2, 818182, 20);
}

// The GP sampler refits its kernel after a restart (search/gp_sampler.h):
// its suggestions, too, depend only on the history and the seed.
TEST_CASE("killed = never killed, with the GP sampler", "[e2e][reliability]") {
  TempDir dir;
  CheckKilledEqualsNeverKilled(dir.path, 1, 818183, 10, "gp");
}

// ---------------------------------------------------------------------------
// Faults already handled stay handled: one sentence, exit 2, and the
// database as it was (byte for byte).

namespace {

// A database holding one finished experiment 'a' (2 quick trials), and the
// spec of a second experiment 'b' to run into it.
struct Base {
  fs::path dir;
  std::string db;
  fs::path a_spec, b_spec;
  explicit Base(const fs::path& d) : dir(d), db((d / "t.db").string()) {
    a_spec = Write(dir, Spec("a", 2, 1, 10, 0, 919191));
    b_spec = Write(dir, Spec("b", 2, 1, 30, 5, 919192));
    Output a = Sh(Tune("run " + Quote(a_spec) + " --db " + Quote(db) + " --quiet"));
    INFO(a.out);
    REQUIRE(a.code == 0);
  }
};

std::string Bytes(const std::string& path) { return Slurp(path); }

// Overwrites `n` bytes at `offset` of `path` with 0xff.
void Scribble(const std::string& path, std::streamoff offset, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  std::string junk(n, '\xff');
  f.write(junk.data(), static_cast<std::streamsize>(n));
}

// `tune run` of `spec` into `db` under `wrapper` (e.g. prlimit), output and code.
Output RunInto(const std::string& wrapper, const fs::path& spec, const std::string& db, const std::string& extra = "") {
  return Sh(wrapper + Tune("run " + Quote(spec) + " --db " + Quote(db) + " --quiet" + extra));
}

}  // namespace

TEST_CASE("a database tune cannot use is refused: one sentence, exit 2, the file unchanged", "[e2e][reliability]") {
  TempDir tmp;
  Base base(tmp.path);
  struct Case {
    std::string name;
    std::function<void(const std::string&)> damage;  // applied to the database file
    std::string wrapper;
    fs::path spec;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"a foreign text file", [](const std::string& db) { std::ofstream(db) << "{\"not\": \"a database\"}\n"; }, "",
       base.b_spec, ": is not an SQLite database"},
      {"another application's SQLite file",
       [](const std::string& db) {
         fs::remove(db);
         REQUIRE(Sh("sqlite3 " + Quote(db) + " 'CREATE TABLE notes (body TEXT)'").code == 0);
       },
       "", base.b_spec, ": is an SQLite database but not a tune results database"},
      {"a truncated database", [](const std::string& db) { fs::resize_file(db, fs::file_size(db) / 2); }, "",
       base.b_spec, "database disk image is malformed"},
      // Page 4 is the trials table's root (docs/database.md order): its
      // b-tree header is garbage, which only reading it shows.
      {"a corrupted page", [](const std::string& db) { Scribble(db, 3 * 4096 + 8, 2000); }, "", base.b_spec,
       ": the database file is corrupt ("},
      {"a full disk (file size limit 0)", [](const std::string&) {}, "prlimit --fsize=0 ", base.b_spec,
       ": cannot open the database: the file size limit (RLIMIT_FSIZE, ulimit -f) of 0 bytes is reached"},
      {"a second run of a finished experiment", [](const std::string&) {}, "", base.a_spec,
       "experiment 'a' already exists in " + base.db + "; pass --resume to continue it"},
  };
  const std::string pristine = Bytes(base.db);
  for (const Case& c : cases) {
    SECTION(c.name) {
      c.damage(base.db);
      const std::string before = Bytes(base.db);
      Output run = RunInto(c.wrapper, c.spec, base.db);
      INFO(run.out);
      CHECK(run.code == 2);
      CHECK_THAT(run.out, Catch::Contains(c.expect));
      // One sentence: one line, "tune: <db>: ...".
      CHECK(std::count(run.out.begin(), run.out.end(), '\n') == 1);
      CHECK(run.out.rfind("tune: ", 0) == 0);
      CHECK(Bytes(base.db) == before);
      CHECK(NoProcessLeft("919192"));
    }
  }
}

TEST_CASE("a read-only database is refused: one sentence, exit 2, the file unchanged", "[e2e][reliability]") {
  TempDir tmp;
  Base base(tmp.path);
  fs::permissions(base.db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  // root writes through file modes: run as nobody then, in a directory it
  // may write to (the lock file), or skip where that cannot be arranged.
  std::string wrapper;
  if (::geteuid() == 0) {
    fs::permissions(tmp.path, fs::perms::all);
    wrapper = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    if (Sh(wrapper + "test -r " + Quote(base.db) + " -a -x " + Quote(kBin + "/tune")).code != 0) {
      WARN("skipped: user nobody cannot reach " << base.db);
      return;
    }
  }
  const std::string before = Bytes(base.db);
  Output run = RunInto(wrapper, base.b_spec, base.db);
  INFO(run.out);
  CHECK(run.code == 2);
  CHECK_THAT(run.out, Catch::Contains("tune: " + base.db + ": cannot write the database: it is read-only"));
  CHECK(Bytes(base.db) == before);
  CHECK(NoProcessLeft("919192"));
}

TEST_CASE("a disk that fills mid-run: one sentence, exit 2, a consistent database that --resume finishes",
          "[e2e][reliability]") {
  TempDir tmp;
  Base base(tmp.path);
  const std::string a_rows = Sh("sqlite3 " + Quote(base.db) + " 'SELECT * FROM trials ORDER BY id'").out;
  // Room for the -shm file and a few WAL frames, not for the whole run.
  Output run = RunInto("prlimit --fsize=45000 ", base.b_spec, base.db);
  INFO(run.out);
  CHECK(run.code == 2);
  CHECK_THAT(run.out, Catch::Contains("tune: " + base.db +
                                      ": cannot write the database: the file size limit (RLIMIT_FSIZE, ulimit -f) "
                                      "of 45000 bytes is reached"));
  CHECK(NoProcessLeft("919192"));
  CHECK(Sh("sqlite3 " + Quote(base.db) + " 'PRAGMA integrity_check'").out == "ok\n");
  Output resumed = RunInto("", base.b_spec, base.db, " --resume");
  INFO(resumed.out);
  CHECK(resumed.code == 0);
  CHECK(Sh("sqlite3 " + Quote(base.db) +
           " \"SELECT count(*) FROM trials t JOIN experiments e ON e.id = t.experiment_id "
           "WHERE e.name = 'b' AND t.state = 'completed'\"")
            .out == "2\n");
  // Experiment a's rows come before b's: unchanged.
  CHECK(Sh("sqlite3 " + Quote(base.db) + " 'SELECT * FROM trials ORDER BY id LIMIT 2'").out == a_rows);
}

TEST_CASE("a 20 MB metric line and NaN or inf reports are handled, and tune best agrees with tune run",
          "[e2e][reliability]") {
  TempDir tmp;
  // x=1: a 20 MB line that looks like a metric line, then a normal report.
  // x=2: nan then inf (last: inf). x=3: -inf then nan (last: nan = none).
  // x=4: 0.5 then 0.25.
  const std::string script =
      "case ${x} in "
      "1) printf 'step=1 loss='; head -c 20000000 /dev/zero | tr '\\0' 1; echo; echo step=2 loss=0.75;; "
      "2) echo step=1 loss=nan; echo step=2 loss=inf;; "
      "3) echo step=1 loss=-inf; echo step=2 loss=nan;; "
      "*) echo step=1 loss=0.5; echo step=2 loss=0.25;; esac";
  json spec = {{"name", "odd"},
               {"objective", {{"metric", "loss"}, {"mode", "min"}}},
               {"parameters", {{"x", {{"type", "choice"}, {"values", {1, 2, 3, 4}}}}}},
               {"search", {{"algorithm", "grid"}}},
               {"limits", {{"max_trials", 4}, {"max_concurrent_trials", 2}}},
               {"trial", {{"command", {"/bin/sh", "-c", script}}}}};
  fs::path spec_path = Write(tmp.path, spec);
  const std::string db = (tmp.path / "o.db").string();
  Output run = RunInto("", spec_path, db);
  INFO(run.out.substr(0, 4000));
  REQUIRE(run.code == 0);
  CHECK(run.out.size() < 100000);  // the long line is not echoed
  auto q = [&](const std::string& sql) { return Sh("sqlite3 " + Quote(db) + " " + Quote(sql)).out; };
  CHECK(q("SELECT count(*) FROM trials WHERE state = 'completed'") == "4\n");
  // The long line is dropped, not stored; the trial's value is its next report.
  CHECK(q("SELECT value FROM trials t JOIN trial_params p ON p.trial_id = t.id WHERE p.name = 'x' AND "
          "p.value_num = 1") == "0.75\n");
  CHECK(q("SELECT count(*) FROM reports r JOIN trial_params p ON p.trial_id = r.trial_id WHERE p.value_num = 1") ==
        "1\n");
  // inf is a value; NaN is none (NULL), never an earlier report's value.
  CHECK(q("SELECT value FROM trials t JOIN trial_params p ON p.trial_id = t.id WHERE p.value_num = 2") == "Inf\n");
  CHECK(q("SELECT value IS NULL FROM trials t JOIN trial_params p ON p.trial_id = t.id WHERE p.value_num = 3") ==
        "1\n");
  // The best trial is the same for tune run and tune best.
  CHECK_THAT(run.out, Catch::Contains("best trial 3: loss 0.25"));
  Output best = Sh(Tune("best --db " + Quote(db) + " --format json"));
  INFO(best.out);
  REQUIRE(best.code == 0);
  CHECK(json::parse(best.out)["number"] == 3);
}
