// SqliteStorage: Storage on one SQLite file through SQLiteCpp.
//
// One connection per SqliteStorage, guarded by a mutex; every method is one
// transaction (IMMEDIATE for writes, so a second writer waits on the busy
// timeout instead of failing on a lock upgrade). WAL mode lets `tune trials`
// read while `tune run` writes. Prepared statements are cached per
// connection: a report costs a handful of B-tree inserts, no SQL parsing.
// The schema is in sqlite_schema.cc and docs/database.md.
#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <mutex>
#include <unordered_map>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sqlite3.h>

#include "storage/param_codec.h"
#include "storage/sqlite_schema.h"
#include "storage/storage.h"

namespace tune {
namespace {

// How long a transaction waits for another connection's write lock before
// giving up with Unavailable. Long: a writer holds the lock for microseconds,
// so hitting this means something is stuck.
constexpr int kBusyTimeoutMs = 30000;

double Now() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

std::optional<double> OptDouble(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getDouble();
}
std::optional<int64_t> OptInt(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getInt64();
}
// SQLite stores NaN as NULL; metric values read back as NaN.
double DoubleOrNan(const SQLite::Column& c) {
  return c.isNull() ? std::numeric_limits<double>::quiet_NaN() : c.getDouble();
}

// Why a write to `path` may have failed for lack of room ("the disk is
// full", "the file size limit ... is reached"), or "" if neither holds.
// SQLite does not keep the errno of a failed write reliably.
std::string NoRoomReason(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  struct statvfs fs {};
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) == 0 &&
      static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) < 1024.0 * 1024.0) {
    return "the disk is full";
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    return "the file size limit (RLIMIT_FSIZE, ulimit -f) of " + std::to_string(limit.rlim_cur) +
           " bytes is reached";
  }
  return "";
}

void BindOpt(SQLite::Statement& s, int i, std::optional<double> v) {
  if (v && !std::isnan(*v)) {
    s.bind(i, *v);
  } else {
    s.bind(i);
  }
}
void BindOpt(SQLite::Statement& s, int i, std::optional<int64_t> v) {
  if (v) {
    s.bind(i, *v);
  } else {
    s.bind(i);
  }
}

TrialState StateFromText(const std::string& text) {
  auto s = ParseTrialState(text);
  TUNE_CHECK(s.has_value());  // the CHECK constraint allows nothing else
  return *s;
}

// Resets a cached statement when the scope ends, so it holds no read lock
// and is ready for its next use.
class StmtScope {
 public:
  explicit StmtScope(SQLite::Statement& s) : s_(s) {}
  ~StmtScope() { s_.tryReset(); }
  SQLite::Statement* operator->() { return &s_; }
  SQLite::Statement& operator*() { return s_; }

 private:
  SQLite::Statement& s_;
};

// The state of a trial as seen by the transition checks.
struct TrialRow {
  int number = 0;
  TrialState state = TrialState::kPending;
  int attempt = 0;
  ExperimentId experiment_id = 0;
  bool started = false;  // some attempt has started
};

class SqliteStorage final : public Storage {
 public:
  SqliteStorage(std::unique_ptr<SQLite::Database> db, std::string path)
      : path_(std::move(path)), db_(std::move(db)) {
    struct stat st;
    if (::stat(path_.c_str(), &st) == 0) file_id_ = {st.st_dev, st.st_ino};
  }

  Result<ExperimentId> CreateExperiment(const std::string& name, const std::string& spec_json,
                                        uint64_t seed) override;
  Result<ExperimentRecord> FindExperiment(const std::string& name) override;
  Result<std::vector<ExperimentRecord>> ListExperiments() override;
  Status SetExperimentState(ExperimentId id, ExperimentState state,
                            const std::string& message) override;
  Status SetExperimentSpec(ExperimentId id, const std::string& spec_json) override;
  Status SetExperimentRunSeconds(ExperimentId id, double seconds) override;

  Result<Trial> CreateTrial(ExperimentId e, const ParamMap& params) override;
  Status StartTrial(TrialId t, int attempt, const std::string& location) override;
  Status AppendReport(TrialId t, int attempt, const MetricReport& report,
                      std::optional<double> objective) override {
    return InsertReport(t, attempt, report, objective, "");
  }
  Status AppendExcludedReport(TrialId t, int attempt, const MetricReport& report,
                              std::optional<double> objective, const std::string& reason) override {
    TUNE_CHECK(!reason.empty());
    return InsertReport(t, attempt, report, objective, reason);
  }
  Status ExcludeAttemptReports(TrialId t, int attempt, const std::string& reason,
                               std::optional<int64_t> from_step) override;
  Status RetryTrial(TrialId t, const std::string& message) override { return Retry(t, message, false); }
  Status RetryFailedTrial(TrialId t, const std::string& message) override { return Retry(t, message, true); }
  Status PauseTrial(TrialId t, const std::string& message) override;
  Status ContinueTrial(TrialId t, int attempt, const std::string& location, int64_t through_step) override;
  Status RecordExploit(TrialId t, int64_t step, TrialId donor, int64_t donor_step, const ParamMap& after) override;
  Result<std::vector<StoredExploit>> ListExploits(ExperimentId e) override;
  Status FinishTrial(TrialId t, TrialState state, std::optional<double> value,
                     std::optional<int64_t> pruned_rung, const std::string& message) override {
    return FinishTrialWithValues(t, state, value, {}, {}, pruned_rung, message);
  }
  Status FinishTrialWithValues(TrialId t, TrialState state, std::optional<double> value,
                               const std::vector<double>& values, const std::vector<double>& constraints,
                               std::optional<int64_t> pruned_rung, const std::string& message) override;

  Result<History> ListTrials(ExperimentId e) override;
  Result<std::vector<TrialRecord>> ListTrialRecords(ExperimentId e) override;
  Result<std::vector<TrialRecord>> ListTrialSummaries(ExperimentId e) override;
  Result<TrialRecord> GetTrialSummary(TrialId t) override;
  Result<TrialTally> TallyTrials(ExperimentId e, bool maximize) override;
  Result<int64_t> DataVersion() override;
  Result<std::vector<StoredReport>> ListReports(ExperimentId e) override;
  Result<std::vector<StoredReport>> ListTrialReports(TrialId t) override;

  Status SetTrackingRun(ExperimentId e, const std::string& target, int trial_number,
                        const std::string& run_id) override;
  Result<std::map<int, std::string>> ListTrackingRuns(ExperimentId e, const std::string& target) override;

 private:
  Status Retry(TrialId t, const std::string& message, bool failed);
  // StartTrial's checks and update, inside a transaction.
  Status Start(TrialId t, int attempt, const std::string& location);
  // Replaces trial_params and params_json of trial `t` by `params`.
  void WriteParams(TrialId t, const ParamMap& params);
  // One trial_params row per parameter of trial `t`.
  void InsertParams(TrialId t, const ParamMap& params);
  // Sets trial `t`'s last_step and value from the counted reports of
  // `attempt` (the highest step; the latest objective), NULL without any.
  void RecomputeLatest(TrialId t, int attempt);
  // One report; `excluded` empty for a counted one, else why it does not count.
  Status InsertReport(TrialId t, int attempt, const MetricReport& report, std::optional<double> objective,
                      const std::string& excluded);
  // Runs `body` (returning Status) as one transaction under mu_: committed
  // if it returns OK, rolled back otherwise. SQLite exceptions become
  // Unavailable (busy) or Internal.
  template <typename F>
  Status Transact(bool write, F&& body);
  // UPDATE experiments SET <column> = ?1 WHERE id = ?2, as one transaction.
  template <typename V>
  Status SetExperimentColumn(ExperimentId id, const char* update_sql, const V& value);
  Status FromException(const SQLite::Exception& e) const;

  // The cached prepared statement for `sql` (a string literal), reset.
  SQLite::Statement& Stmt(const char* sql);

  Status CheckExperiment(ExperimentId e);
  Result<TrialRow> LoadTrial(TrialId t);
  Status FillIntermediate(ExperimentId e, std::vector<Trial*>& trials);
  // Trial::values and Trial::constraints from trial_values: of experiment
  // `e`'s trials, or (e = 0) of the one trial in `trials`.
  Status FillValues(ExperimentId e, std::vector<Trial*>& trials);
  // ListTrialRecords, with the intermediate reports when `intermediate`.
  Result<std::vector<TrialRecord>> ReadTrialRecords(ExperimentId e, bool intermediate);
  std::vector<StoredReport> ReadReports(SQLite::Statement& s);
  // "trial 3 (id 17) of experiment 'demo'", for messages.
  std::string TrialName(TrialId t, const TrialRow& row);

  // Internal if the file at path_ is no longer the one opened (deleted, or
  // its directory; or replaced): SQLite would go on writing to the unlinked
  // inode and every result since would be lost without a word.
  Status CheckSameFile() const;

  const std::string path_;
  std::optional<std::pair<dev_t, ino_t>> file_id_;  // of the file opened
  std::mutex mu_;
  std::unique_ptr<SQLite::Database> db_;  // guarded by mu_
  std::unordered_map<const char*, std::unique_ptr<SQLite::Statement>> stmts_;  // guarded by mu_
};

Status SqliteStorage::CheckSameFile() const {
  if (!file_id_) return Status::Ok();
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0 || st.st_dev != file_id_->first || st.st_ino != file_id_->second) {
    return Status::Internal(path_ + ": the database file was deleted or replaced while tune was using it; "
                            "stopping, since nothing written to it from now on could be kept");
  }
  return Status::Ok();
}

template <typename F>
Status SqliteStorage::Transact(bool write, F&& body) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    SQLite::Transaction txn(*db_, write ? SQLite::TransactionBehavior::IMMEDIATE
                                        : SQLite::TransactionBehavior::DEFERRED);
    Status st = body();
    if (!st.ok()) return st;  // ~Transaction rolls back
    if (write) TUNE_RETURN_IF_ERROR(CheckSameFile());
    txn.commit();
    return st;
  } catch (const SQLite::Exception& e) {
    return FromException(e);
  }
}

Status SqliteStorage::FromException(const SQLite::Exception& e) const {
  int code = e.getErrorCode();
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
    return Status::Unavailable(path_ + ": the database stayed locked by another process for " +
                               std::to_string(kBusyTimeoutMs / 1000) + " s: " + e.what());
  }
  if (code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_READONLY) {
    // Not transient: a full disk or a read-only file needs a person.
    std::string why = e.what();
    if (code == SQLITE_READONLY) {
      why = "it is read-only (" + why + ")";
    } else if (std::string full = NoRoomReason(path_); !full.empty()) {
      why = full + " (" + why + ")";
    }
    return Status::FailedPrecondition(path_ + ": cannot write the database: " + why);
  }
  if (code == SQLITE_CORRUPT) {
    return Status::FailedPrecondition(path_ + ": the database file is corrupt (" + std::string(e.what()) +
                                      "); restore it from a copy, or use another --db");
  }
  return Status::Internal(path_ + ": SQLite error: " + e.what());
}

SQLite::Statement& SqliteStorage::Stmt(const char* sql) {
  auto& slot = stmts_[sql];
  if (!slot) {
    slot = std::make_unique<SQLite::Statement>(*db_, sql);
  } else {
    slot->tryReset();  // clears the error of a failed earlier use
  }
  return *slot;
}

Status SqliteStorage::CheckExperiment(ExperimentId e) {
  StmtScope s(Stmt("SELECT 1 FROM experiments WHERE id = ?"));
  s->bind(1, static_cast<int64_t>(e));
  if (!s->executeStep()) {
    return Status::NotFound(path_ + ": no experiment with id " + std::to_string(e));
  }
  return Status::Ok();
}

Result<TrialRow> SqliteStorage::LoadTrial(TrialId t) {
  StmtScope s(Stmt(
      "SELECT number, state, attempt, experiment_id, started_at IS NOT NULL FROM trials "
      "WHERE id = ?"));
  s->bind(1, static_cast<int64_t>(t));
  if (!s->executeStep()) {
    return Status::NotFound(path_ + ": no trial with id " + std::to_string(t));
  }
  TrialRow row;
  row.number = s->getColumn(0).getInt();
  row.state = StateFromText(s->getColumn(1).getString());
  row.attempt = s->getColumn(2).getInt();
  row.experiment_id = s->getColumn(3).getInt64();
  row.started = s->getColumn(4).getInt() != 0;
  return row;
}

std::string SqliteStorage::TrialName(TrialId t, const TrialRow& row) {
  std::string experiment = "id " + std::to_string(row.experiment_id);
  StmtScope s(Stmt("SELECT name FROM experiments WHERE id = ?"));
  s->bind(1, static_cast<int64_t>(row.experiment_id));
  if (s->executeStep()) experiment = "'" + s->getColumn(0).getString() + "'";
  return "trial " + std::to_string(row.number) + " (id " + std::to_string(t) +
         ") of experiment " + experiment;
}

// ---------------------------------------------------------------------------
// Experiments

Result<ExperimentId> SqliteStorage::CreateExperiment(const std::string& name,
                                                     const std::string& spec_json,
                                                     uint64_t seed) {
  if (name.empty()) return Status::InvalidArgument("an experiment needs a non-empty name");
  ExperimentId id = 0;
  Status st = Transact(true, [&]() -> Status {
    {
      StmtScope s(Stmt("SELECT 1 FROM experiments WHERE name = ?"));
      s->bind(1, name);
      if (s->executeStep()) {
        return Status::FailedPrecondition(
            path_ + ": an experiment named '" + name +
            "' already exists; resume it (--resume) or choose another name");
      }
    }
    StmtScope s(Stmt(
        "INSERT INTO experiments (name, spec_json, state, seed, created_at) "
        "VALUES (?, ?, 'running', ?, ?)"));
    s->bind(1, name);
    s->bind(2, spec_json);
    s->bind(3, static_cast<int64_t>(seed));  // same 64 bits; see docs/database.md
    s->bind(4, Now());
    s->exec();
    id = db_->getLastInsertRowid();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return id;
}

constexpr const char kExperimentColumns[] =
    "SELECT id, name, spec_json, state, seed, created_at, ended_at, message, run_seconds FROM experiments ";

ExperimentRecord ReadExperiment(SQLite::Statement& s) {
  ExperimentRecord r;
  r.id = s.getColumn(0).getInt64();
  r.name = s.getColumn(1).getString();
  r.spec_json = s.getColumn(2).getString();
  auto state = ParseExperimentState(s.getColumn(3).getString());
  TUNE_CHECK(state.has_value());
  r.state = *state;
  r.seed = static_cast<uint64_t>(s.getColumn(4).getInt64());
  r.created_at = s.getColumn(5).getDouble();
  r.ended_at = OptDouble(s.getColumn(6));
  r.message = s.getColumn(7).getString();
  r.run_seconds = s.getColumn(8).getDouble();
  return r;
}

Result<ExperimentRecord> SqliteStorage::FindExperiment(const std::string& name) {
  static const std::string sql = std::string(kExperimentColumns) + "WHERE name = ?";
  ExperimentRecord record;
  Status st = Transact(false, [&]() -> Status {
    StmtScope s(Stmt(sql.c_str()));
    s->bind(1, name);
    if (!s->executeStep()) {
      return Status::NotFound(path_ + ": no experiment named '" + name + "'");
    }
    record = ReadExperiment(*s);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return record;
}

Result<std::vector<ExperimentRecord>> SqliteStorage::ListExperiments() {
  static const std::string sql = std::string(kExperimentColumns) + "ORDER BY created_at, id";
  std::vector<ExperimentRecord> out;
  Status st = Transact(false, [&]() -> Status {
    StmtScope s(Stmt(sql.c_str()));
    while (s->executeStep()) out.push_back(ReadExperiment(*s));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Status SqliteStorage::SetExperimentState(ExperimentId id, ExperimentState state,
                                         const std::string& message) {
  return Transact(true, [&]() -> Status {
    StmtScope s(Stmt(
        "UPDATE experiments SET state = ?1, message = ?2, "
        "ended_at = CASE WHEN ?1 = 'running' THEN NULL ELSE ?3 END WHERE id = ?4"));
    s->bind(1, ExperimentStateName(state));
    s->bind(2, message);
    s->bind(3, Now());
    s->bind(4, static_cast<int64_t>(id));
    if (s->exec() == 0) {
      return Status::NotFound(path_ + ": no experiment with id " + std::to_string(id));
    }
    return Status::Ok();
  });
}

template <typename V>
Status SqliteStorage::SetExperimentColumn(ExperimentId id, const char* update_sql, const V& value) {
  return Transact(true, [&]() -> Status {
    StmtScope s(Stmt(update_sql));
    s->bind(1, value);
    s->bind(2, static_cast<int64_t>(id));
    if (s->exec() == 0) {
      return Status::NotFound(path_ + ": no experiment with id " + std::to_string(id));
    }
    return Status::Ok();
  });
}

Status SqliteStorage::SetExperimentSpec(ExperimentId id, const std::string& spec_json) {
  return SetExperimentColumn(id, "UPDATE experiments SET spec_json = ?1 WHERE id = ?2", spec_json);
}

Status SqliteStorage::SetExperimentRunSeconds(ExperimentId id, double seconds) {
  return SetExperimentColumn(id, "UPDATE experiments SET run_seconds = ?1 WHERE id = ?2", seconds);
}

// ---------------------------------------------------------------------------
// Trial transitions

Result<Trial> SqliteStorage::CreateTrial(ExperimentId e, const ParamMap& params) {
  for (const auto& [name, value] : params) {
    if (!ParamIsStorable(value)) {
      return Status::InvalidArgument("parameter '" + name + "' is " + ParamToString(value) +
                                     "; only finite numbers can be stored");
    }
  }
  Trial trial;
  trial.params = params;
  const std::string params_json = ParamsToJson(params);
  Status st = Transact(true, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    {
      StmtScope s(Stmt(
          "SELECT COALESCE(MAX(number) + 1, 0) FROM trials WHERE experiment_id = ?"));
      s->bind(1, static_cast<int64_t>(e));
      s->executeStep();
      trial.number = s->getColumn(0).getInt();
    }
    {
      StmtScope s(Stmt(
          "INSERT INTO trials (experiment_id, number, state, params_json) "
          "VALUES (?, ?, 'pending', ?)"));
      s->bind(1, static_cast<int64_t>(e));
      s->bind(2, trial.number);
      s->bind(3, params_json);
      s->exec();
      trial.id = db_->getLastInsertRowid();
    }
    InsertParams(trial.id, params);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return trial;
}

Status SqliteStorage::StartTrial(TrialId t, int attempt, const std::string& location) {
  return Transact(true, [&]() -> Status { return Start(t, attempt, location); });
}

Status SqliteStorage::Start(TrialId t, int attempt, const std::string& location) {
  TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
  if (row.state != TrialState::kPending && row.state != TrialState::kPaused) {
    return Status::FailedPrecondition(TrialName(t, row) + " is " +
                                      TrialStateName(row.state) + "; only a pending or " +
                                      "paused trial can start");
  }
  // A retried or continued trial needs a new attempt number, so that the
  // earlier attempt's reports stay out of the new one's learning curve.
  bool again = row.started && (row.state == TrialState::kPending || row.state == TrialState::kPaused);
  if (attempt < row.attempt || (again && attempt == row.attempt)) {
    return Status::FailedPrecondition(
        TrialName(t, row) + " cannot start attempt " + std::to_string(attempt) +
        ": attempt " + std::to_string(row.attempt) + " was already made");
  }
  StmtScope s(Stmt(
      "UPDATE trials SET state = 'running', attempt = ?, location = ?, "
      "started_at = COALESCE(started_at, ?) WHERE id = ?"));
  s->bind(1, attempt);
  s->bind(2, location);
  s->bind(3, Now());
  s->bind(4, static_cast<int64_t>(t));
  s->exec();
  return Status::Ok();
}

Status SqliteStorage::ContinueTrial(TrialId t, int attempt, const std::string& location, int64_t through_step) {
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    const int previous = row.attempt;
    TUNE_RETURN_IF_ERROR(Start(t, attempt, location));
    std::vector<std::pair<int64_t, int64_t>> copies;  // (original id, copy id)
    {
      StmtScope s(Stmt(
          "SELECT id, step, time, objective FROM reports WHERE trial_id = ? AND attempt = ? "
          "AND excluded IS NULL AND step <= ? ORDER BY id"));
      s->bind(1, static_cast<int64_t>(t));
      s->bind(2, previous);
      s->bind(3, static_cast<int64_t>(through_step));
      struct Row { int64_t id, step; double time; std::optional<double> objective; };
      std::vector<Row> rows;
      while (s->executeStep()) {
        rows.push_back({s->getColumn(0).getInt64(), s->getColumn(1).getInt64(), s->getColumn(2).getDouble(),
                        OptDouble(s->getColumn(3))});
      }
      s->reset();
      StmtScope insert(Stmt(
          "INSERT INTO reports (trial_id, attempt, step, time, objective, carried_from) VALUES (?, ?, ?, ?, ?, ?)"));
      for (const Row& r : rows) {
        insert->reset();
        insert->bind(1, static_cast<int64_t>(t));
        insert->bind(2, attempt);
        insert->bind(3, r.step);
        insert->bind(4, r.time);
        BindOpt(*insert, 5, r.objective);
        insert->bind(6, r.id);
        insert->exec();
        copies.emplace_back(r.id, db_->getLastInsertRowid());
      }
    }
    {
      StmtScope s(Stmt("INSERT INTO metrics (report_id, name, value) SELECT ?, name, value FROM metrics WHERE report_id = ?"));
      for (const auto& [from, to] : copies) {
        s->reset();
        s->bind(1, to);
        s->bind(2, from);
        s->exec();
      }
    }
    // value and last_step as if the carried reports had just arrived.
    RecomputeLatest(t, attempt);
    return Status::Ok();
  });
}

Status SqliteStorage::PauseTrial(TrialId t, const std::string& message) {
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " + TrialStateName(row.state) +
                                        "; only a running trial can be paused");
    }
    StmtScope s(Stmt("UPDATE trials SET state = 'paused', message = ? WHERE id = ?"));
    s->bind(1, message);
    s->bind(2, static_cast<int64_t>(t));
    s->exec();
    return Status::Ok();
  });
}

void SqliteStorage::WriteParams(TrialId t, const ParamMap& params) {
  {
    StmtScope s(Stmt("UPDATE trials SET params_json = ? WHERE id = ?"));
    s->bind(1, ParamsToJson(params));
    s->bind(2, static_cast<int64_t>(t));
    s->exec();
  }
  {
    StmtScope s(Stmt("DELETE FROM trial_params WHERE trial_id = ?"));
    s->bind(1, static_cast<int64_t>(t));
    s->exec();
  }
  InsertParams(t, params);
}

void SqliteStorage::RecomputeLatest(TrialId t, int attempt) {
  StmtScope s(Stmt(
      "UPDATE trials SET "
      "last_step = (SELECT MAX(step) FROM reports WHERE trial_id = ?1 AND attempt = ?2 AND excluded IS NULL), "
      "value = (SELECT objective FROM reports WHERE trial_id = ?1 AND attempt = ?2 AND excluded IS NULL "
      "AND objective IS NOT NULL ORDER BY id DESC LIMIT 1) WHERE id = ?1"));
  s->bind(1, static_cast<int64_t>(t));
  s->bind(2, attempt);
  s->exec();
}

void SqliteStorage::InsertParams(TrialId t, const ParamMap& params) {
  StmtScope s(Stmt(
      "INSERT INTO trial_params (trial_id, name, type, value_text, value_num) "
      "VALUES (?, ?, ?, ?, ?)"));
  for (const auto& [name, value] : params) {
    s->reset();
    s->bind(1, static_cast<int64_t>(t));
    s->bind(2, name);
    s->bind(3, ParamTypeName(value));
    s->bind(4, ParamToString(value));
    if (auto* i = std::get_if<int64_t>(&value)) {
      s->bind(5, *i);
    } else if (auto* d = std::get_if<double>(&value)) {
      s->bind(5, *d);
    } else if (auto* b = std::get_if<bool>(&value)) {
      s->bind(5, static_cast<int64_t>(*b ? 1 : 0));
    } else {
      s->bind(5);
    }
    s->exec();
  }
}

Status SqliteStorage::RecordExploit(TrialId t, int64_t step, TrialId donor, int64_t donor_step,
                                    const ParamMap& after) {
  for (const auto& [name, value] : after) {
    if (!ParamIsStorable(value)) {
      return Status::InvalidArgument("parameter '" + name + "' is " + ParamToString(value) +
                                     "; only finite numbers can be stored");
    }
  }
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning && row.state != TrialState::kPaused) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " + TrialStateName(row.state) +
                                        "; only a running or paused trial can take a donor's checkpoint");
    }
    TUNE_ASSIGN_OR_RETURN(TrialRow donor_row, LoadTrial(donor));
    if (donor_row.experiment_id != row.experiment_id) {
      return Status::InvalidArgument(TrialName(donor, donor_row) + " is not in the experiment of " + TrialName(t, row));
    }
    std::string before;
    {
      StmtScope s(Stmt("SELECT params_json FROM trials WHERE id = ?"));
      s->bind(1, static_cast<int64_t>(t));
      s->executeStep();
      before = s->getColumn(0).getString();
    }
    {
      StmtScope s(Stmt(
          "INSERT INTO exploits (trial_id, step, donor_trial_id, donor_step, params_before, params_after, "
          "after_report_id, time) VALUES (?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(id), 0) FROM reports), ?)"));
      s->bind(1, static_cast<int64_t>(t));
      s->bind(2, static_cast<int64_t>(step));
      s->bind(3, static_cast<int64_t>(donor));
      s->bind(4, static_cast<int64_t>(donor_step));
      s->bind(5, before);
      s->bind(6, ParamsToJson(after));
      s->bind(7, Now());
      s->exec();
    }
    WriteParams(t, after);
    return Status::Ok();
  });
}

Result<std::vector<StoredExploit>> SqliteStorage::ListExploits(ExperimentId e) {
  std::vector<StoredExploit> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    StmtScope s(Stmt(
        "SELECT x.id, x.after_report_id, x.trial_id, t.number, x.step, x.donor_trial_id, d.number, "
        "x.donor_step, x.params_before, x.params_after, x.time FROM exploits x "
        "JOIN trials t ON t.id = x.trial_id JOIN trials d ON d.id = x.donor_trial_id "
        "WHERE t.experiment_id = ? ORDER BY x.id"));
    s->bind(1, static_cast<int64_t>(e));
    while (s->executeStep()) {
      StoredExploit x;
      x.id = s->getColumn(0).getInt64();
      x.after_seq = s->getColumn(1).getInt64();
      x.trial_id = s->getColumn(2).getInt64();
      x.trial_number = s->getColumn(3).getInt();
      x.step = s->getColumn(4).getInt64();
      x.donor_id = s->getColumn(5).getInt64();
      x.donor_number = s->getColumn(6).getInt();
      x.donor_step = s->getColumn(7).getInt64();
      auto before = ParamsFromJson(s->getColumn(8).getString());
      auto after = ParamsFromJson(s->getColumn(9).getString());
      if (!before.ok() || !after.ok()) {
        return Status::Internal("exploit id " + std::to_string(x.id) + ": unreadable parameters");
      }
      x.before = std::move(before).value();
      x.after = std::move(after).value();
      x.time = s->getColumn(10).getDouble();
      out.push_back(std::move(x));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Status SqliteStorage::InsertReport(TrialId t, int attempt, const MetricReport& report,
                                   std::optional<double> objective, const std::string& excluded) {
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " +
                                        TrialStateName(row.state) +
                                        "; only a running trial takes reports");
    }
    if (attempt != row.attempt) {
      return Status::FailedPrecondition(
          "a report of attempt " + std::to_string(attempt) + " of " + TrialName(t, row) +
          " arrived, but its current attempt is " + std::to_string(row.attempt));
    }
    int64_t report_id = 0;
    {
      StmtScope s(Stmt(
          "INSERT INTO reports (trial_id, attempt, step, time, objective, excluded) "
          "VALUES (?, ?, ?, ?, ?, ?)"));
      s->bind(1, static_cast<int64_t>(t));
      s->bind(2, attempt);
      s->bind(3, static_cast<int64_t>(report.step));
      s->bind(4, report.time > 0 ? report.time : Now());
      BindOpt(*s, 5, objective);
      if (excluded.empty()) {
        s->bind(6);
      } else {
        s->bind(6, excluded);
      }
      s->exec();
      report_id = db_->getLastInsertRowid();
    }
    {
      StmtScope s(Stmt("INSERT INTO metrics (report_id, name, value) VALUES (?, ?, ?)"));
      for (const auto& [name, value] : report.values) {
        s->reset();
        s->bind(1, report_id);
        s->bind(2, name);
        BindOpt(*s, 3, std::optional<double>(value));
        s->exec();
      }
    }
    if (!excluded.empty()) return Status::Ok();  // changes neither value nor last_step
    StmtScope s(Stmt(
        "UPDATE trials SET last_step = MAX(COALESCE(last_step, ?1), ?1), "
        // The latest objective value (NULL if NaN); a report without the
        // objective leaves it.
        "value = IIF(?4, ?2, value) WHERE id = ?3"));
    s->bind(1, static_cast<int64_t>(report.step));
    BindOpt(*s, 2, objective);
    s->bind(3, static_cast<int64_t>(t));
    s->bind(4, objective.has_value() ? 1 : 0);
    s->exec();
    return Status::Ok();
  });
}

Status SqliteStorage::ExcludeAttemptReports(TrialId t, int attempt, const std::string& reason,
                                            std::optional<int64_t> from_step) {
  TUNE_CHECK(!reason.empty());
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning || attempt != row.attempt) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " + TrialStateName(row.state) + " in attempt " +
                                        std::to_string(row.attempt) + "; only the running attempt's reports (not " +
                                        std::to_string(attempt) + "'s) can be excluded");
    }
    {
      StmtScope s(Stmt("UPDATE reports SET excluded = ? WHERE trial_id = ? AND attempt = ? AND excluded IS NULL "
                       "AND step >= ?"));
      s->bind(1, reason);
      s->bind(2, static_cast<int64_t>(t));
      s->bind(3, attempt);
      s->bind(4, static_cast<int64_t>(from_step.value_or(std::numeric_limits<int64_t>::min())));
      s->exec();
    }
    RecomputeLatest(t, attempt);
    return Status::Ok();
  });
}

Status SqliteStorage::Retry(TrialId t, const std::string& message, bool failed) {
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " +
                                        TrialStateName(row.state) +
                                        "; only a running trial can be retried");
    }
    StmtScope s(Stmt(
        "UPDATE trials SET state = 'pending', message = ?, value = NULL, last_step = NULL, "
        "failed_attempts = failed_attempts + ? WHERE id = ?"));
    s->bind(1, message);
    s->bind(2, failed ? 1 : 0);
    s->bind(3, static_cast<int64_t>(t));
    s->exec();
    return Status::Ok();
  });
}

Status SqliteStorage::FinishTrialWithValues(TrialId t, TrialState state, std::optional<double> value,
                                            const std::vector<double>& values,
                                            const std::vector<double>& constraints,
                                            std::optional<int64_t> pruned_rung, const std::string& message) {
  if (!IsFinished(state)) {
    return Status::InvalidArgument(std::string("FinishTrial needs a terminal state, got ") +
                                   TrialStateName(state));
  }
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (IsFinished(row.state)) {
      return Status::FailedPrecondition(TrialName(t, row) + " is already " +
                                        TrialStateName(row.state) +
                                        "; a finished trial is immutable");
    }
    StmtScope s(Stmt(
        // The final value as given (NaN: NULL, never an earlier report's
        // value); none given keeps the latest.
        "UPDATE trials SET state = ?1, value = IIF(?7, ?2, value), pruned_rung = ?3, "
        "message = ?4, ended_at = ?5 WHERE id = ?6"));
    s->bind(1, TrialStateName(state));
    BindOpt(*s, 2, value);
    BindOpt(*s, 3, pruned_rung);
    s->bind(4, message);
    s->bind(5, Now());
    s->bind(6, static_cast<int64_t>(t));
    s->bind(7, value.has_value() ? 1 : 0);
    s->exec();
    for (const auto& [kind, list] : {std::pair<const char*, const std::vector<double>*>{"objective", &values},
                                     {"constraint", &constraints}}) {
      for (size_t i = 0; i < list->size(); ++i) {
        StmtScope v(Stmt("INSERT OR REPLACE INTO trial_values (trial_id, kind, position, value) VALUES (?, ?, ?, ?)"));
        v->bind(1, static_cast<int64_t>(t));
        v->bind(2, kind);
        v->bind(3, static_cast<int64_t>(i));
        BindOpt(*v, 4, std::isnan((*list)[i]) ? std::nullopt : std::optional<double>((*list)[i]));
        v->exec();
      }
    }
    return Status::Ok();
  });
}

Status SqliteStorage::FillValues(ExperimentId e, std::vector<Trial*>& trials) {
  std::unordered_map<TrialId, Trial*> by_id;
  by_id.reserve(trials.size());
  for (Trial* t : trials) by_id[t->id] = t;
  StmtScope s(Stmt(
      "SELECT v.trial_id, v.kind, v.position, v.value FROM trial_values v JOIN trials t ON t.id = v.trial_id "
      "WHERE (?1 = 0 AND t.id = ?2) OR t.experiment_id = ?1 ORDER BY v.trial_id, v.kind, v.position"));
  s->bind(1, static_cast<int64_t>(e));
  s->bind(2, static_cast<int64_t>(trials.size() == 1 && e == 0 ? trials.front()->id : 0));
  while (s->executeStep()) {
    auto it = by_id.find(s->getColumn(0).getInt64());
    if (it == by_id.end()) continue;
    std::vector<double>& list = s->getColumn(1).getString() == "objective" ? it->second->values
                                                                            : it->second->constraints;
    const auto position = static_cast<size_t>(s->getColumn(2).getInt64());
    if (list.size() <= position) list.resize(position + 1, std::numeric_limits<double>::quiet_NaN());
    list[position] = DoubleOrNan(s->getColumn(3));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Queries

Status SqliteStorage::FillIntermediate(ExperimentId e, std::vector<Trial*>& trials) {
  std::unordered_map<TrialId, Trial*> by_id;
  by_id.reserve(trials.size());
  for (Trial* t : trials) by_id[t->id] = t;
  StmtScope s(Stmt(
      "SELECT r.trial_id, r.step, r.objective FROM trials t "
      "JOIN reports r ON r.trial_id = t.id AND r.attempt = t.attempt "
      "WHERE t.experiment_id = ? AND t.state <> 'pending' AND r.objective IS NOT NULL "
      "AND r.excluded IS NULL "
      // The indexes' own order (no sort); of two reports of one step, the
      // later one wins.
      "ORDER BY t.number, r.step, r.id"));
  s->bind(1, static_cast<int64_t>(e));
  while (s->executeStep()) {
    auto it = by_id.find(s->getColumn(0).getInt64());
    if (it == by_id.end()) continue;
    it->second->intermediate[s->getColumn(1).getInt64()] = s->getColumn(2).getDouble();
  }
  return Status::Ok();
}

// Columns 0-5 of both trial queries.
Status ReadTrial(SQLite::Statement& s, Trial& t) {
  t.id = s.getColumn(0).getInt64();
  t.number = s.getColumn(1).getInt();
  t.state = StateFromText(s.getColumn(2).getString());
  auto params = ParamsFromJson(s.getColumn(3).getString());
  if (!params.ok()) {
    return Status::Internal("trial id " + std::to_string(t.id) + ": " + params.status().message());
  }
  t.params = std::move(params).value();
  t.value = OptDouble(s.getColumn(4));
  t.attempt = s.getColumn(5).getInt();
  return Status::Ok();
}

// A trials row as a TrialRecord: the query selects id, number, state,
// params_json, value, attempt, started_at, ended_at, last_step, pruned_rung,
// location, message, in that order.
Status ReadTrialRecord(SQLite::Statement& s, TrialRecord& r) {
  TUNE_RETURN_IF_ERROR(ReadTrial(s, r.trial));
  r.started_at = OptDouble(s.getColumn(6));
  r.ended_at = OptDouble(s.getColumn(7));
  r.last_step = OptInt(s.getColumn(8));
  r.pruned_rung = OptInt(s.getColumn(9));
  r.location = s.getColumn(10).getString();
  r.message = s.getColumn(11).getString();
  r.failed_attempts = s.getColumn(12).getInt();
  return Status::Ok();
}

Result<History> SqliteStorage::ListTrials(ExperimentId e) {
  History out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    {
      StmtScope s(Stmt(
          "SELECT id, number, state, params_json, value, attempt FROM trials "
          "WHERE experiment_id = ? ORDER BY number"));
      s->bind(1, static_cast<int64_t>(e));
      while (s->executeStep()) {
        out.emplace_back();
        TUNE_RETURN_IF_ERROR(ReadTrial(*s, out.back()));
      }
    }
    std::vector<Trial*> ptrs;
    for (Trial& t : out) ptrs.push_back(&t);
    TUNE_RETURN_IF_ERROR(FillValues(e, ptrs));
    return FillIntermediate(e, ptrs);
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<TrialRecord>> SqliteStorage::ListTrialRecords(ExperimentId e) {
  return ReadTrialRecords(e, true);
}

Result<std::vector<TrialRecord>> SqliteStorage::ListTrialSummaries(ExperimentId e) {
  return ReadTrialRecords(e, false);
}

Result<TrialRecord> SqliteStorage::GetTrialSummary(TrialId t) {
  TrialRecord r;
  Status st = Transact(false, [&]() -> Status {
    StmtScope s(Stmt(
        "SELECT id, number, state, params_json, value, attempt, started_at, ended_at, "
        "last_step, pruned_rung, location, message, failed_attempts FROM trials WHERE id = ?"));
    s->bind(1, static_cast<int64_t>(t));
    if (!s->executeStep()) return Status::NotFound("trial id " + std::to_string(t) + " does not exist");
    TUNE_RETURN_IF_ERROR(ReadTrialRecord(*s, r));
    std::vector<Trial*> one = {&r.trial};
    return FillValues(0, one);
  });
  if (!st.ok()) return st;
  return r;
}

Result<int64_t> SqliteStorage::DataVersion() {
  int64_t version = 0;
  Status st = Transact(false, [&]() -> Status {
    version = db_->execAndGet("PRAGMA data_version").getInt64();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return version;
}

Result<TrialTally> SqliteStorage::TallyTrials(ExperimentId e, bool maximize) {
  TrialTally tally;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    {
      StmtScope s(Stmt("SELECT state, COUNT(*) FROM trials WHERE experiment_id = ? GROUP BY state"));
      s->bind(1, static_cast<int64_t>(e));
      while (s->executeStep()) {
        const int n = s->getColumn(1).getInt();
        tally.counts[StateFromText(s->getColumn(0).getString())] += n;
        tally.total += n;
      }
    }
    // Finite values only (NaN is stored as NULL; +-inf as SQLite's Inf).
    StmtScope s(Stmt(maximize ? "SELECT number, value FROM trials WHERE experiment_id = ?1 AND state = ?2 AND "
                                "value BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308 "
                                "ORDER BY value DESC, number LIMIT 1"
                              : "SELECT number, value FROM trials WHERE experiment_id = ?1 AND state = ?2 AND "
                                "value BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308 "
                                "ORDER BY value ASC, number LIMIT 1"));
    s->bind(1, static_cast<int64_t>(e));
    s->bind(2, TrialStateName(TrialState::kCompleted));
    if (s->executeStep()) tally.best = std::make_pair(s->getColumn(0).getInt(), s->getColumn(1).getDouble());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return tally;
}

Result<std::vector<TrialRecord>> SqliteStorage::ReadTrialRecords(ExperimentId e, bool intermediate) {
  std::vector<TrialRecord> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    {
      StmtScope s(Stmt(
          "SELECT id, number, state, params_json, value, attempt, started_at, ended_at, "
          "last_step, pruned_rung, location, message, failed_attempts FROM trials "
          "WHERE experiment_id = ? ORDER BY number"));
      s->bind(1, static_cast<int64_t>(e));
      while (s->executeStep()) {
        TrialRecord& r = out.emplace_back();
        TUNE_RETURN_IF_ERROR(ReadTrialRecord(*s, r));
      }
    }
    std::vector<Trial*> ptrs;
    for (TrialRecord& r : out) ptrs.push_back(&r.trial);
    TUNE_RETURN_IF_ERROR(FillValues(e, ptrs));
    if (!intermediate) return Status::Ok();
    return FillIntermediate(e, ptrs);
  });
  if (!st.ok()) return st;
  return out;
}

// Rows of (report id, trial id, attempt, step, time, metric name, value,
// excluded), ordered by report id; a report without metrics has a NULL name.
std::vector<StoredReport> SqliteStorage::ReadReports(SQLite::Statement& s) {
  std::vector<StoredReport> out;
  while (s.executeStep()) {
    int64_t seq = s.getColumn(0).getInt64();
    if (out.empty() || out.back().seq != seq) {
      StoredReport& r = out.emplace_back();
      r.seq = seq;
      r.trial_id = s.getColumn(1).getInt64();
      r.attempt = s.getColumn(2).getInt();
      r.report.step = s.getColumn(3).getInt64();
      r.report.time = s.getColumn(4).getDouble();
      if (!s.getColumn(7).isNull()) r.excluded = s.getColumn(7).getString();
    }
    if (!s.getColumn(5).isNull()) {
      out.back().report.values[s.getColumn(5).getString()] = DoubleOrNan(s.getColumn(6));
    }
  }
  return out;
}

Result<std::vector<StoredReport>> SqliteStorage::ListReports(ExperimentId e) {
  std::vector<StoredReport> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    StmtScope s(Stmt(
        "SELECT r.id, r.trial_id, r.attempt, r.step, r.time, m.name, m.value, r.excluded "
        "FROM trials t JOIN reports r ON r.trial_id = t.id AND r.attempt = t.attempt "
        "LEFT JOIN metrics m ON m.report_id = r.id "
        "WHERE t.experiment_id = ? AND t.state <> 'pending' AND r.excluded IS NULL ORDER BY r.id, m.name"));
    s->bind(1, static_cast<int64_t>(e));
    out = ReadReports(*s);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<StoredReport>> SqliteStorage::ListTrialReports(TrialId t) {
  std::vector<StoredReport> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    (void)row;
    StmtScope s(Stmt(
        "SELECT r.id, r.trial_id, r.attempt, r.step, r.time, m.name, m.value, r.excluded "
        "FROM reports r LEFT JOIN metrics m ON m.report_id = r.id "
        "WHERE r.trial_id = ? ORDER BY r.id, m.name"));
    s->bind(1, static_cast<int64_t>(t));
    out = ReadReports(*s);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Status SqliteStorage::SetTrackingRun(ExperimentId e, const std::string& target, int trial_number,
                                     const std::string& run_id) {
  return Transact(true, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    StmtScope s(Stmt("INSERT OR REPLACE INTO tracking_runs (experiment_id, target, trial_number, run_id) "
                     "VALUES (?, ?, ?, ?)"));
    s->bind(1, static_cast<int64_t>(e));
    s->bind(2, target);
    s->bind(3, trial_number);
    s->bind(4, run_id);
    s->exec();
    return Status::Ok();
  });
}

Result<std::map<int, std::string>> SqliteStorage::ListTrackingRuns(ExperimentId e, const std::string& target) {
  std::map<int, std::string> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    StmtScope s(Stmt("SELECT trial_number, run_id FROM tracking_runs WHERE experiment_id = ? AND target = ?"));
    s->bind(1, static_cast<int64_t>(e));
    s->bind(2, target);
    while (s->executeStep()) out[s->getColumn(0).getInt()] = s->getColumn(1).getString();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace

Result<std::unique_ptr<Storage>> OpenSqliteStorageReadOnly(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::NotFound(path + ": no such database file");
  try {
    auto db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READONLY | SQLite::OPEN_NOMUTEX,
                                                 kBusyTimeoutMs);
    std::string check = db->execAndGet("PRAGMA quick_check(1)").getString();
    if (check != "ok") {
      for (char& c : check) c = c == '\n' ? ' ' : c;
      return Status::FailedPrecondition(path + ": the database file is corrupt (SQLite's quick_check: " + check +
                                        "); restore it from a copy");
    }
    const int version = db->execAndGet("PRAGMA user_version").getInt();
    if (version == 0) {
      return Status::FailedPrecondition(path + ": is not a tune results database (it has no tune schema version)");
    }
    if (version != internal::kSchemaVersion) {
      return Status::FailedPrecondition(
          path + ": the database has schema version " + std::to_string(version) + " but this tune reads version " +
          std::to_string(internal::kSchemaVersion) +
          (version < internal::kSchemaVersion ? "; upgrade it once with a writing command (tune status)"
                                              : "; use a newer tune"));
    }
    return std::unique_ptr<Storage>(new SqliteStorage(std::move(db), path));
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() == SQLITE_NOTADB) return Status::FailedPrecondition(path + ": is not an SQLite database");
    if (e.getErrorCode() == SQLITE_CORRUPT) {
      return Status::FailedPrecondition(path + ": the database file is corrupt (" + std::string(e.what()) +
                                        "); restore it from a copy");
    }
    if (e.getErrorCode() == SQLITE_CANTOPEN) {
      return Status::NotFound(path + ": cannot open the database file: " + e.what());
    }
    return Status::Internal(path + ": cannot open the database: " + e.what());
  }
}

Result<std::unique_ptr<Storage>> OpenSqliteStorage(const std::string& path,
                                                   bool create_if_missing, bool wal) {
  std::error_code ec;
  if (!create_if_missing && !std::filesystem::exists(path, ec)) {
    return Status::NotFound(path + ": no such database file");
  }
  std::unique_ptr<SQLite::Database> db;
  try {
    // NOMUTEX: SqliteStorage's own mutex already serializes the connection.
    int flags = SQLite::OPEN_READWRITE | SQLite::OPEN_NOMUTEX |
                (create_if_missing ? SQLite::OPEN_CREATE : 0);
    db = std::make_unique<SQLite::Database>(path, flags, kBusyTimeoutMs);
    db->exec("PRAGMA synchronous = NORMAL");
    db->exec("PRAGMA foreign_keys = ON");
    if (create_if_missing) {
      // The writer (`tune run`) first reads every page: a corrupt file is
      // refused before anything is written to it or any trial runs.
      std::string check = db->execAndGet("PRAGMA quick_check(1)").getString();
      if (check != "ok") {
        for (char& c : check) c = c == '\n' ? ' ' : c;
        return Status::FailedPrecondition(path + ": the database file is corrupt (SQLite's quick_check: " +
                                          check + "); restore it from a copy, or use another --db");
      }
    }
    // The schema check first: a file that is not ours is left as it was.
    TUNE_RETURN_IF_ERROR(internal::EnsureSchema(*db, path));
    // Persistent in the file (the other pragmas are per connection).
    db->exec(wal ? "PRAGMA journal_mode = WAL" : "PRAGMA journal_mode = DELETE");
    return std::unique_ptr<Storage>(new SqliteStorage(std::move(db), path));
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() == SQLITE_NOTADB) {
      return Status::FailedPrecondition(path + ": is not an SQLite database");
    }
    if (e.getErrorCode() == SQLITE_CORRUPT) {
      return Status::FailedPrecondition(path + ": the database file is corrupt (" + std::string(e.what()) +
                                        "); restore it from a copy, or use another --db");
    }
    if (e.getErrorCode() == SQLITE_CANTOPEN) {
      return Status::NotFound(path + ": cannot open the database file: " + e.what());
    }
    if (e.getErrorCode() == SQLITE_BUSY) {
      return Status::Unavailable(path + ": the database stayed locked: " + e.what());
    }
    if (e.getErrorCode() == SQLITE_FULL || e.getErrorCode() == SQLITE_IOERR) {
      if (std::string full = NoRoomReason(path); !full.empty()) {
        return Status::FailedPrecondition(path + ": cannot open the database: " + full + " (" + e.what() + ")");
      }
    }
    return Status::Internal(path + ": cannot open the database: " + e.what());
  }
}

}  // namespace tune
