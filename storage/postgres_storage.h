// PostgresStorage: the results database on a PostgreSQL server
// (docs/database.md, "PostgreSQL"), for results that outgrow one machine:
// several tuners, dashboards and laptops reach one database, and nothing
// puts SQLite on a network filesystem.
//
// The same tables, columns and semantics as the SQLite file (Storage's
// contract in storage/storage.h): one transaction per state change, a schema
// version with migrations, several experiments from several tuners in one
// database. Readers never block the writer (PostgreSQL's MVCC: a read runs
// in a REPEATABLE READ snapshot and takes no lock a write waits for).
//
// The database is named by a libpq URL, "postgresql://user@host:5432/db"
// (or "postgres://..."); the password comes only from PGPASSWORD or
// ~/.pgpass, as libpq reads them, never from the URL (such a URL is
// refused, so none is ever printed or stored).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "storage/database_url.h"
#include "storage/storage.h"

namespace tune {

// Whether this tune was built with PostgreSQL support (libpq).
bool PostgresSupported();


// Connects to the database at `url` and brings its schema to this tune's
// version (one transaction, serialised between tuners by an advisory
// transaction lock). With create_if_missing false (the query commands) a
// database without tune's tables is NotFound. A server that cannot be
// reached is Unavailable; a database with other tables and no tune schema,
// or a newer schema version, is FailedPrecondition.
Result<std::unique_ptr<Storage>> OpenPostgresStorage(const std::string& url, bool create_if_missing = true);

// For reading only (the dashboard): the session is read-only
// (default_transaction_read_only), every read is a REPEATABLE READ READ
// ONLY transaction, and the schema is never created or upgraded (another
// version is FailedPrecondition). Every write method fails.
Result<std::unique_ptr<Storage>> OpenPostgresStorageReadOnly(const std::string& url);

// A held lock; dropping it releases it.
class ExperimentLease {
 public:
  virtual ~ExperimentLease() = default;
};

// One `tune run` per experiment and database: a session-level advisory lock
// (pg_try_advisory_lock) on a 64-bit hash of "tune run:" + experiment, held
// on a connection of its own for as long as the lease lives. The server
// releases it when that connection ends, also when the tuner is killed.
// FailedPrecondition ("experiment 'x' in URL is being run by another tune
// process") if another session holds it.
Result<std::unique_ptr<ExperimentLease>> LockPostgresExperiment(const std::string& url,
                                                                const std::string& experiment);

// The advisory lock key of `experiment` (FNV-1a 64 of "tune run:" + name),
// for pg_locks (classid = high 32 bits, objid = low 32 bits).
int64_t PostgresLockKey(const std::string& experiment);

}  // namespace tune
