// RunLock: one `tune run` (or `tune cleanup`) per experiment and database at
// a time. An advisory lock (flock) on <db>.<experiment>.lock, released by
// the kernel if the holder dies. Only the holder removes the file, and a
// holder checks after locking that the path still names the file it locked
// (another holder may have just removed it). For a postgresql:// database,
// a PostgreSQL advisory lock instead (LockPostgresExperiment), released by
// the server when the holder's session ends.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "storage/postgres_storage.h"

namespace tune {

class RunLock {
 public:
  RunLock() = default;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();  // releases the lock and removes its file, if held

  // Takes the lock without waiting. FailedPrecondition ("experiment 'x' in
  // DB is being run by another tune process") if another process holds it;
  // InvalidArgument if the lock file cannot be created beside the database.
  Status Acquire(const std::string& db_path, const std::string& experiment);

 private:
  std::string path_;
  int fd_ = -1;  // >= 0 only while we hold the lock
  std::unique_ptr<ExperimentLease> lease_;  // a PostgreSQL database's lock
};

}  // namespace tune
