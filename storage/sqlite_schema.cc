#include "storage/sqlite_schema.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

namespace tune::internal {
namespace {

// Version 1: the first schema. Every table and column is public (users query
// them with plain SQL) and documented in docs/database.md; change them only
// through a new migration appended below.
constexpr const char kCreateV1[] = R"sql(
CREATE TABLE experiments (
  id          INTEGER PRIMARY KEY,
  name        TEXT    NOT NULL UNIQUE,
  spec_json   TEXT    NOT NULL,
  state       TEXT    NOT NULL
              CHECK (state IN ('running', 'completed', 'failed', 'stopped')),
  seed        INTEGER NOT NULL,
  created_at  REAL    NOT NULL,
  ended_at    REAL,
  message     TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE trials (
  id             INTEGER PRIMARY KEY,
  experiment_id  INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
  number         INTEGER NOT NULL,
  state          TEXT    NOT NULL
                 CHECK (state IN ('pending', 'running', 'paused', 'completed',
                                  'pruned', 'failed', 'stopped')),
  params_json    TEXT    NOT NULL,
  value          REAL,
  attempt        INTEGER NOT NULL DEFAULT 0,
  started_at     REAL,
  ended_at       REAL,
  last_step      INTEGER,
  pruned_rung    INTEGER,
  location       TEXT    NOT NULL DEFAULT '',
  message        TEXT    NOT NULL DEFAULT '',
  UNIQUE (experiment_id, number)
);
CREATE INDEX trials_by_state ON trials (experiment_id, state);

CREATE TABLE trial_params (
  trial_id    INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  name        TEXT    NOT NULL,
  type        TEXT    NOT NULL CHECK (type IN ('int', 'float', 'bool', 'string')),
  value_text  TEXT    NOT NULL,
  value_num   NUMERIC,
  PRIMARY KEY (trial_id, name)
) WITHOUT ROWID;
CREATE INDEX trial_params_by_value ON trial_params (name, value_num);

CREATE TABLE reports (
  id         INTEGER PRIMARY KEY,  -- max + 1: the order of arrival
  trial_id   INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  attempt    INTEGER NOT NULL,
  step       INTEGER NOT NULL,
  time       REAL    NOT NULL,
  objective  REAL
);
CREATE INDEX reports_by_trial ON reports (trial_id, attempt, step, objective);

CREATE TABLE metrics (
  report_id  INTEGER NOT NULL REFERENCES reports (id) ON DELETE CASCADE,
  name       TEXT    NOT NULL,
  value      REAL,
  PRIMARY KEY (report_id, name)
) WITHOUT ROWID;

CREATE VIEW observation_logs AS
  SELECT t.experiment_id       AS experiment_id,
         t.id                  AS trial_id,
         t.number              AS trial_number,
         r.attempt             AS attempt,
         (r.attempt = t.attempt AND t.state <> 'pending') AS is_current,
         r.id                  AS report_id,
         r.step                AS step,
         r.time                AS time,
         m.name                AS metric,
         m.value               AS value
  FROM metrics m
  JOIN reports r ON r.id = m.report_id
  JOIN trials t ON t.id = r.trial_id;
)sql";

// Version 2: the time `tune run` has spent on an experiment, over all its
// runs, so that limits.time_budget_s holds across --resume.
constexpr const char kV1ToV2[] = R"sql(
ALTER TABLE experiments ADD COLUMN run_seconds REAL NOT NULL DEFAULT 0;
)sql";

// Version 3: reports that do not count (e.g. printed after the trial reached
// max_t) are kept but marked with why; observation_logs shows the mark.
constexpr const char kV2ToV3[] = R"sql(
ALTER TABLE reports ADD COLUMN excluded TEXT;
DROP VIEW observation_logs;
CREATE VIEW observation_logs AS
  SELECT t.experiment_id       AS experiment_id,
         t.id                  AS trial_id,
         t.number              AS trial_number,
         r.attempt             AS attempt,
         (r.attempt = t.attempt AND t.state <> 'pending') AS is_current,
         r.id                  AS report_id,
         r.step                AS step,
         r.time                AS time,
         m.name                AS metric,
         m.value               AS value,
         r.excluded            AS excluded
  FROM metrics m
  JOIN reports r ON r.id = m.report_id
  JOIN trials t ON t.id = r.trial_id;
)sql";

// Version 4: the runs an outside tracker (MLflow) holds for an experiment
// and its trials, so that a resumed run logs into the same ones.
constexpr const char kV3ToV4[] = R"sql(
CREATE TABLE tracking_runs (
  experiment_id  INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
  target         TEXT    NOT NULL,
  trial_number   INTEGER NOT NULL,
  run_id         TEXT    NOT NULL,
  PRIMARY KEY (experiment_id, target, trial_number)
) WITHOUT ROWID;
)sql";

// Version 5: the best completed value of an experiment, in either
// direction, is one index lookup (the dashboard's experiments list; it was
// a sort of every completed trial).
constexpr const char kV4ToV5[] = R"sql(
CREATE INDEX trials_by_value ON trials (experiment_id, state, value, number);
)sql";

// Version 6: checkpoint-aware trials and Population Based Training.
// Failed attempts are counted (trial.max_retries holds across --resume); an
// attempt that continues from a checkpoint starts with copies of the
// reports that led to it (carried_from names the original); every PBT
// exploit is recorded, with the report after which it happened.
constexpr const char kV5ToV6[] = R"sql(
ALTER TABLE trials ADD COLUMN failed_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE reports ADD COLUMN carried_from INTEGER;
CREATE TABLE exploits (
  id               INTEGER PRIMARY KEY,
  trial_id         INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  step             INTEGER NOT NULL,
  donor_trial_id   INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  donor_step       INTEGER NOT NULL,
  params_before    TEXT    NOT NULL,
  params_after     TEXT    NOT NULL,
  after_report_id  INTEGER NOT NULL,
  time             REAL    NOT NULL
);
CREATE INDEX exploits_by_trial ON exploits (trial_id);
)sql";

// kMigrations[i] takes a database from version i to version i + 1.
constexpr const char kV6ToV7[] = R"sql(
CREATE TABLE trial_values (
  trial_id  INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  kind      TEXT    NOT NULL CHECK (kind IN ('objective', 'constraint')),
  position  INTEGER NOT NULL,
  value     REAL,
  PRIMARY KEY (trial_id, kind, position)
) WITHOUT ROWID;
)sql";

constexpr const char* kMigrations[] = {kCreateV1, kV1ToV2, kV2ToV3, kV3ToV4, kV4ToV5, kV5ToV6, kV6ToV7};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion,
              "one migration per schema version");

int UserVersion(SQLite::Database& db) {
  return db.execAndGet("PRAGMA user_version").getInt();
}

}  // namespace

Status EnsureSchema(SQLite::Database& db, const std::string& path) {
  try {
    // Fast path without a write lock: readers (`tune trials`) must not wait
    // for a running writer just to open the file.
    int version = UserVersion(db);
    if (version == kSchemaVersion) return Status::Ok();
    SQLite::Transaction txn(db, SQLite::TransactionBehavior::IMMEDIATE);
    version = UserVersion(db);  // another process may have migrated meanwhile
    if (version > kSchemaVersion) {
      return Status::FailedPrecondition(
          path + ": the database has schema version " + std::to_string(version) +
          " but this tune reads at most version " + std::to_string(kSchemaVersion) +
          "; use a newer tune");
    }
    if (version == 0) {
      int tables = db.execAndGet("SELECT count(*) FROM sqlite_schema").getInt();
      if (tables > 0) {
        return Status::FailedPrecondition(
            path + ": is an SQLite database but not a tune results database "
                   "(it has tables and no tune schema version)");
      }
    }
    for (int v = version; v < kSchemaVersion; ++v) db.exec(kMigrations[v]);
    db.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    txn.commit();
    return Status::Ok();
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() == SQLITE_NOTADB) {
      return Status::FailedPrecondition(path + ": is not an SQLite database");
    }
    if (e.getErrorCode() == SQLITE_BUSY || e.getErrorCode() == SQLITE_LOCKED) {
      return Status::Unavailable(path + ": the database stayed locked: " + e.what());
    }
    return Status::Internal(path + ": cannot create the schema: " + e.what());
  }
}

}  // namespace tune::internal
