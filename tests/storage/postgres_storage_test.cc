// The Storage contract on both engines: one script of state changes runs
// against an SQLite file and a real PostgreSQL server (Debian's
// `postgresql` binaries, started by tests/storage/postgres_server.h on a
// loopback port and removed afterwards), and everything each stores reads
// back the same. Then what only PostgreSQL has: the schema version row and
// its refusals, the advisory lock of one `tune run` per experiment, readers
// beside a writer, and URLs with passwords refused.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <thread>

#include "storage/open_storage.h"
#include "storage/postgres_migrate.h"
#include "storage/postgres_storage.h"
#include "storage/storage.h"
#include "tests/common/temp_dir.h"
#include "tests/storage/postgres_server.h"

namespace tune {
namespace {

using testing::PostgresServer;
using testing::TempDir;

// One server for the whole binary; each test takes a new database.
PostgresServer& Server() {
  static PostgresServer server;
  return server;
}

// A new empty PostgreSQL database's URL, or "" (the test is skipped with a
// warning) when there is no PostgreSQL here.
std::string NewDatabase() {
  if (!PostgresSupported()) {
    WARN("built without libpq: PostgreSQL storage is not tested");
    return "";
  }
  if (!Server().ok()) {
    WARN("no PostgreSQL server: " << Server().why_not());
    return "";
  }
  static int n = 0;
  return Server().CreateDatabase("tune_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
}

std::unique_ptr<Storage> Open(const std::string& db) {
  auto s = OpenStorage(db);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(s).value();
}

MetricReport Report(int64_t step, std::map<std::string, double> values) {
  MetricReport r;
  r.step = step;
  r.values = std::move(values);
  r.time = 1000 + step;
  return r;
}

std::string Num(std::optional<double> v) {
  if (!v) return "none";
  std::ostringstream s;
  s.precision(17);
  s << *v;
  return s.str();
}

// A script of every kind of state change (the lifecycle, retries, excluded
// reports, pause/continue, an exploit, tracking runs), checking each answer
// as it goes.
void Script(Storage& db) {
  auto e = db.CreateExperiment("alpha", R"({"name": "alpha"})", std::numeric_limits<uint64_t>::max());
  REQUIRE(e.ok());
  REQUIRE(db.CreateExperiment("beta", "{}", 7).ok());
  auto dup = db.CreateExperiment("alpha", "{}", 1);
  CHECK(dup.status().code() == StatusCode::kFailedPrecondition);
  CHECK(dup.status().message().find("'alpha' already exists") != std::string::npos);
  CHECK(db.CreateExperiment("", "{}", 1).status().IsInvalidArgument());
  REQUIRE(db.SetExperimentSpec(*e, R"({"name": "alpha", "v": 2})").ok());
  REQUIRE(db.SetExperimentRunSeconds(*e, 12.5).ok());
  CHECK(db.SetExperimentRunSeconds(999, 1).IsNotFound());

  ParamMap params{{"lr", 0.001}, {"layers", int64_t{3}}, {"act", std::string("re\"lu")}, {"bn", true}};
  auto t0 = db.CreateTrial(*e, params);
  REQUIRE(t0.ok());
  CHECK(t0->number == 0);
  CHECK(db.CreateTrial(*e, {{"lr", std::numeric_limits<double>::infinity()}}).status().IsInvalidArgument());
  auto t1 = db.CreateTrial(*e, {{"lr", 0.1}});
  auto t2 = db.CreateTrial(*e, {{"lr", 0.2}});
  auto t3 = db.CreateTrial(*e, {{"lr", 0.3}});
  REQUIRE((t1.ok() && t2.ok() && t3.ok()));
  CHECK(t3->number == 3);

  // Trial 0: reports (one NaN metric, one without the objective), done.
  CHECK(db.AppendReport(t0->id, 0, Report(1, {{"loss", 1.0}}), 1.0).code() == StatusCode::kFailedPrecondition);
  REQUIRE(db.StartTrial(t0->id, 0, "local:pid 1").ok());
  REQUIRE(db.AppendReport(t0->id, 0, Report(1, {{"loss", 0.9}, {"acc", NAN}}), 0.9).ok());
  REQUIRE(db.AppendReport(t0->id, 0, Report(2, {{"acc", 0.5}}), std::nullopt).ok());
  REQUIRE(db.AppendReport(t0->id, 0, Report(3, {{"loss", 0.7}}), 0.7).ok());
  CHECK(db.AppendReport(t0->id, 1, Report(4, {{"loss", 0.7}}), 0.7).code() == StatusCode::kFailedPrecondition);
  REQUIRE(db.AppendExcludedReport(t0->id, 0, Report(9, {{"loss", 0.1}}), 0.1, "after max_t").ok());
  REQUIRE(db.FinishTrial(t0->id, TrialState::kCompleted, std::nullopt, std::nullopt, "").ok());
  CHECK(db.FinishTrial(t0->id, TrialState::kFailed, 1.0, std::nullopt, "").code() ==
        StatusCode::kFailedPrecondition);
  CHECK(db.AppendReport(t0->id, 0, Report(5, {}), 0.1).code() == StatusCode::kFailedPrecondition);

  // Trial 1: fails once, retried, then pruned at a rung.
  REQUIRE(db.StartTrial(t1->id, 0, "local:pid 2").ok());
  REQUIRE(db.AppendReport(t1->id, 0, Report(1, {{"loss", 5.0}}), 5.0).ok());
  REQUIRE(db.RetryFailedTrial(t1->id, "exit code 1").ok());
  CHECK(db.StartTrial(t1->id, 0, "local:pid 3").code() == StatusCode::kFailedPrecondition);
  REQUIRE(db.StartTrial(t1->id, 1, "local:pid 3").ok());
  REQUIRE(db.AppendReport(t1->id, 1, Report(1, {{"loss", 4.0}}), 4.0).ok());
  REQUIRE(db.AppendReport(t1->id, 1, Report(2, {{"loss", 3.0}}), 3.0).ok());
  REQUIRE(db.AppendReport(t1->id, 1, Report(3, {{"loss", 2.5}}), 2.5).ok());
  REQUIRE(db.ExcludeAttemptReports(t1->id, 1, "replaced pod", int64_t{3}).ok());
  CHECK(db.ExcludeAttemptReports(t1->id, 0, "replaced pod").code() == StatusCode::kFailedPrecondition);
  REQUIRE(db.FinishTrial(t1->id, TrialState::kPruned, NAN, int64_t{2}, "stopped at rung 2").ok());

  // Trials 2 and 3: PBT. 3 pauses, takes 2's checkpoint and continues.
  REQUIRE(db.StartTrial(t2->id, 0, "k8s:job/t2").ok());
  REQUIRE(db.StartTrial(t3->id, 0, "k8s:job/t3").ok());
  for (int64_t s = 1; s <= 4; ++s) {
    REQUIRE(db.AppendReport(t2->id, 0, Report(s, {{"loss", 1.0 / s}}), 1.0 / s).ok());
    REQUIRE(db.AppendReport(t3->id, 0, Report(s, {{"loss", 2.0 / s}}), 2.0 / s).ok());
  }
  REQUIRE(db.PauseTrial(t3->id, "exploit").ok());
  CHECK(db.PauseTrial(t3->id, "again").code() == StatusCode::kFailedPrecondition);
  REQUIRE(db.RecordExploit(t3->id, 4, t2->id, 4, {{"lr", 0.25}}).ok());
  REQUIRE(db.ContinueTrial(t3->id, 1, "k8s:job/t3-1", 2).ok());
  REQUIRE(db.AppendReport(t3->id, 1, Report(5, {{"loss", 0.15}}), 0.15).ok());
  // Two objectives (one missing: NaN) and a constraint (trial_values).
  REQUIRE(db.FinishTrialWithValues(t2->id, TrialState::kCompleted, 0.25, {0.25, NAN}, {-1.5}, std::nullopt, "").ok());
  REQUIRE(db.FinishTrial(t3->id, TrialState::kStopped, std::nullopt, std::nullopt, "budget").ok());

  REQUIRE(db.SetTrackingRun(*e, "mlflow x", -1, "run-a").ok());
  REQUIRE(db.SetTrackingRun(*e, "mlflow x", 0, "run-b").ok());
  REQUIRE(db.SetTrackingRun(*e, "mlflow x", -1, "run-c").ok());  // replaces
  REQUIRE(db.SetExperimentState(*e, ExperimentState::kCompleted, "done").ok());
}

// Everything the database holds, as text, without wall-clock times.
std::string Dump(Storage& db) {
  std::ostringstream out;
  auto experiments = db.ListExperiments();
  REQUIRE(experiments.ok());
  for (const ExperimentRecord& e : *experiments) {
    out << "experiment " << e.id << " " << e.name << " " << e.spec_json << " " << ExperimentStateName(e.state) << " "
        << e.seed << " ended " << e.ended_at.has_value() << " '" << e.message << "' " << e.run_seconds << "\n";
    auto records = db.ListTrialRecords(e.id);
    REQUIRE(records.ok());
    for (const TrialRecord& r : *records) {
      out << " trial " << r.trial.id << " #" << r.trial.number << " " << TrialStateName(r.trial.state) << " "
          << ParamsToJson(r.trial.params) << " value " << Num(r.trial.value) << " attempt " << r.trial.attempt
          << " last_step " << (r.last_step ? std::to_string(*r.last_step) : "none") << " rung "
          << (r.pruned_rung ? std::to_string(*r.pruned_rung) : "none") << " '" << r.location << "' '" << r.message
          << "' failed " << r.failed_attempts << " started " << r.started_at.has_value() << " ended "
          << r.ended_at.has_value() << " curve";
      for (const auto& [step, v] : r.trial.intermediate) out << " " << step << ":" << Num(v);
      out << " values";
      for (double v : r.trial.values) out << " " << Num(v);
      out << " constraints";
      for (double c : r.trial.constraints) out << " " << Num(c);
      out << "\n";
      auto summary = db.GetTrialSummary(r.trial.id);
      REQUIRE(summary.ok());
      CHECK(summary->trial.intermediate.empty());
      CHECK(summary->trial.value == r.trial.value);
      auto reports = db.ListTrialReports(r.trial.id);
      REQUIRE(reports.ok());
      for (const StoredReport& s : *reports) {
        out << "  report " << s.seq << " a" << s.attempt << " step " << s.report.step << " t " << s.report.time
            << " '" << s.excluded << "'";
        for (const auto& [k, v] : s.report.values) out << " " << k << "=" << Num(v);
        out << "\n";
      }
    }
    auto history = db.ListTrials(e.id);
    REQUIRE(history.ok());
    REQUIRE(history->size() == records->size());
    for (size_t i = 0; i < history->size(); ++i) CHECK((*history)[i].intermediate == (*records)[i].trial.intermediate);
    auto summaries = db.ListTrialSummaries(e.id);
    REQUIRE(summaries.ok());
    CHECK(summaries->size() == records->size());
    for (bool maximize : {false, true}) {
      auto tally = db.TallyTrials(e.id, maximize);
      REQUIRE(tally.ok());
      out << " tally " << tally->total;
      for (const auto& [s, n] : tally->counts) out << " " << TrialStateName(s) << "=" << n;
      if (tally->best) out << " best #" << tally->best->first << "=" << Num(tally->best->second);
      out << "\n";
    }
    auto counted = db.ListReports(e.id);
    REQUIRE(counted.ok());
    out << " counted";
    for (const StoredReport& s : *counted) out << " " << s.seq;
    out << "\n";
    auto exploits = db.ListExploits(e.id);
    REQUIRE(exploits.ok());
    for (const StoredExploit& x : *exploits) {
      out << " exploit " << x.id << " after " << x.after_seq << " #" << x.trial_number << "@" << x.step << " <- #"
          << x.donor_number << "@" << x.donor_step << " " << ParamsToJson(x.before) << " -> "
          << ParamsToJson(x.after) << "\n";
    }
    auto runs = db.ListTrackingRuns(e.id, "mlflow x");
    REQUIRE(runs.ok());
    for (const auto& [n, id] : *runs) out << " run " << n << "=" << id << "\n";
  }
  return out.str();
}

TEST_CASE("both engines store the same script and read it back the same, also after reopening",
          "[storage][postgres]") {
  const std::string url = NewDatabase();
  if (url.empty()) return;
  TempDir dir;
  const std::string file = dir.File("tune.db");
  std::string sqlite_dump, pg_dump;
  {
    auto sqlite = Open(file);
    Script(*sqlite);
    sqlite_dump = Dump(*sqlite);
  }
  {
    auto pg = Open(url);
    Script(*pg);
    pg_dump = Dump(*pg);
  }
  CHECK(pg_dump == sqlite_dump);
  // What the script must have left, spelled out for both.
  CHECK(pg_dump.find("18446744073709551615") != std::string::npos);  // all 64 bits of the seed
  CHECK(pg_dump.find("curve 1:0.90000000000000002 3:0.69999999999999996") != std::string::npos);
  CHECK(pg_dump.find("'after max_t' loss=0.10000000000000001") != std::string::npos);
  CHECK(pg_dump.find("acc=nan") != std::string::npos);
  CHECK(pg_dump.find("failed 1") != std::string::npos);
  CHECK(pg_dump.find("'replaced pod'") != std::string::npos);
  CHECK(pg_dump.find("exploit 1") != std::string::npos);
  CHECK(pg_dump.find("run -1=run-c") != std::string::npos);
  CHECK(pg_dump.find("values 0.25 nan constraints -1.5\n") != std::string::npos);
  // Reopened (a --resume): the same, read by a second connection; and the
  // read-only opening reads the same too.
  CHECK(Dump(*Open(url)) == pg_dump);
  auto ro = OpenStorageReadOnly(url);
  REQUIRE(ro.ok());
  CHECK(Dump(**ro) == pg_dump);
  auto write = (*ro)->SetExperimentRunSeconds(1, 2);
  CHECK(write.code() == StatusCode::kFailedPrecondition);
  CHECK(write.message().find("read-only") != std::string::npos);
  INFO(sqlite_dump);
}

TEST_CASE("PostgreSQL: the schema version row, and databases that are not ours refused", "[storage][postgres]") {
  const std::string url = NewDatabase();
  if (url.empty()) return;
  const std::string name = url.substr(url.rfind('/') + 1);
  // The query commands never create one.
  auto missing = OpenStorage(url, /*create_if_missing=*/false);
  CHECK(missing.status().IsNotFound());
  CHECK(OpenStorageReadOnly(url).status().IsNotFound());
  { Open(url); }
  CHECK(Server().Psql(name, "SELECT value FROM tune_meta WHERE key = 'schema_version'") == "7\n");
  CHECK(Server().Psql(name, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND "
                            "table_name IN ('experiments','trials','trial_params','reports','metrics','tracking_runs',"
                            "'exploits','trial_values','observation_logs','tune_meta')") == "10\n");
  { Open(url); }  // a second open changes nothing
  CHECK(Server().Psql(name, "SELECT count(*) FROM tune_meta") == "2\n");

  Server().Psql(name, "UPDATE tune_meta SET value = 99 WHERE key = 'schema_version'");
  auto newer = OpenStorage(url);
  CHECK(newer.status().code() == StatusCode::kFailedPrecondition);
  CHECK(newer.status().message().find("schema version 99") != std::string::npos);
  CHECK(OpenStorageReadOnly(url).status().code() == StatusCode::kFailedPrecondition);

  const std::string other = NewDatabase();
  const std::string other_name = other.substr(other.rfind('/') + 1);
  Server().Psql(other_name, "CREATE TABLE payroll (id int)");
  auto foreign = OpenStorage(other);
  CHECK(foreign.status().code() == StatusCode::kFailedPrecondition);
  CHECK(foreign.status().message().find("not a tune results database") != std::string::npos);
  CHECK(Server().Psql(other_name, "SELECT to_regclass('experiments') IS NULL") == "t\n");  // left as it was
}

TEST_CASE("PostgreSQL: several tuners open one new database at once and share it", "[storage][postgres]") {
  const std::string url = NewDatabase();
  if (url.empty()) return;
  std::vector<std::thread> tuners;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    tuners.emplace_back([&, i] {
      auto db = OpenStorage(url);
      if (!db.ok()) {
        std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
        return;
      }
      auto e = (*db)->CreateExperiment("exp" + std::to_string(i), "{}", i);
      if (!e.ok()) {
        std::fprintf(stderr, "create: %s\n", e.status().ToString().c_str());
        return;
      }
      for (int k = 0; k < 5; ++k) {
        auto t = (*db)->CreateTrial(*e, {{"x", int64_t{k}}});
        if (!t.ok() || !(*db)->StartTrial(t->id, 0, "").ok()) return;
        if (!(*db)->AppendReport(t->id, 0, Report(1, {{"y", 1.0 * k}}), 1.0 * k).ok()) return;
        if (!(*db)->FinishTrial(t->id, TrialState::kCompleted, std::nullopt, std::nullopt, "").ok()) return;
      }
      ++ok;
    });
  }
  for (auto& t : tuners) t.join();
  CHECK(ok == 4);
  auto db = Open(url);
  auto all = db->ListExperiments();
  REQUIRE(all.ok());
  CHECK(all->size() == 4);
  for (const ExperimentRecord& e : *all) {
    auto tally = db->TallyTrials(e.id, false);
    REQUIRE(tally.ok());
    CHECK(tally->total == 5);
    CHECK(tally->best == std::make_pair(0, 0.0));
  }
}

TEST_CASE("PostgreSQL: DataVersion changes exactly when another connection commits", "[storage][postgres]") {
  const std::string url = NewDatabase();
  if (url.empty()) return;
  auto writer = Open(url);
  auto reader = OpenStorageReadOnly(url);
  REQUIRE(reader.ok());
  auto v0 = (*reader)->DataVersion();
  REQUIRE(v0.ok());
  CHECK((*reader)->ListExperiments().ok());
  CHECK(*(*reader)->DataVersion() == *v0);  // reading changes nothing
  auto e = writer->CreateExperiment("x", "{}", 1);
  REQUIRE(e.ok());
  auto v1 = (*reader)->DataVersion();
  CHECK(*v1 != *v0);
  CHECK(writer->SetExperimentState(*e, ExperimentState::kStopped, "").ok());
  CHECK(*(*reader)->DataVersion() != *v1);
  // A failed write commits nothing and changes nothing.
  auto v2 = (*reader)->DataVersion();
  CHECK(writer->CreateExperiment("x", "{}", 1).status().code() == StatusCode::kFailedPrecondition);
  CHECK(*(*reader)->DataVersion() == *v2);
}

TEST_CASE("PostgreSQL: readers never block the writer", "[storage][postgres]") {
  const std::string url = NewDatabase();
  if (url.empty()) return;
  const std::string name = url.substr(url.rfind('/') + 1);
  auto writer = Open(url);
  auto e = writer->CreateExperiment("busy", "{}", 1);
  REQUIRE(e.ok());
  auto t = writer->CreateTrial(*e, {{"x", 1.0}});
  REQUIRE(t.ok());
  REQUIRE(writer->StartTrial(t->id, 0, "").ok());
  // A reader holds a snapshot open over every table for 3 s (psql in the
  // background), and dashboards read in a loop meanwhile.
  const std::string sleeper = "(" + Server().Tool("psql") + " -X -q -h 127.0.0.1 -p " +
                              std::to_string(Server().port()) + " -U postgres -d " + name +
                              " -c 'BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM trials, reports, "
                              "metrics, tune_meta; SELECT pg_sleep(3); COMMIT' >/dev/null 2>&1 &)";
  std::system(sleeper.c_str());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&] {
      auto r = OpenStorageReadOnly(url);
      if (!r.ok()) return;
      while (!stop) {
        if ((*r)->ListTrialRecords(*e).ok() && (*r)->ListReports(*e).ok()) ++reads;
      }
    });
  }
  double slowest = 0;
  for (int64_t s = 0; s < 300; ++s) {
    auto start = std::chrono::steady_clock::now();
    REQUIRE(writer->AppendReport(t->id, 0, Report(s, {{"loss", 1.0 / (s + 1)}}), 1.0 / (s + 1)).ok());
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  REQUIRE(writer->FinishTrial(t->id, TrialState::kCompleted, std::nullopt, std::nullopt, "").ok());
  stop = true;
  for (auto& r : readers) r.join();
  CHECK(reads > 0);
  CHECK(slowest < 1.0);  // the 3 s snapshot held no write back
  auto records = writer->ListTrialRecords(*e);
  REQUIRE(records.ok());
  CHECK((*records)[0].trial.intermediate.size() == 300);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the psql reader ends
}

TEST_CASE("PostgreSQL: a writer killed with SIGKILL leaves every change whole, and the next one goes on",
          "[storage][postgres]") {
  const std::string url = NewDatabase();
  if (url.empty()) return;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t child = ::fork();
  if (child == 0) {
    auto db = OpenStorage(url);
    if (!db.ok()) ::_exit(1);
    auto e = (*db)->CreateExperiment("killed", "{}", 1);
    auto t = (*db)->CreateTrial(*e, {{"x", 1.0}});
    if (!t.ok() || !(*db)->StartTrial(t->id, 0, "").ok()) ::_exit(1);
    for (int64_t s = 0;; ++s) {
      const double v = 1.0 / static_cast<double>(s + 1);
      if (!(*db)->AppendReport(t->id, 0, Report(s, {{"a", v}, {"b", 2 * v}, {"c", 3 * v}}), v).ok()) ::_exit(1);
      if (s == 50) (void)!::write(ready[1], "1", 1);
    }
  }
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);

  auto db = Open(url);
  auto e = db->FindExperiment("killed");
  REQUIRE(e.ok());
  auto records = db->ListTrialRecords(e->id);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 1);
  const TrialRecord& r = (*records)[0];
  auto reports = db->ListTrialReports(r.trial.id);
  REQUIRE(reports.ok());
  REQUIRE(reports->size() > 50);
  for (size_t i = 0; i < reports->size(); ++i) {
    CHECK((*reports)[i].report.step == static_cast<int64_t>(i));  // none lost in between
    CHECK((*reports)[i].report.values.size() == 3);              // never a report without its metrics
  }
  const int64_t last = reports->back().report.step;
  CHECK(r.last_step == last);  // the trial's row agrees with its reports
  CHECK(r.trial.value == 1.0 / static_cast<double>(last + 1));
  CHECK(r.trial.intermediate.size() == reports->size());
  // The killed session's transaction is gone; the next tuner goes on.
  REQUIRE(db->RetryFailedTrial(r.trial.id, "tuner killed").ok());
  REQUIRE(db->StartTrial(r.trial.id, 1, "").ok());
  REQUIRE(db->AppendReport(r.trial.id, 1, Report(0, {{"a", 1}}), 1.0).ok());
  REQUIRE(db->FinishTrial(r.trial.id, TrialState::kCompleted, std::nullopt, std::nullopt, "").ok());
  CHECK(db->GetTrialSummary(r.trial.id)->failed_attempts == 1);
}

TEST_CASE("PostgreSQL: one tune run per experiment, released when the holder dies", "[storage][postgres]") {
  const std::string url = NewDatabase();
  if (url.empty()) return;
  {
    auto first = LockPostgresExperiment(url, "demo");
    REQUIRE(first.ok());
    auto second = LockPostgresExperiment(url, "demo");
    CHECK(second.status().code() == StatusCode::kFailedPrecondition);
    CHECK(second.status().message() == "experiment 'demo' in " + url + " is being run by another tune process");
    CHECK(LockPostgresExperiment(url, "other").ok());  // another experiment is free
  }
  CHECK(LockPostgresExperiment(url, "demo").ok());  // released with the lease

  // A holder killed with SIGKILL: the server ends its session and the lock.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t child = ::fork();
  if (child == 0) {
    auto held = LockPostgresExperiment(url, "demo");
    char c = held.ok() ? '1' : '0';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  CHECK(c == '1');
  CHECK(LockPostgresExperiment(url, "demo").status().code() == StatusCode::kFailedPrecondition);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  bool freed = false;
  for (int i = 0; i < 50 && !freed; ++i) {
    freed = LockPostgresExperiment(url, "demo").ok();
    if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(freed);
}

// Every time the database holds, for an exact comparison.
std::string Times(Storage& db) {
  std::ostringstream out;
  out.precision(17);
  for (const ExperimentRecord& e : *db.ListExperiments()) {
    out << e.name << " " << e.created_at << " " << Num(e.ended_at) << "\n";
    for (const TrialRecord& r : *db.ListTrialRecords(e.id)) {
      out << " " << r.trial.number << " " << Num(r.started_at) << " " << Num(r.ended_at) << "\n";
    }
    for (const StoredExploit& x : *db.ListExploits(e.id)) out << " x " << x.time << "\n";
  }
  return out.str();
}

TEST_CASE("tune migrate's copy: SQLite to PostgreSQL and back, exactly", "[storage][postgres]") {
  const std::string url = NewDatabase();
  if (url.empty()) return;
  TempDir dir;
  const std::string file = dir.File("tune.db"), back = dir.File("back.db");
  std::string dump, times;
  {
    auto sqlite = Open(file);
    Script(*sqlite);
    dump = Dump(*sqlite);
    times = Times(*sqlite);
  }
  auto there = CopyExperiments(file, url, {});
  INFO(there.status().ToString());
  REQUIRE(there.ok());
  CHECK(*there == std::vector<std::string>{"alpha", "beta"});
  CHECK(Dump(*Open(url)) == dump);
  CHECK(Times(*Open(url)) == times);
  auto again = CopyExperiments(file, url, {"beta"});
  CHECK(again.status().code() == StatusCode::kFailedPrecondition);
  CHECK(again.status().message().find("'beta' already exists") != std::string::npos);
  CHECK(CopyExperiments(file, url, {"gamma"}).status().IsNotFound());

  auto home = CopyExperiments(url, back, {});
  REQUIRE(home.ok());
  CHECK(Dump(*Open(back)) == dump);
  CHECK(Times(*Open(back)) == times);

  // Into a database that has experiments: ids shift, references follow,
  // and new rows go on after the copied ones.
  auto pg = Open(url);
  REQUIRE(CopyExperiments(file, url, {}).status().code() == StatusCode::kFailedPrecondition);
  const std::string second = dir.File("second.db");
  {
    auto s = Open(second);
    auto e = s->CreateExperiment("gamma", "{}", 3);
    REQUIRE(e.ok());
    auto t = s->CreateTrial(*e, {{"lr", 0.5}});
    REQUIRE(t.ok());
    REQUIRE(s->StartTrial(t->id, 0, "").ok());
    REQUIRE(s->AppendReport(t->id, 0, Report(1, {{"loss", 0.5}}), 0.5).ok());
  }
  REQUIRE(CopyExperiments(second, url, {}).ok());
  auto gamma = pg->FindExperiment("gamma");
  REQUIRE(gamma.ok());
  CHECK(gamma->id == 3);
  auto rows = pg->ListTrialRecords(gamma->id);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK((*rows)[0].trial.id == 5);
  CHECK((*rows)[0].trial.intermediate == std::map<int64_t, double>{{1, 0.5}});
  auto next = pg->CreateTrial(gamma->id, {});
  REQUIRE(next.ok());
  CHECK(next->id == 6);
  CHECK(next->number == 1);
}

TEST_CASE("database URLs: postgresql:// selects PostgreSQL, a password in the URL is refused",
          "[storage][postgres]") {
  CHECK(IsDatabaseUrl("postgresql://u@h:5432/db"));
  CHECK(IsDatabaseUrl("postgres://u@h/db"));
  CHECK_FALSE(IsDatabaseUrl("tune.db"));
  CHECK_FALSE(IsDatabaseUrl("dir/postgresql.db"));
  CHECK(RunsDirForDatabase("postgresql://u@h/db") == "tune_runs");
  CHECK(RunsDirForDatabase("results/tune.db") == "results/tune_runs");
  for (const std::string url : {"postgresql://u:secret@h:5432/db", "postgres://u@h/db?password=secret"}) {
    auto st = OpenStorage(url);
    CHECK(st.status().IsInvalidArgument());
    CHECK(st.status().message().find("must not contain a password") != std::string::npos);
    CHECK(st.status().message().find("secret") == std::string::npos);
  }
  if (PostgresSupported()) {
    // Nothing listens on port 1: Unavailable, naming the URL.
    auto down = OpenStorage("postgresql://u@127.0.0.1:1/db");
    CHECK(down.status().code() == StatusCode::kUnavailable);
    CHECK(down.status().message().find("postgresql://u@127.0.0.1:1/db: cannot connect") == 0);
  } else {
    CHECK(OpenStorage("postgresql://u@127.0.0.1:1/db").status().code() == StatusCode::kFailedPrecondition);
  }
}

}  // namespace
}  // namespace tune
