#include "storage/open_storage.h"

#include <sys/vfs.h>

#include <filesystem>
#include <fstream>

#include "storage/postgres_storage.h"

namespace tune {

namespace {

// Whether the SQLite file at `path` is in WAL mode (its header's read and
// write format versions, bytes 18 and 19, are 2); false for a missing file.
bool InWalMode(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char header[20] = {};
  if (!f.read(header, sizeof header)) return false;
  return header[18] == 2 || header[19] == 2;
}

bool Exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

Status OnNetworkFs(const std::string& path, const std::string& fs) {
  return Status::FailedPrecondition(
      path + ": is on a network filesystem (" + fs +
      "), where SQLite's WAL mode does not work (it needs every process on one host); keep the results in "
      "PostgreSQL (--db postgresql://user@host:5432/db, docs/database.md), on a local disk, or pass "
      "--allow-network-fs to tune run for a rollback journal and one writer at a time");
}

}  // namespace

bool IsDatabaseUrl(const std::string& db) { return IsPostgresUrl(db); }

std::string NetworkFilesystemName(int64_t t) {
  switch (static_cast<uint32_t>(t)) {
    case 0x6969u: return "nfs";
    case 0x517Bu: return "smb";
    case 0xFF534D42u: return "cifs";
    case 0xFE534D42u: return "smb2";
    case 0x00C36400u: return "ceph";
    case 0x65735546u: return "fuse";
    default: return "";
  }
}

std::string NetworkFilesystemOf(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const std::string where = dir.empty() ? "." : dir.string();
  struct statfs fs {};
  if (::statfs(where.c_str(), &fs) != 0) return "";
  return NetworkFilesystemName(static_cast<int64_t>(fs.f_type));
}

Result<std::unique_ptr<Storage>> OpenStorage(const std::string& db, bool create_if_missing, bool allow_network_fs) {
  if (IsPostgresUrl(db)) return OpenPostgresStorage(db, create_if_missing);
  const std::string fs = NetworkFilesystemOf(db);
  if (fs.empty()) return OpenSqliteStorage(db, create_if_missing);
  // A file a run with --allow-network-fs made keeps its rollback journal.
  const bool journal = Exists(db) && !InWalMode(db);
  if (!allow_network_fs && !journal) {
    if (!create_if_missing && !Exists(db)) return OpenSqliteStorage(db, create_if_missing);  // NotFound
    return OnNetworkFs(db, fs);
  }
  return OpenSqliteStorage(db, create_if_missing, /*wal=*/false);
}

Result<std::unique_ptr<Storage>> OpenStorageReadOnly(const std::string& db) {
  if (IsPostgresUrl(db)) return OpenPostgresStorageReadOnly(db);
  if (Exists(db) && InWalMode(db)) {
    if (std::string fs = NetworkFilesystemOf(db); !fs.empty()) return OnNetworkFs(db, fs);
  }
  return OpenSqliteStorageReadOnly(db);
}

std::string RunsDirForDatabase(const std::string& db) {
  namespace fs = std::filesystem;
  if (IsDatabaseUrl(db)) return "tune_runs";
  fs::path dir = fs::path(db).parent_path();
  return (dir.empty() ? fs::path("tune_runs") : dir / "tune_runs").string();
}

}  // namespace tune
