// OpenStorage: the results database a command names, by `--db` or the
// experiment's storage.path / storage.url: a "postgresql://" (or
// "postgres://") URL is a PostgreSQL database (storage/postgres_storage.h),
// anything else an SQLite file (the default, tune.db).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "storage/storage.h"

namespace tune {

// Whether `db` is a database URL rather than an SQLite file path.
bool IsDatabaseUrl(const std::string& db);

// OpenSqliteStorage or OpenPostgresStorage, by the form of `db`.
Result<std::unique_ptr<Storage>> OpenStorage(const std::string& db, bool create_if_missing = true);

// OpenSqliteStorageReadOnly or OpenPostgresStorageReadOnly.
Result<std::unique_ptr<Storage>> OpenStorageReadOnly(const std::string& db);

// Where trial directories go for database `db`: tune_runs beside an SQLite
// file, and tune_runs in the working directory for a URL.
std::string RunsDirForDatabase(const std::string& db);

}  // namespace tune
