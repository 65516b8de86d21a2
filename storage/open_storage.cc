#include "storage/open_storage.h"

#include <filesystem>

#include "storage/postgres_storage.h"

namespace tune {

bool IsDatabaseUrl(const std::string& db) { return IsPostgresUrl(db); }

Result<std::unique_ptr<Storage>> OpenStorage(const std::string& db, bool create_if_missing) {
  if (IsPostgresUrl(db)) return OpenPostgresStorage(db, create_if_missing);
  return OpenSqliteStorage(db, create_if_missing);
}

Result<std::unique_ptr<Storage>> OpenStorageReadOnly(const std::string& db) {
  if (IsPostgresUrl(db)) return OpenPostgresStorageReadOnly(db);
  return OpenSqliteStorageReadOnly(db);
}

std::string RunsDirForDatabase(const std::string& db) {
  namespace fs = std::filesystem;
  if (IsDatabaseUrl(db)) return "tune_runs";
  fs::path dir = fs::path(db).parent_path();
  return (dir.empty() ? fs::path("tune_runs") : dir / "tune_runs").string();
}

}  // namespace tune
