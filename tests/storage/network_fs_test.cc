// SQLite on a network filesystem (storage/open_storage.h): refused in WAL
// mode with a pointer to PostgreSQL, or opened with a rollback journal when
// allowed, which the file then keeps. statfs's answer is stubbed (no NFS or
// FUSE mount can be made here).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "storage/open_storage.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

using testing::TempDir;

int64_t Nfs(const std::string&) { return 0x6969; }
int64_t Fuse(const std::string&) { return 0x65735546; }

// statfs answers `f` while it lives.
struct StubStatfs {
  explicit StubStatfs(int64_t (*f)(const std::string&)) { internal::statfs_type_for_testing = f; }
  ~StubStatfs() { internal::statfs_type_for_testing = nullptr; }
};

// The file's journal mode by its header: 2 = WAL, 1 = rollback journal.
int HeaderVersion(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char header[20] = {};
  f.read(header, sizeof header);
  return header[18];
}

TEST_CASE("network filesystems are told apart by statfs's f_type", "[storage][network-fs]") {
  CHECK(NetworkFilesystemName(0x6969) == "nfs");
  CHECK(NetworkFilesystemName(0xFF534D42) == "cifs");
  CHECK(NetworkFilesystemName(0xFE534D42) == "smb2");
  CHECK(NetworkFilesystemName(0x517B) == "smb");
  CHECK(NetworkFilesystemName(0x00C36400) == "ceph");
  CHECK(NetworkFilesystemName(0x65735546) == "fuse");
  CHECK(NetworkFilesystemName(0xEF53) == "");     // ext4
  CHECK(NetworkFilesystemName(0x01021994) == "");  // tmpfs
  TempDir dir;
  CHECK(NetworkFilesystemOf(dir.File("tune.db")) == "");  // the test's own disk is local
}

TEST_CASE("SQLite on a network filesystem: WAL refused with a pointer to PostgreSQL, a rollback journal when allowed",
          "[storage][network-fs]") {
  TempDir dir;
  const std::string db = dir.File("tune.db");
  {
    StubStatfs nfs(Nfs);
    auto refused = OpenStorage(db);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
    CHECK(refused.status().message().find(db + ": is on a network filesystem (nfs)") == 0);
    CHECK(refused.status().message().find("--db postgresql://") != std::string::npos);
    CHECK(refused.status().message().find("--allow-network-fs") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));  // nothing created
    CHECK(OpenStorage(db, /*create_if_missing=*/false).status().IsNotFound());

    auto allowed = OpenStorage(db, true, /*allow_network_fs=*/true);
    REQUIRE(allowed.ok());
    auto e = (*allowed)->CreateExperiment("x", "{}", 1);
    REQUIRE(e.ok());
    allowed->reset();
    CHECK(HeaderVersion(db) == 1);  // a rollback journal
    CHECK_FALSE(std::filesystem::exists(db + "-wal"));
    // The query commands open it without the flag, and keep its journal.
    auto query = OpenStorage(db, /*create_if_missing=*/false);
    REQUIRE(query.ok());
    CHECK((*query)->FindExperiment("x").ok());
    query->reset();
    CHECK(HeaderVersion(db) == 1);
    auto dashboard = OpenStorageReadOnly(db);
    REQUIRE(dashboard.ok());
    CHECK((*dashboard)->ListExperiments()->size() == 1);
  }
  // The same file on a local disk goes back to WAL.
  {
    auto local = OpenStorage(db);
    REQUIRE(local.ok());
  }
  CHECK(HeaderVersion(db) == 2);
  // A WAL file seen on FUSE: every open refused, the dashboard's too.
  StubStatfs fuse(Fuse);
  CHECK(OpenStorage(db, false).status().message().find("network filesystem (fuse)") != std::string::npos);
  CHECK(OpenStorageReadOnly(db).status().code() == StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tune
