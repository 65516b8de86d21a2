// OpenSqliteStorageReadOnly: what the dashboard reads through.
#include <catch2/catch.hpp>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/storage.h"
#include "tests/common/temp_dir.h"

namespace {

using namespace tune;
using testing::TempDir;

}  // namespace

TEST_CASE("a read-only storage reads what a writer commits and writes nothing", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("tune.db");
  auto writer = OpenSqliteStorage(path);
  REQUIRE(writer.ok());
  auto e = (*writer)->CreateExperiment("alpha", R"({"name": "alpha"})", 1);
  REQUIRE(e.ok());
  auto t = (*writer)->CreateTrial(*e, {{"lr", 0.1}});
  REQUIRE(t.ok());

  auto reader = OpenSqliteStorageReadOnly(path);
  REQUIRE(reader.ok());
  REQUIRE((*reader)->ListTrials(*e)->size() == 1);
  // A change committed later is seen by the next read (WAL: no blocking).
  REQUIRE((*writer)->StartTrial(t->id, 0, "local:pid 1").ok());
  CHECK((*reader)->ListTrials(*e)->at(0).state == TrialState::kRunning);
  // Every write fails.
  CHECK_FALSE((*reader)->CreateExperiment("beta", "{}", 1).ok());
  CHECK_FALSE((*reader)->CreateTrial(*e, {}).ok());
  CHECK((*writer)->ListExperiments()->size() == 1);
}

TEST_CASE("DataVersion changes when another connection commits, and only then", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("tune.db");
  auto writer = OpenSqliteStorage(path);
  REQUIRE(writer.ok());
  auto e = (*writer)->CreateExperiment("alpha", R"({"name": "alpha"})", 1);
  REQUIRE(e.ok());
  auto reader = OpenSqliteStorageReadOnly(path);
  REQUIRE(reader.ok());
  auto v0 = (*reader)->DataVersion();
  REQUIRE(v0.ok());
  // Reads, its own or the writer's, change nothing.
  REQUIRE((*reader)->ListTrials(*e).ok());
  REQUIRE((*writer)->ListExperiments().ok());
  CHECK(*(*reader)->DataVersion() == *v0);
  // Each commit by the writer does.
  REQUIRE((*writer)->CreateTrial(*e, {{"lr", 0.1}}).ok());
  auto v1 = (*reader)->DataVersion();
  REQUIRE(v1.ok());
  CHECK(*v1 != *v0);
  CHECK(*(*reader)->DataVersion() == *v1);
  REQUIRE((*writer)->SetExperimentRunSeconds(*e, 5.0).ok());
  CHECK(*(*reader)->DataVersion() != *v1);
  // A failed write by the reader is no commit.
  const int64_t before = *(*reader)->DataVersion();
  CHECK_FALSE((*reader)->CreateTrial(*e, {}).ok());
  CHECK(*(*reader)->DataVersion() == before);
}

TEST_CASE("a read-only open refuses a missing file, a foreign or an older file, and changes none", "[storage]") {
  TempDir dir;
  CHECK(OpenSqliteStorageReadOnly(dir.File("none.db")).status().IsNotFound());
  CHECK_FALSE(std::filesystem::exists(dir.File("none.db")));

  {
    SQLite::Database other(dir.File("other.db"), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    other.exec("CREATE TABLE x (a)");
  }
  auto foreign = OpenSqliteStorageReadOnly(dir.File("other.db"));
  CHECK(foreign.status().code() == StatusCode::kFailedPrecondition);
  CHECK(foreign.status().message() == dir.File("other.db") + ": is not a tune results database (it has no tune schema version)");

  {
    REQUIRE(OpenSqliteStorage(dir.File("old.db")).ok());
    SQLite::Database old(dir.File("old.db"), SQLite::OPEN_READWRITE);
    old.exec("PRAGMA user_version = 2");
  }
  auto older = OpenSqliteStorageReadOnly(dir.File("old.db"));
  CHECK(older.status().code() == StatusCode::kFailedPrecondition);
  CHECK(older.status().message().find("schema version 2") != std::string::npos);
  SQLite::Database check(dir.File("old.db"), SQLite::OPEN_READONLY);
  CHECK(check.execAndGet("PRAGMA user_version").getInt() == 2);  // not upgraded
}
