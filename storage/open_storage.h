// OpenStorage: the results database a command names, by `--db` or the
// experiment's storage.path / storage.url: a "postgresql://" (or
// "postgres://") URL is a PostgreSQL database (storage/postgres_storage.h),
// anything else an SQLite file (the default, tune.db).
//
// SQLite on a network filesystem: SQLite's WAL mode keeps its index in
// shared memory beside the file and needs every process on one host, so a
// file on NFS, SMB/CIFS, CephFS or FUSE (statfs's f_type) is refused in
// one sentence that points to PostgreSQL. allow_network_fs (`tune run
// --allow-network-fs`) opens it with a rollback journal instead, for one
// writer at a time; the file then keeps that journal mode, and later opens
// of it (the query commands) accept it without the flag.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "storage/storage.h"

namespace tune {

// Whether `db` is a database URL rather than an SQLite file path.
bool IsDatabaseUrl(const std::string& db);

// OpenSqliteStorage or OpenPostgresStorage, by the form of `db`.
Result<std::unique_ptr<Storage>> OpenStorage(const std::string& db, bool create_if_missing = true,
                                             bool allow_network_fs = false);

// OpenSqliteStorageReadOnly or OpenPostgresStorageReadOnly. An SQLite file
// in WAL mode on a network filesystem is refused.
Result<std::unique_ptr<Storage>> OpenStorageReadOnly(const std::string& db);

// Where trial directories go for database `db`: tune_runs beside an SQLite
// file, and tune_runs in the working directory for a URL.
std::string RunsDirForDatabase(const std::string& db);

// "nfs", "smb", "cifs", "smb2", "ceph", "fuse" for a statfs f_type of a
// network (or user-space) filesystem, else "".
std::string NetworkFilesystemName(int64_t statfs_type);

// The network filesystem an SQLite file at `path` is (or would be) on, by
// statfs of its directory; "" for a local one or when statfs fails.
std::string NetworkFilesystemOf(const std::string& path);

}  // namespace tune
