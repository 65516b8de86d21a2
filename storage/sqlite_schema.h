// The results database schema and its versions (docs/database.md).
//
// The version lives in `PRAGMA user_version`. Migration i (0-based) upgrades
// a database from version i to i + 1; migration 0 creates the schema of an
// empty file. Opening runs every missing migration in order inside one
// IMMEDIATE transaction, so two processes opening the same new file at once
// cannot both create it, and a crash leaves the old version intact.
#pragma once

#include <string>

#include "core/status.h"

namespace SQLite {
class Database;
}

namespace tune::internal {

// The version this build writes; the number of migrations.
inline constexpr int kSchemaVersion = 7;

// Brings `db` (opened on `path`, used in messages) to kSchemaVersion.
// FailedPrecondition if the file was written by a newer tune (its version is
// above kSchemaVersion) or is an SQLite file that is not a tune database.
// Call once per connection, before any other statement. Not thread-safe.
Status EnsureSchema(SQLite::Database& db, const std::string& path);

}  // namespace tune::internal
