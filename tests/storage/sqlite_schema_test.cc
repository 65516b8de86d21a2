// The schema version check and the connection settings, on real files.
#include <catch2/catch.hpp>

#include <cmath>

#include <fstream>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/sqlite_schema.h"
#include "storage/storage.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

// Takes a current database back to version 2, as an earlier tune wrote it:
// no reports.excluded, and the old observation_logs view.
// Version 5: no exploits, reports.carried_from or trials.failed_attempts.
void RewindToV6(SQLite::Database& raw) { raw.exec("DROP TABLE trial_values; PRAGMA user_version = 6;"); }

void RewindToV5(SQLite::Database& raw) {
  RewindToV6(raw);
  raw.exec(
      "DROP TABLE exploits; ALTER TABLE reports DROP COLUMN carried_from; "
      "ALTER TABLE trials DROP COLUMN failed_attempts; PRAGMA user_version = 5;");
}

void RewindToV4(SQLite::Database& raw) {
  RewindToV5(raw);
  raw.exec("DROP INDEX trials_by_value; PRAGMA user_version = 4;");
}

void RewindToV3(SQLite::Database& raw) {
  RewindToV4(raw);
  raw.exec("DROP TABLE tracking_runs; PRAGMA user_version = 3;");
}

void RewindToV2(SQLite::Database& raw) {
  RewindToV3(raw);
  raw.exec(R"sql(
    DROP VIEW observation_logs;
    ALTER TABLE reports DROP COLUMN excluded;
    CREATE VIEW observation_logs AS
      SELECT t.experiment_id AS experiment_id, t.id AS trial_id, t.number AS trial_number,
             r.attempt AS attempt, (r.attempt = t.attempt AND t.state <> 'pending') AS is_current,
             r.id AS report_id, r.step AS step, r.time AS time, m.name AS metric, m.value AS value
      FROM metrics m JOIN reports r ON r.id = m.report_id JOIN trials t ON t.id = r.trial_id;
    PRAGMA user_version = 2;
  )sql");
}

TEST_CASE("a new database gets WAL mode and the current schema version", "[storage][schema]") {
  testing::TempDir dir;
  const std::string path = dir.File("new.db");
  REQUIRE(OpenSqliteStorage(path).ok());
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  CHECK(raw.execAndGet("PRAGMA journal_mode").getString() == "wal");
  CHECK(raw.execAndGet("PRAGMA user_version").getInt() == internal::kSchemaVersion);
  for (const char* table : {"experiments", "trials", "trial_params", "reports", "metrics"}) {
    CHECK(raw.tableExists(table));
  }
  // Opening again (an existing, current database) changes nothing.
  REQUIRE(OpenSqliteStorage(path).ok());
  CHECK(raw.execAndGet("PRAGMA user_version").getInt() == internal::kSchemaVersion);
}

TEST_CASE("an in-memory database works for tests of other modules", "[storage][schema]") {
  auto db = OpenSqliteStorage(":memory:");
  REQUIRE(db.ok());
  auto e = (*db)->CreateExperiment("mem", "{}", 1);
  REQUIRE(e.ok());
  auto t = (*db)->CreateTrial(*e, {{"r", int64_t{4}}});
  REQUIRE(t.ok());
  CHECK((*(*db)->ListTrials(*e))[0].params == ParamMap{{"r", int64_t{4}}});
}

TEST_CASE("the schema rejects orphan trials and unknown states", "[storage][schema]") {
  testing::TempDir dir;
  const std::string path = dir.File("fk.db");
  auto db = std::move(OpenSqliteStorage(path)).value();
  // CreateTrial on a missing experiment is NotFound before any insert; a
  // raw insert with the same pragma shows the constraint itself exists.
  CHECK(db->CreateTrial(42, {}).status().IsNotFound());
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  raw.exec("PRAGMA foreign_keys = ON");
  CHECK_THROWS_AS(raw.exec("INSERT INTO trials (experiment_id, number, state, params_json) "
                           "VALUES (42, 0, 'pending', '{}')"),
                  SQLite::Exception);
  CHECK_THROWS_AS(raw.exec("INSERT INTO experiments (name, spec_json, state, seed, created_at) "
                           "VALUES ('x', '{}', 'exploding', 1, 0)"),
                  SQLite::Exception);
}

TEST_CASE("a database from a newer tune is refused with a clear message", "[storage][schema]") {
  testing::TempDir dir;
  const std::string path = dir.File("future.db");
  REQUIRE(OpenSqliteStorage(path).ok());
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec("PRAGMA user_version = " + std::to_string(internal::kSchemaVersion + 1));
  }
  auto opened = OpenSqliteStorage(path);
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().code() == StatusCode::kFailedPrecondition);
  const std::string& m = opened.status().message();
  CHECK(m.find(path) != std::string::npos);
  CHECK(m.find("schema version " + std::to_string(internal::kSchemaVersion + 1)) !=
        std::string::npos);
  CHECK(m.find("newer tune") != std::string::npos);
}

TEST_CASE("a version 1 database is upgraded in place and keeps its experiments", "[storage][schema]") {
  testing::TempDir dir;
  const std::string path = dir.File("v1.db");
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    REQUIRE(db->CreateExperiment("old", "{}", 3).ok());
  }
  {
    // Back to version 1 as an earlier tune wrote it.
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    RewindToV2(raw);
    raw.exec("ALTER TABLE experiments DROP COLUMN run_seconds");
    raw.exec("PRAGMA user_version = 1");
  }
  auto db = OpenSqliteStorage(path);
  REQUIRE(db.ok());
  auto old = (*db)->FindExperiment("old");
  REQUIRE(old.ok());
  CHECK(old->seed == 3);
  CHECK(old->run_seconds == 0);
  REQUIRE((*db)->SetExperimentRunSeconds(old->id, 12.5).ok());
  CHECK((*db)->FindExperiment("old")->run_seconds == 12.5);
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  CHECK(raw.execAndGet("PRAGMA user_version").getInt() == internal::kSchemaVersion);
}

TEST_CASE("a version 2 database gains reports.excluded and keeps its reports", "[storage][schema]") {
  testing::TempDir dir;
  const std::string path = dir.File("v2.db");
  TrialId trial = 0;
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    ExperimentId e = *db->CreateExperiment("old", "{}", 3);
    trial = db->CreateTrial(e, {})->id;
    REQUIRE(db->StartTrial(trial, 0, "local").ok());
    MetricReport r;
    r.step = 4;
    r.values["loss"] = 0.5;
    REQUIRE(db->AppendReport(trial, 0, r, 0.5).ok());
  }
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    RewindToV2(raw);
  }
  auto db = OpenSqliteStorage(path);
  REQUIRE(db.ok());
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    CHECK(raw.execAndGet("PRAGMA user_version").getInt() == internal::kSchemaVersion);
    CHECK(raw.execAndGet("SELECT count(*) FROM observation_logs WHERE excluded IS NULL AND step = 4").getInt() == 1);
  }
  // The old report still counts; a new excluded one is stored and marked.
  MetricReport late;
  late.step = 9;
  late.values["loss"] = 0.1;
  REQUIRE((*db)->AppendExcludedReport(trial, 0, late, 0.1, "after max_t").ok());
  auto reports = (*db)->ListTrialReports(trial);
  REQUIRE(reports.ok());
  REQUIRE(reports->size() == 2);
  CHECK(reports->at(0).excluded.empty());
  CHECK(reports->at(1).excluded == "after max_t");
  auto trials = (*db)->ListTrials((*db)->FindExperiment("old")->id);
  REQUIRE(trials.ok());
  CHECK(trials->at(0).intermediate == std::map<int64_t, double>{{4, 0.5}});
  CHECK(trials->at(0).value == 0.5);
}

TEST_CASE("a version 3 database gains tracking_runs and keeps its trials", "[storage][schema]") {
  testing::TempDir dir;
  const std::string path = dir.File("v3.db");
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    ExperimentId e = *db->CreateExperiment("old", "{}", 3);
    REQUIRE(db->CreateTrial(e, {}).ok());
  }
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    RewindToV3(raw);
  }
  auto db = OpenSqliteStorage(path);
  REQUIRE(db.ok());
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    CHECK(raw.execAndGet("PRAGMA user_version").getInt() == internal::kSchemaVersion);
  }
  ExperimentId e = (*db)->FindExperiment("old")->id;
  CHECK((*db)->ListTrials(e)->size() == 1);
  REQUIRE((*db)->SetTrackingRun(e, "mlflow http://h:5000 experiment 1", 0, "abc").ok());
  CHECK(*(*db)->ListTrackingRuns(e, "mlflow http://h:5000 experiment 1") == std::map<int, std::string>{{0, "abc"}});
}

TEST_CASE("a version 4 database gains the index that finds the best value without a sort", "[storage][schema]") {
  testing::TempDir dir;
  const std::string path = dir.File("v4.db");
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    ExperimentId e = *db->CreateExperiment("old", "{}", 3);
    for (double v : {0.7, 0.2, 0.9}) {
      TrialId t = db->CreateTrial(e, {})->id;
      REQUIRE(db->StartTrial(t, 0, "local").ok());
      REQUIRE(db->FinishTrial(t, TrialState::kCompleted, v, std::nullopt, "").ok());
    }
  }
  // SQLite's plan for the best value: one line per step.
  auto best_plan = [](SQLite::Database& raw) {
    SQLite::Statement plan(raw,
                           "EXPLAIN QUERY PLAN SELECT number, value FROM trials WHERE experiment_id = 1 AND "
                           "state = 'completed' AND value BETWEEN -1e308 AND 1e308 ORDER BY value, number LIMIT 1");
    std::string steps;
    while (plan.executeStep()) steps += plan.getColumn(3).getString() + "\n";
    return steps;
  };
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    RewindToV4(raw);
    CHECK(best_plan(raw).find("TEMP B-TREE") != std::string::npos);  // the sort the index saves
  }
  auto db = OpenSqliteStorage(path);
  REQUIRE(db.ok());
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    CHECK(raw.execAndGet("PRAGMA user_version").getInt() == internal::kSchemaVersion);
    // Read from the index alone, already in order: no temporary sort.
    const std::string steps = best_plan(raw);
    INFO(steps);
    CHECK(steps.find("COVERING INDEX trials_by_value") != std::string::npos);
    CHECK(steps.find("TEMP B-TREE") == std::string::npos);
  }
  ExperimentId e = (*db)->FindExperiment("old")->id;
  auto tally = (*db)->TallyTrials(e, /*maximize=*/false);
  REQUIRE(tally.ok());
  CHECK(tally->best == std::make_pair(1, 0.2));
  CHECK((*db)->TallyTrials(e, /*maximize=*/true)->best == std::make_pair(2, 0.9));
}

TEST_CASE("a version 5 database gains exploits, carried reports and failed attempts", "[storage][schema]") {
  testing::TempDir dir;
  const std::string path = dir.File("v5.db");
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    ExperimentId e = *db->CreateExperiment("old", "{}", 3);
    TrialId t = db->CreateTrial(e, {{"lr", 0.1}})->id;
    REQUIRE(db->StartTrial(t, 0, "local").ok());
    MetricReport m;
    m.step = 5;
    m.values = {{"loss", 1.0}};
    REQUIRE(db->AppendReport(t, 0, m, 1.0).ok());
  }
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    RewindToV5(raw);
    CHECK_FALSE(raw.tableExists("exploits"));
  }
  auto db = OpenSqliteStorage(path);
  REQUIRE(db.ok());
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    CHECK(raw.execAndGet("PRAGMA user_version").getInt() == internal::kSchemaVersion);
    CHECK(raw.tableExists("exploits"));
    // The old report is an original (not carried); the trial never failed.
    CHECK(raw.execAndGet("SELECT COUNT(*) FROM reports WHERE carried_from IS NULL").getInt() == 1);
    CHECK(raw.execAndGet("SELECT failed_attempts FROM trials").getInt() == 0);
  }
  ExperimentId e = (*db)->FindExperiment("old")->id;
  auto records = (*db)->ListTrialRecords(e);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 1);
  CHECK((*records)[0].last_step == 5);
  CHECK((*records)[0].failed_attempts == 0);
  CHECK((*db)->ListExploits(e)->empty());
}

TEST_CASE("a version 6 database gains trial_values, its trials keeping their one value", "[storage][schema]") {
  testing::TempDir dir;
  const std::string path = dir.File("v6.db");
  TrialId done = 0, open = 0;
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    ExperimentId e = *db->CreateExperiment("old", "{}", 3);
    done = db->CreateTrial(e, {{"lr", 0.1}})->id;
    open = db->CreateTrial(e, {{"lr", 0.2}})->id;
    REQUIRE(db->StartTrial(done, 0, "local").ok());
    REQUIRE(db->FinishTrial(done, TrialState::kCompleted, 0.5, std::nullopt, "completed").ok());
    REQUIRE(db->StartTrial(open, 0, "local").ok());
  }
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    RewindToV6(raw);
    CHECK_FALSE(raw.tableExists("trial_values"));
  }
  auto db = OpenSqliteStorage(path);
  REQUIRE(db.ok());
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    CHECK(raw.execAndGet("PRAGMA user_version").getInt() == internal::kSchemaVersion);
    CHECK(raw.tableExists("trial_values"));
  }
  // The running trial finishes with several values; NaN reads back as NaN.
  REQUIRE((*db)
              ->FinishTrialWithValues(open, TrialState::kCompleted, 0.25, {0.25, std::nan("")}, {-1.5}, std::nullopt,
                                      "completed")
              .ok());
  ExperimentId e = (*db)->FindExperiment("old")->id;
  auto trials = (*db)->ListTrials(e);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 2);
  CHECK((*trials)[0].value == 0.5);
  CHECK((*trials)[0].values.empty());
  REQUIRE((*trials)[1].values.size() == 2);
  CHECK((*trials)[1].values[0] == 0.25);
  CHECK(std::isnan((*trials)[1].values[1]));
  CHECK((*trials)[1].constraints == std::vector<double>{-1.5});
  auto one = (*db)->GetTrialSummary(open);
  REQUIRE(one.ok());
  CHECK(one->trial.constraints == std::vector<double>{-1.5});
  // A finished trial is immutable, its values too.
  CHECK_FALSE((*db)->FinishTrialWithValues(open, TrialState::kCompleted, 1, {1, 1}, {1}, std::nullopt, "again").ok());
  CHECK((*db)->ListTrialSummaries(e)->at(1).trial.values.at(0) == 0.25);
}

TEST_CASE("files that are not tune databases are refused", "[storage][schema]") {
  testing::TempDir dir;
  SECTION("another application's SQLite file") {
    const std::string path = dir.File("other.db");
    {
      SQLite::Database raw(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
      raw.exec("CREATE TABLE notes (body TEXT)");
    }
    auto opened = OpenSqliteStorage(path);
    CHECK(opened.status().code() == StatusCode::kFailedPrecondition);
    CHECK(opened.status().message().find("not a tune results database") != std::string::npos);
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    CHECK_FALSE(raw.tableExists("trials"));  // left untouched
    CHECK(raw.execAndGet("PRAGMA journal_mode").getString() == "delete");  // not switched to WAL
  }
  SECTION("a text file") {
    const std::string path = dir.File("experiment.json");
    std::ofstream(path) << "{\"name\": \"this is not a database, but it is long enough\"}\n";
    auto opened = OpenSqliteStorage(path);
    CHECK(opened.status().code() == StatusCode::kFailedPrecondition);
    CHECK(opened.status().message().find("not an SQLite database") != std::string::npos);
  }
  SECTION("a missing file when the caller does not want one created") {
    const std::string path = dir.File("missing.db");
    CHECK(OpenSqliteStorage(path, /*create_if_missing=*/false).status().IsNotFound());
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("a directory that does not exist") {
    auto opened = OpenSqliteStorage(dir.File("no/such/dir/tune.db"));
    CHECK_FALSE(opened.ok());
  }
}

}  // namespace
}  // namespace tune
