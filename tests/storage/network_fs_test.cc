// SQLite on a network filesystem (storage/open_storage.h): refused in WAL
// mode with a pointer to PostgreSQL, or opened with a rollback journal when
// allowed, which the file then keeps. On a real FUSE mount (bindfs over a
// temporary directory: FUSE is what the check can mount here; NFS, CIFS
// and CephFS differ only in statfs's f_type, checked by name). Where no
// FUSE mount can be made (no bindfs, no /dev/fuse), the mount cases WARN
// and are skipped.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "storage/open_storage.h"
#include "tests/common/run_tune.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

using testing::Quote;
using testing::Sh;
using testing::TempDir;

// The file's journal mode by its header: 2 = WAL, 1 = rollback journal.
int HeaderVersion(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char header[20] = {};
  f.read(header, sizeof header);
  return header[18];
}

// `dir`/disk seen through a FUSE mount at `dir`/fuse while it lives.
class FuseMount {
 public:
  explicit FuseMount(const std::filesystem::path& dir) : disk_(dir / "disk"), mount_(dir / "fuse") {
    std::filesystem::create_directories(disk_);
    std::filesystem::create_directories(mount_);
    testing::Output o = Sh("bindfs " + Quote(disk_.string()) + " " + Quote(mount_.string()));
    mounted_ = o.code == 0 && NetworkFilesystemOf((mount_ / "x").string()) == "fuse";
    if (!mounted_) why_ = "bindfs " + std::to_string(o.code) + ": " + o.out;
  }
  ~FuseMount() {
    // Unmounted before TempDir removes the tree, whatever the test did.
    if (mounted_) Sh("fusermount -u " + Quote(mount_.string()) + " || umount " + Quote(mount_.string()));
  }
  bool ok() const { return mounted_; }
  const std::string& why_not() const { return why_; }
  std::string File(const std::string& name) const { return (mount_ / name).string(); }
  std::string DiskFile(const std::string& name) const { return (disk_ / name).string(); }

 private:
  std::filesystem::path disk_, mount_;
  bool mounted_ = false;
  std::string why_;
};

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

TEST_CASE("SQLite on a FUSE mount: WAL refused with a pointer to PostgreSQL, a rollback journal when allowed",
          "[storage][network-fs]") {
  TempDir dir;
  const std::string local_path = dir.File("disk/tune.db");
  {
    FuseMount fuse(dir.path);
    if (!fuse.ok()) {
      WARN("no FUSE mount can be made here, the case is skipped: " << fuse.why_not());
      return;
    }
    const std::string db = fuse.File("tune.db");
    CHECK(NetworkFilesystemOf(db) == "fuse");
    auto refused = OpenStorage(db);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
    CHECK(refused.status().message().find(db + ": is on a network filesystem (fuse)") == 0);
    CHECK(refused.status().message().find("--db postgresql://") != std::string::npos);
    CHECK(refused.status().message().find("--allow-network-fs") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));  // nothing created
    CHECK(OpenStorage(db, /*create_if_missing=*/false).status().IsNotFound());

    auto allowed = OpenStorage(db, true, /*allow_network_fs=*/true);
    REQUIRE(allowed.ok());
    REQUIRE((*allowed)->CreateExperiment("x", "{}", 1).ok());
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
    dashboard->reset();

    // The same file on the local disk under the mount goes back to WAL...
    REQUIRE(OpenStorage(local_path).ok());
    CHECK(HeaderVersion(local_path) == 2);
    // ...and a WAL file seen through FUSE is refused for every open, the
    // dashboard's too.
    CHECK(OpenStorage(db, false).status().message().find("network filesystem (fuse)") != std::string::npos);
    CHECK(OpenStorageReadOnly(db).status().code() == StatusCode::kFailedPrecondition);
  }
  CHECK(std::filesystem::exists(local_path));  // unmounted: the disk copy stays
}

TEST_CASE("tune run refuses a database on a FUSE mount in one sentence, and runs there with --allow-network-fs",
          "[storage][network-fs]") {
  TempDir dir;
  FuseMount fuse(dir.path);
  if (!fuse.ok()) {
    WARN("no FUSE mount can be made here, the case is skipped: " << fuse.why_not());
    return;
  }
  const std::string spec = dir.File("e.json");
  std::ofstream(spec) << R"({"name": "nfs", "objective": {"metric": "loss", "mode": "min"},
    "parameters": {"x": {"type": "uniform", "low": 0, "high": 1}}, "limits": {"max_trials": 2},
    "trial": {"command": ["sh", "-c", "echo step=1 loss=${x}"]}})";
  const std::string db = fuse.File("tune.db");
  testing::Output refused = Sh(testing::Tune("run " + Quote(spec) + " --db " + Quote(db) + " --quiet"));
  CHECK(refused.code == 2);
  CHECK(refused.out.find(db + ": is on a network filesystem (fuse)") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(db));
  testing::Output allowed =
      Sh(testing::Tune("run " + Quote(spec) + " --db " + Quote(db) + " --quiet --allow-network-fs"));
  INFO(allowed.out);
  CHECK(allowed.code == 0);
  testing::Output best = Sh(testing::Tune("best --db " + Quote(db) + " --format json"));
  CHECK(best.code == 0);
  CHECK(HeaderVersion(db) == 1);
}

}  // namespace
}  // namespace tune
