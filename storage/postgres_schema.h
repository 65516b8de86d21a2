// The PostgreSQL form of the results database schema (docs/database.md,
// "PostgreSQL"): the same tables, columns and view as the SQLite file, at the
// same schema version (storage/sqlite_schema.h, kSchemaVersion), in
// PostgreSQL's types (INTEGER -> BIGINT, REAL -> DOUBLE PRECISION).
//
// The version lives in the row ('schema_version', N) of the table
// tune_meta, beside ('data_version', N), which every write transaction
// increments (Storage::DataVersion). A migration takes the schema from
// `from` to the next migration's `from` (the last one to kSchemaVersion);
// the first one, from 0, creates the whole schema of an empty database.
// PostgreSQL's DDL is transactional: an open runs the missing migrations in
// one transaction, so a crash leaves the old version intact.
#pragma once

#include <vector>

namespace tune::internal {

struct PostgresMigration {
  int from;         // the version it upgrades
  int to;           // the version it leaves
  const char* sql;  // several statements, run as one simple query
};

// In order; the last one's `to` is kSchemaVersion.
const std::vector<PostgresMigration>& PostgresMigrations();

}  // namespace tune::internal
