// StorageUnderTest: a fresh, empty results database on one engine, for the
// tests that hold for every Storage (storage/storage.h's contract), as
// Optuna runs one suite over every storage (its tests' STORAGE_MODES):
// - "sqlite": a new file in a TempDir;
// - "postgresql": a new database on a throwaway PostgreSQL server
//   (tests/storage/postgres_server.h, one per test process, started on
//   first use and removed at exit).
// Where PostgreSQL cannot be tested (built without libpq, or no server
// binaries: scripts/install-deps.sh --test installs them), ok() is false
// after one WARN naming why, and the test returns early: skipped, not
// failed.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/open_storage.h"
#include "storage/postgres_storage.h"
#include "storage/storage.h"
#include "tests/common/temp_dir.h"
#include "tests/storage/postgres_server.h"

namespace tune::testing {

// The shared server of this test process.
inline PostgresServer& SharedPostgresServer() {
  static PostgresServer server;
  return server;
}

// A new empty database named `name` on the shared server, as a URL; "" after
// one WARN naming why where PostgreSQL cannot be tested here (skip then).
inline std::string NewPostgresDatabase(const std::string& name) {
  if (!PostgresSupported()) {
    WARN("built without libpq: PostgreSQL is not tested");
    return "";
  }
  if (!SharedPostgresServer().ok()) {
    WARN("no PostgreSQL server: " << SharedPostgresServer().why_not());
    return "";
  }
  return SharedPostgresServer().CreateDatabase(name);
}

class StorageUnderTest {
 public:
  // A new empty database on `engine` ("sqlite" or "postgresql"), opened.
  explicit StorageUnderTest(const std::string& engine) : engine_(engine) {
    if (engine == "sqlite") {
      target_ = dir_.File("tune.db");
    } else {
      REQUIRE(engine == "postgresql");
      if (!PostgresSupported()) {
        WARN("built without libpq: the PostgreSQL case is skipped");
        return;
      }
      PostgresServer& server = SharedPostgresServer();
      if (!server.ok()) {
        WARN("no PostgreSQL server, the PostgreSQL case is skipped: " << server.why_not());
        return;
      }
      static int n = 0;
      pg_name_ = "tune_contract_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
      target_ = server.CreateDatabase(pg_name_);
    }
    db_ = Reopen();
  }

  // False where the engine cannot be tested here (then skip the test).
  bool ok() const { return db_ != nullptr; }
  const std::string& engine() const { return engine_; }
  // The SQLite file's path or the PostgreSQL URL.
  const std::string& target() const { return target_; }
  Storage& db() { return *db_; }
  // Closes the storage (as a tuner that ends).
  void Close() { db_.reset(); }

  // A second storage on the same database (another tuner: --resume).
  std::unique_ptr<Storage> Reopen() const {
    auto s = OpenStorage(target_);
    INFO(s.status().ToString());
    REQUIRE(s.ok());
    return std::move(s).value();
  }

  // The read-only opening (the dashboard's) of the same database.
  std::unique_ptr<Storage> ReadOnly() const {
    auto s = OpenStorageReadOnly(target_);
    INFO(s.status().ToString());
    REQUIRE(s.ok());
    return std::move(s).value();
  }

  // `sql` (a query for one number, written in the SQL both engines speak)
  // on a connection of its own, as the integer it answers.
  int64_t Count(const std::string& sql) const {
    if (engine_ == "sqlite") {
      SQLite::Database raw(target_, SQLite::OPEN_READONLY);
      return raw.execAndGet(sql).getInt64();
    }
    const std::string out = SharedPostgresServer().Psql(pg_name_, sql);
    INFO(sql << ": " << out);
    REQUIRE(!out.empty());
    REQUIRE(out.find_first_not_of("-0123456789\n") == std::string::npos);
    return std::stoll(out);
  }

 private:
  std::string engine_;
  TempDir dir_{"contract"};
  std::string target_, pg_name_;
  std::unique_ptr<Storage> db_;
};

}  // namespace tune::testing
