// SqliteStorage on real files, what only a file has: a database file
// deleted or replaced while open. Everything every engine must do is in
// storage_contract_test.cc, run on SQLite and on PostgreSQL.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "storage/storage.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

using testing::TempDir;

std::unique_ptr<Storage> Open(const std::string& path) {
  auto s = OpenSqliteStorage(path);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(s).value();
}

TEST_CASE("a database file deleted or replaced while open fails the next write", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("tune.db");
  auto db = Open(path);
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  SECTION("deleted") {
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
  }
  SECTION("its directory deleted") {
    std::filesystem::remove_all(dir.File(""));
  }
  SECTION("replaced by another file") {
    std::filesystem::rename(path, path + ".moved");
    std::ofstream(path) << "";
  }
  auto t = db->CreateTrial(e, {});
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == StatusCode::kInternal);
  CHECK(t.status().message() == path + ": the database file was deleted or replaced while tune was using it; "
                                       "stopping, since nothing written to it from now on could be kept");
}

}  // namespace
}  // namespace tune
