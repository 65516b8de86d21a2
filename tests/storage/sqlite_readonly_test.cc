// OpenSqliteStorageReadOnly: what the dashboard reads through; what only a
// file has. A reader beside a writer, and DataVersion, are in
// storage_contract_test.cc (both engines).
#include <catch2/catch.hpp>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/storage.h"
#include "tests/common/temp_dir.h"

namespace {

using namespace tune;
using testing::TempDir;

}  // namespace

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
