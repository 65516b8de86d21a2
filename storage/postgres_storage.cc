// PostgresStorage through libpq, PostgreSQL's own C client library.
//
// Why libpq and not libpqxx: libpq is what every PostgreSQL client is built
// on and ships with the server's packages (Debian's libpq-dev); libpqxx is
// one more C++ library to install (it is not on the build machines) for a
// wrapper of the same calls, and this file needs only a few of them:
// connect, prepare, execute with text parameters, read text results.
//
// One connection per storage, guarded by a mutex, as SqliteStorage: every
// method is one transaction (writes READ COMMITTED, reads REPEATABLE READ
// READ ONLY, so a read of several statements sees one snapshot). Statements
// are prepared once per connection. A lost connection is reset before the
// next transaction; the one in flight fails with Unavailable.
//
// DataVersion is the row ('data_version', N) of tune_meta, incremented by
// the last statement of every write transaction (sent with its COMMIT, so
// it costs no round trip and holds the row's lock only while committing):
// it changes exactly when a write commits, and a reader's snapshot never
// sees the new number before the data it counts.
#include "storage/postgres_storage.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#ifdef TUNE_HAVE_POSTGRES
#include <libpq-fe.h>
#endif

#include <chrono>

#include "storage/param_codec.h"
#include "storage/postgres_migrate.h"
#include "storage/postgres_schema.h"
#include "storage/sqlite_schema.h"

namespace tune {

bool IsPostgresUrl(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

int64_t PostgresLockKey(const std::string& experiment) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (unsigned char c : std::string("tune run:") + experiment) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

namespace {

// Whether the URL's user information ("user:password@") or its query
// ("?password=...") carries a password.
bool UrlHasPassword(const std::string& url) {
  const size_t start = url.find("://") + 3;
  size_t end = url.find_first_of("/?", start);
  if (end == std::string::npos) end = url.size();
  const std::string authority = url.substr(start, end - start);
  const size_t at = authority.rfind('@');
  if (at != std::string::npos && authority.substr(0, at).find(':') != std::string::npos) return true;
  const size_t q = url.find('?');
  if (q != std::string::npos) {
    const std::string query = "&" + url.substr(q + 1);
    if (query.find("&password=") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

#ifndef TUNE_HAVE_POSTGRES

bool PostgresSupported() { return false; }

namespace {
Status NoPostgres(const std::string& url) {
  return Status::FailedPrecondition(url +
                                    ": this tune was built without PostgreSQL support (libpq was not found when it "
                                    "was built); install libpq-dev and rebuild, or use an SQLite file for --db");
}
}  // namespace

Status CheckPostgresUrl(const std::string& url, const std::string& what) {
  if (UrlHasPassword(url)) {
    return Status::InvalidArgument(what + ": a database URL must not contain a password; give it in PGPASSWORD or "
                                          "~/.pgpass");
  }
  return NoPostgres(url);
}
Result<std::unique_ptr<Storage>> OpenPostgresStorage(const std::string& url, bool) {
  TUNE_RETURN_IF_ERROR(CheckPostgresUrl(url));
  return NoPostgres(url);
}
Result<std::unique_ptr<Storage>> OpenPostgresStorageReadOnly(const std::string& url) {
  return OpenPostgresStorage(url, false);
}
Result<std::unique_ptr<ExperimentLease>> LockPostgresExperiment(const std::string& url, const std::string&) {
  TUNE_RETURN_IF_ERROR(CheckPostgresUrl(url));
  return NoPostgres(url);
}
Result<std::unique_ptr<internal::RawDatabase>> internal::OpenPostgresRaw(const std::string& url) {
  TUNE_RETURN_IF_ERROR(CheckPostgresUrl(url));
  return NoPostgres(url);
}

#else  // TUNE_HAVE_POSTGRES

bool PostgresSupported() { return true; }

Status CheckPostgresUrl(const std::string& url, const std::string& what) {
  if (UrlHasPassword(url)) {
    return Status::InvalidArgument(what + ": a database URL must not contain a password; give it in PGPASSWORD or "
                                          "~/.pgpass");
  }
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) {
    std::string why = error ? error : "unreadable";
    if (error) PQfreemem(error);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return Status::InvalidArgument(what + ": " + url + " is not a PostgreSQL URL libpq reads (" + why +
                                   "); expected postgresql://user@host:5432/database");
  }
  bool password = false;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::strcmp(o->keyword, "password") == 0 && o->val != nullptr && o->val[0] != '\0') password = true;
  }
  PQconninfoFree(options);
  if (password) {
    return Status::InvalidArgument(what + ": a database URL must not contain a password; give it in PGPASSWORD or "
                                          "~/.pgpass");
  }
  return Status::Ok();
}

namespace {

double Now() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

// A statement failed: its SQLSTATE and the server's message.
struct PgError {
  std::string sqlstate;
  std::string message;
  bool connection_lost = false;
};

// A text parameter; nullopt is NULL.
using Param = std::optional<std::string>;

Param P(int64_t v) { return std::to_string(v); }
Param P(int v) { return std::to_string(v); }
Param P(const std::string& v) { return v; }
Param P(const char* v) { return std::string(v); }
Param P(bool v) { return std::string(v ? "t" : "f"); }
std::string DoubleText(double v) {
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
// NaN is stored as NULL, as SQLite does.
Param P(double v) {
  if (std::isnan(v)) return std::nullopt;
  return DoubleText(v);
}
Param P(std::optional<double> v) { return v ? P(*v) : std::nullopt; }
Param P(std::optional<int64_t> v) { return v ? P(*v) : std::nullopt; }

// A PostgreSQL array literal's element, quoted.
std::string ArrayElement(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A result, freed with it.
class Rows {
 public:
  explicit Rows(PGresult* r) : r_(r) {}
  ~Rows() { PQclear(r_); }
  Rows(Rows&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;

  int size() const { return PQntuples(r_); }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  std::string text(int row, int col) const { return PQgetvalue(r_, row, col); }
  int64_t i64(int row, int col) const { return std::strtoll(PQgetvalue(r_, row, col), nullptr, 10); }
  int i32(int row, int col) const { return static_cast<int>(i64(row, col)); }
  double f64(int row, int col) const { return std::strtod(PQgetvalue(r_, row, col), nullptr); }
  bool boolean(int row, int col) const { return PQgetvalue(r_, row, col)[0] == 't'; }
  std::optional<double> opt_f64(int row, int col) const {
    if (null(row, col)) return std::nullopt;
    return f64(row, col);
  }
  std::optional<int64_t> opt_i64(int row, int col) const {
    if (null(row, col)) return std::nullopt;
    return i64(row, col);
  }
  // Rows an INSERT, UPDATE or DELETE changed.
  int64_t affected() const { return std::strtoll(PQcmdTuples(r_), nullptr, 10); }
  PGresult* raw() const { return r_; }

 private:
  PGresult* r_;
};

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) c = c == '\n' ? ' ' : c;
  return s;
}

// One connection and its prepared statements. Not thread-safe.
class PgConnection {
 public:
  explicit PgConnection(PGconn* c) : c_(c) {}
  ~PgConnection() { PQfinish(c_); }
  PGconn* get() { return c_; }

  // Runs one or more statements without parameters (simple protocol).
  Rows Simple(const std::string& sql) {
    Rows r(PQexec(c_, sql.c_str()));
    Check(r, sql.c_str());
    return r;
  }

  // Runs `sql` (a string that outlives the connection: a literal or a
  // static) with text parameters, prepared on first use.
  Rows Exec(const char* sql, const std::vector<Param>& params = {}) {
    auto it = prepared_.find(sql);
    if (it == prepared_.end()) {
      std::string name = "tune_" + std::to_string(prepared_.size());
      Rows prep(PQprepare(c_, name.c_str(), sql, 0, nullptr));
      Check(prep, sql);
      it = prepared_.emplace(sql, std::move(name)).first;
    }
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const Param& p : params) values.push_back(p ? p->c_str() : nullptr);
    Rows r(PQexecPrepared(c_, it->second.c_str(), static_cast<int>(values.size()), values.data(), nullptr, nullptr,
                          0));
    Check(r, sql);
    return r;
  }

  // Reconnects after a lost connection; false if the server is still gone.
  bool EnsureConnected() {
    if (PQstatus(c_) == CONNECTION_OK) return true;
    PQreset(c_);
    prepared_.clear();
    return PQstatus(c_) == CONNECTION_OK;
  }

  // Ends a failed transaction, if the connection is still in one.
  void RollbackQuietly() {
    if (PQstatus(c_) != CONNECTION_OK) return;
    if (PQtransactionStatus(c_) == PQTRANS_IDLE) return;
    PQclear(PQexec(c_, "ROLLBACK"));
  }

  std::string ErrorMessage() const { return Trim(PQerrorMessage(c_)); }

 private:
  // Throws PgError unless the statement succeeded.
  void Check(const Rows& r, const char*) {
    ExecStatusType st = r.raw() ? PQresultStatus(r.raw()) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY) return;
    PgError e;
    if (r.raw()) {
      const char* state = PQresultErrorField(r.raw(), PG_DIAG_SQLSTATE);
      const char* primary = PQresultErrorField(r.raw(), PG_DIAG_MESSAGE_PRIMARY);
      if (state) e.sqlstate = state;
      e.message = primary ? primary : Trim(PQresultErrorMessage(r.raw()));
    }
    if (e.message.empty()) e.message = ErrorMessage();
    e.connection_lost = PQstatus(c_) != CONNECTION_OK;
    throw e;
  }
  PGconn* c_;
  std::unordered_map<const char*, std::string> prepared_;
};

TrialState StateFromText(const std::string& text) {
  auto s = ParseTrialState(text);
  TUNE_CHECK(s.has_value());  // the CHECK constraint allows nothing else
  return *s;
}

// The state of a trial as seen by the transition checks.
struct TrialRow {
  int number = 0;
  TrialState state = TrialState::kPending;
  int attempt = 0;
  ExperimentId experiment_id = 0;
  bool started = false;  // some attempt has started
};

Status FromPgError(const std::string& db, const PgError& e) {
  const std::string& s = e.sqlstate;
  if (e.connection_lost || s.rfind("08", 0) == 0 || s.rfind("57P", 0) == 0) {
    return Status::Unavailable(db + ": lost the connection to the PostgreSQL server (" + e.message + ")");
  }
  if (s == "40001" || s == "40P01" || s == "55P03") {
    return Status::Unavailable(db + ": the transaction was cancelled by a conflict with another one (" + e.message +
                               "); try again");
  }
  if (s == "53100") {
    return Status::FailedPrecondition(db + ": cannot write the database: the server's disk is full (" + e.message +
                                      ")");
  }
  if (s == "25006") {
    return Status::FailedPrecondition(db + ": cannot write the database: it is read-only (" + e.message + ")");
  }
  if (s == "42501") {
    return Status::FailedPrecondition(db + ": the database user may not do this (" + e.message +
                                      "); grant it the tables' privileges");
  }
  if (s.rfind("53", 0) == 0) {
    return Status::Unavailable(db + ": the PostgreSQL server has run out of resources (" + e.message + ")");
  }
  return Status::Internal(db + ": PostgreSQL error " + s + ": " + e.message);
}

// Fills the metrics (or any name/value) of report `id` in one statement.
std::pair<std::string, std::string> NameValueArrays(const std::map<std::string, double>& values) {
  std::string names = "{", nums = "{";
  for (const auto& [name, value] : values) {
    if (names.size() > 1) {
      names += ',';
      nums += ',';
    }
    names += ArrayElement(name);
    nums += std::isnan(value) ? std::string("NULL") : DoubleText(value);
  }
  return {names + "}", nums + "}"};
}

// The data_version bump of a single-statement write, when `cte` (a CTE of
// the statement) has a row.
#define TUNE_PG_BUMP(cte) \
  "d AS (UPDATE tune_meta SET value = value + 1 WHERE key = 'data_version' AND EXISTS (SELECT 1 FROM " cte ")) "

class PostgresStorage final : public Storage {
 public:
  PostgresStorage(std::unique_ptr<PgConnection> c, std::string url, bool read_only)
      : db_(std::move(url)), read_only_(read_only), c_(std::move(c)) {}

  Result<ExperimentId> CreateExperiment(const std::string& name, const std::string& spec_json,
                                        uint64_t seed) override;
  Result<ExperimentRecord> FindExperiment(const std::string& name) override;
  Result<std::vector<ExperimentRecord>> ListExperiments() override;
  Status SetExperimentState(ExperimentId id, ExperimentState state, const std::string& message) override;
  Status SetExperimentSpec(ExperimentId id, const std::string& spec_json) override {
    return SetExperimentColumn(id,
                               "WITH u AS (UPDATE experiments SET spec_json = $1::text WHERE id = $2::bigint "
                               "RETURNING id), " TUNE_PG_BUMP("u") "SELECT count(*) FROM u",
                               P(spec_json));
  }
  Status SetExperimentRunSeconds(ExperimentId id, double seconds) override {
    return SetExperimentColumn(id,
                               "WITH u AS (UPDATE experiments SET run_seconds = $1::float8 WHERE id = $2::bigint "
                               "RETURNING id), " TUNE_PG_BUMP("u") "SELECT count(*) FROM u",
                               P(seconds));
  }

  Result<Trial> CreateTrial(ExperimentId e, const ParamMap& params) override;
  Status StartTrial(TrialId t, int attempt, const std::string& location) override;
  Status AppendReport(TrialId t, int attempt, const MetricReport& report, std::optional<double> objective) override {
    return InsertReport(t, attempt, report, objective, "");
  }
  Status AppendExcludedReport(TrialId t, int attempt, const MetricReport& report, std::optional<double> objective,
                              const std::string& reason) override {
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
  Status FinishTrial(TrialId t, TrialState state, std::optional<double> value, std::optional<int64_t> pruned_rung,
                     const std::string& message) override {
    return FinishTrialWithValues(t, state, value, {}, {}, pruned_rung, message);
  }
  Status FinishTrialWithValues(TrialId t, TrialState state, std::optional<double> value,
                               const std::vector<double>& values, const std::vector<double>& constraints,
                               std::optional<int64_t> pruned_rung, const std::string& message) override;

  Result<History> ListTrials(ExperimentId e) override;
  Result<std::vector<TrialRecord>> ListTrialRecords(ExperimentId e) override { return ReadTrialRecords(e, true); }
  Result<std::vector<TrialRecord>> ListTrialSummaries(ExperimentId e) override { return ReadTrialRecords(e, false); }
  Result<TrialRecord> GetTrialSummary(TrialId t) override;
  Result<TrialTally> TallyTrials(ExperimentId e, bool maximize) override;
  Result<int64_t> DataVersion() override;
  Result<std::vector<StoredReport>> ListReports(ExperimentId e) override;
  Result<std::vector<StoredReport>> ListTrialReports(TrialId t) override;

  Status SetTrackingRun(ExperimentId e, const std::string& target, int trial_number,
                        const std::string& run_id) override;
  Result<std::map<int, std::string>> ListTrackingRuns(ExperimentId e, const std::string& target) override;

 private:
  template <typename F>
  Status Transact(bool write, F&& body);
  // One write statement as its own transaction (one round trip): the hot
  // transitions put their checks and the data_version bump into the
  // statement. *rows gets its answer.
  Status Single(const char* sql, const std::vector<Param>& params, std::optional<Rows>* rows);
  Status SetExperimentColumn(ExperimentId id, const char* sql, Param value);
  Status Retry(TrialId t, const std::string& message, bool failed);
  Status Start(TrialId t, int attempt, const std::string& location);
  void WriteParams(TrialId t, const ParamMap& params, bool replace);
  Status InsertReport(TrialId t, int attempt, const MetricReport& report, std::optional<double> objective,
                      const std::string& excluded);
  // value and last_step from the counted reports of `attempt`.
  void RecomputeValue(TrialId t, int attempt);
  Status CheckExperiment(ExperimentId e);
  Result<TrialRow> LoadTrial(TrialId t);
  void FillIntermediate(ExperimentId e, std::vector<Trial*>& trials);
  void FillValues(ExperimentId e, std::vector<Trial*>& trials);
  Result<std::vector<TrialRecord>> ReadTrialRecords(ExperimentId e, bool intermediate);
  std::string TrialName(TrialId t, const TrialRow& row);

  const std::string db_;  // the URL, for messages (it holds no password)
  const bool read_only_;
  std::mutex mu_;
  std::unique_ptr<PgConnection> c_;  // guarded by mu_
};

template <typename F>
Status PostgresStorage::Transact(bool write, F&& body) {
  std::lock_guard<std::mutex> lock(mu_);
  if (write && read_only_) {
    return Status::FailedPrecondition(db_ + ": cannot write the database: it is opened read-only");
  }
  if (!c_->EnsureConnected()) {
    return Status::Unavailable(db_ + ": lost the connection to the PostgreSQL server and cannot reconnect (" +
                               c_->ErrorMessage() + ")");
  }
  try {
    c_->Simple(write ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    Status st = body();
    if (!st.ok()) {
      c_->RollbackQuietly();
      return st;
    }
    c_->Simple(write ? "UPDATE tune_meta SET value = value + 1 WHERE key = 'data_version'; COMMIT" : "COMMIT");
    return st;
  } catch (const PgError& e) {
    c_->RollbackQuietly();
    return FromPgError(db_, e);
  }
}

Status PostgresStorage::Single(const char* sql, const std::vector<Param>& params, std::optional<Rows>* rows) {
  std::lock_guard<std::mutex> lock(mu_);
  if (read_only_) return Status::FailedPrecondition(db_ + ": cannot write the database: it is opened read-only");
  if (!c_->EnsureConnected()) {
    return Status::Unavailable(db_ + ": lost the connection to the PostgreSQL server and cannot reconnect (" +
                               c_->ErrorMessage() + ")");
  }
  try {
    rows->emplace(c_->Exec(sql, params));
    return Status::Ok();
  } catch (const PgError& e) {
    c_->RollbackQuietly();
    return FromPgError(db_, e);
  }
}

Status PostgresStorage::CheckExperiment(ExperimentId e) {
  if (c_->Exec("SELECT 1 FROM experiments WHERE id = $1::bigint", {P(static_cast<int64_t>(e))}).size() == 0) {
    return Status::NotFound(db_ + ": no experiment with id " + std::to_string(e));
  }
  return Status::Ok();
}

Result<TrialRow> PostgresStorage::LoadTrial(TrialId t) {
  Rows r = c_->Exec(
      "SELECT number, state, attempt, experiment_id, started_at IS NOT NULL FROM trials WHERE id = $1::bigint",
      {P(static_cast<int64_t>(t))});
  if (r.size() == 0) return Status::NotFound(db_ + ": no trial with id " + std::to_string(t));
  TrialRow row;
  row.number = r.i32(0, 0);
  row.state = StateFromText(r.text(0, 1));
  row.attempt = r.i32(0, 2);
  row.experiment_id = r.i64(0, 3);
  row.started = r.boolean(0, 4);
  return row;
}

std::string PostgresStorage::TrialName(TrialId t, const TrialRow& row) {
  std::string experiment = "id " + std::to_string(row.experiment_id);
  Rows r = c_->Exec("SELECT name FROM experiments WHERE id = $1::bigint", {P(static_cast<int64_t>(row.experiment_id))});
  if (r.size() > 0) experiment = "'" + r.text(0, 0) + "'";
  return "trial " + std::to_string(row.number) + " (id " + std::to_string(t) + ") of experiment " + experiment;
}

// ---------------------------------------------------------------------------
// Experiments

Result<ExperimentId> PostgresStorage::CreateExperiment(const std::string& name, const std::string& spec_json,
                                                       uint64_t seed) {
  if (name.empty()) return Status::InvalidArgument("an experiment needs a non-empty name");
  ExperimentId id = 0;
  Status exists = Status::FailedPrecondition(db_ + ": an experiment named '" + name +
                                             "' already exists; resume it (--resume) or choose another name");
  Status st = Transact(true, [&]() -> Status {
    if (c_->Exec("SELECT 1 FROM experiments WHERE name = $1::text", {P(name)}).size() > 0) return exists;
    Rows r = c_->Exec(
        "INSERT INTO experiments (name, spec_json, state, seed, created_at) "
        "VALUES ($1::text, $2::text, 'running', $3::bigint, $4::float8) RETURNING id",
        {P(name), P(spec_json), P(static_cast<int64_t>(seed)), P(Now())});
    id = r.i64(0, 0);
    return Status::Ok();
  });
  // Another tuner created it between the check and the insert.
  if (!st.ok() && st.message().find("23505") != std::string::npos) return exists;
  if (!st.ok()) return st;
  return id;
}

constexpr const char kExperimentColumns[] =
    "SELECT id, name, spec_json, state, seed, created_at, ended_at, message, run_seconds FROM experiments ";

ExperimentRecord ReadExperiment(const Rows& r, int i) {
  ExperimentRecord e;
  e.id = r.i64(i, 0);
  e.name = r.text(i, 1);
  e.spec_json = r.text(i, 2);
  auto state = ParseExperimentState(r.text(i, 3));
  TUNE_CHECK(state.has_value());
  e.state = *state;
  e.seed = static_cast<uint64_t>(r.i64(i, 4));
  e.created_at = r.f64(i, 5);
  e.ended_at = r.opt_f64(i, 6);
  e.message = r.text(i, 7);
  e.run_seconds = r.f64(i, 8);
  return e;
}

Result<ExperimentRecord> PostgresStorage::FindExperiment(const std::string& name) {
  static const std::string sql = std::string(kExperimentColumns) + "WHERE name = $1::text";
  ExperimentRecord record;
  Status st = Transact(false, [&]() -> Status {
    Rows r = c_->Exec(sql.c_str(), {P(name)});
    if (r.size() == 0) return Status::NotFound(db_ + ": no experiment named '" + name + "'");
    record = ReadExperiment(r, 0);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return record;
}

Result<std::vector<ExperimentRecord>> PostgresStorage::ListExperiments() {
  static const std::string sql = std::string(kExperimentColumns) + "ORDER BY created_at, id";
  std::vector<ExperimentRecord> out;
  Status st = Transact(false, [&]() -> Status {
    Rows r = c_->Exec(sql.c_str());
    for (int i = 0; i < r.size(); ++i) out.push_back(ReadExperiment(r, i));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Status PostgresStorage::SetExperimentState(ExperimentId id, ExperimentState state, const std::string& message) {
  std::optional<Rows> r;
  TUNE_RETURN_IF_ERROR(Single(
      "WITH u AS (UPDATE experiments SET state = $1::text, message = $2::text, "
      "ended_at = CASE WHEN $1::text = 'running' THEN NULL ELSE $3::float8 END WHERE id = $4::bigint RETURNING id), "
      TUNE_PG_BUMP("u") "SELECT count(*) FROM u",
      {P(ExperimentStateName(state)), P(message), P(Now()), P(static_cast<int64_t>(id))}, &r));
  if (r->i64(0, 0) == 0) return Status::NotFound(db_ + ": no experiment with id " + std::to_string(id));
  return Status::Ok();
}

// `sql` is "WITH u AS (UPDATE experiments SET <column> = $1 WHERE id = $2
// RETURNING id), <bump> SELECT count(*) FROM u".
Status PostgresStorage::SetExperimentColumn(ExperimentId id, const char* sql, Param value) {
  std::optional<Rows> r;
  TUNE_RETURN_IF_ERROR(Single(sql, {value, P(static_cast<int64_t>(id))}, &r));
  if (r->i64(0, 0) == 0) return Status::NotFound(db_ + ": no experiment with id " + std::to_string(id));
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Trial transitions

Status CheckStorable(const ParamMap& params) {
  for (const auto& [name, value] : params) {
    if (!ParamIsStorable(value)) {
      return Status::InvalidArgument("parameter '" + name + "' is " + ParamToString(value) +
                                     "; only finite numbers can be stored");
    }
  }
  return Status::Ok();
}

std::vector<Param> ParamArrays(const ParamMap& params);

void PostgresStorage::WriteParams(TrialId t, const ParamMap& params, bool replace) {
  if (replace) {
    c_->Exec("UPDATE trials SET params_json = $1::text WHERE id = $2::bigint",
             {P(ParamsToJson(params)), P(static_cast<int64_t>(t))});
    c_->Exec("DELETE FROM trial_params WHERE trial_id = $1::bigint", {P(static_cast<int64_t>(t))});
  }
  if (params.empty()) return;
  std::vector<Param> arrays = ParamArrays(params);
  arrays.insert(arrays.begin(), P(static_cast<int64_t>(t)));
  c_->Exec(
      "INSERT INTO trial_params (trial_id, name, type, value_text, value_num) "
      "SELECT $1::bigint, n, ty, tx, v FROM unnest($2::text[], $3::text[], $4::text[], $5::numeric[]) "
      "AS u(n, ty, tx, v)",
      arrays);
}

// All parameters as four arrays (names, types, texts, numbers: NULL for
// strings), for one statement.
std::vector<Param> ParamArrays(const ParamMap& params) {
  std::string names = "{", types = "{", texts = "{", nums = "{";
  for (const auto& [name, value] : params) {
    if (names.size() > 1) {
      names += ',';
      types += ',';
      texts += ',';
      nums += ',';
    }
    names += ArrayElement(name);
    types += ArrayElement(ParamTypeName(value));
    texts += ArrayElement(ParamToString(value));
    if (auto* i = std::get_if<int64_t>(&value)) {
      nums += std::to_string(*i);
    } else if (auto* d = std::get_if<double>(&value)) {
      nums += DoubleText(*d);
    } else if (auto* b = std::get_if<bool>(&value)) {
      nums += *b ? "1" : "0";
    } else {
      nums += "NULL";
    }
  }
  return {names + "}", types + "}", texts + "}", nums + "}"};
}

Result<Trial> PostgresStorage::CreateTrial(ExperimentId e, const ParamMap& params) {
  TUNE_RETURN_IF_ERROR(CheckStorable(params));
  Trial trial;
  trial.params = params;
  const std::string params_json = ParamsToJson(params);
  {
    // One round trip: the trial and its parameters in one statement.
    std::vector<Param> args = ParamArrays(params);
    args.insert(args.begin(), {P(static_cast<int64_t>(e)), P(params_json)});
    std::optional<Rows> r;
    TUNE_RETURN_IF_ERROR(Single(
        "WITH e AS (SELECT id FROM experiments WHERE id = $1::bigint), "
        "t AS (INSERT INTO trials (experiment_id, number, state, params_json) "
        "SELECT e.id, (SELECT COALESCE(MAX(number) + 1, 0) FROM trials WHERE experiment_id = $1::bigint), "
        "'pending', $2::text FROM e RETURNING id, number), "
        "p AS (INSERT INTO trial_params (trial_id, name, type, value_text, value_num) "
        "SELECT t.id, n, ty, tx, v FROM t, unnest($3::text[], $4::text[], $5::text[], $6::numeric[]) "
        "AS u(n, ty, tx, v)), " TUNE_PG_BUMP("t")
        "SELECT id, number FROM t",
        args, &r));
    if (r->size() == 1) {
      trial.id = r->i64(0, 0);
      trial.number = r->i32(0, 1);
      return trial;
    }
  }
  Status st = Transact(true, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    Rows r = c_->Exec(
        "INSERT INTO trials (experiment_id, number, state, params_json) "
        "SELECT $1::bigint, COALESCE(MAX(number) + 1, 0), 'pending', $2::text FROM trials "
        "WHERE experiment_id = $1::bigint RETURNING id, number",
        {P(static_cast<int64_t>(e)), P(params_json)});
    trial.id = r.i64(0, 0);
    trial.number = r.i32(0, 1);
    WriteParams(trial.id, params, false);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return trial;
}

Status PostgresStorage::StartTrial(TrialId t, int attempt, const std::string& location) {
  // Start's checks in the statement; when they fail, Start says why.
  std::optional<Rows> r;
  TUNE_RETURN_IF_ERROR(Single(
      "WITH u AS (UPDATE trials SET state = 'running', attempt = $1::integer, location = $2::text, "
      "started_at = COALESCE(started_at, $3::float8) WHERE id = $4::bigint AND state IN ('pending', 'paused') "
      "AND ($1::integer > attempt OR ($1::integer = attempt AND started_at IS NULL)) RETURNING id), " TUNE_PG_BUMP("u")
      "SELECT count(*) FROM u",
      {P(attempt), P(location), P(Now()), P(static_cast<int64_t>(t))}, &r));
  if (r->i64(0, 0) == 1) return Status::Ok();
  return Transact(true, [&]() -> Status { return Start(t, attempt, location); });
}

Status PostgresStorage::Start(TrialId t, int attempt, const std::string& location) {
  TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
  if (row.state != TrialState::kPending && row.state != TrialState::kPaused) {
    return Status::FailedPrecondition(TrialName(t, row) + " is " + TrialStateName(row.state) +
                                      "; only a pending or paused trial can start");
  }
  // A retried or continued trial needs a new attempt number (as SQLite).
  const bool again = row.started;
  if (attempt < row.attempt || (again && attempt == row.attempt)) {
    return Status::FailedPrecondition(TrialName(t, row) + " cannot start attempt " + std::to_string(attempt) +
                                      ": attempt " + std::to_string(row.attempt) + " was already made");
  }
  c_->Exec(
      "UPDATE trials SET state = 'running', attempt = $1::integer, location = $2::text, "
      "started_at = COALESCE(started_at, $3::float8) WHERE id = $4::bigint",
      {P(attempt), P(location), P(Now()), P(static_cast<int64_t>(t))});
  return Status::Ok();
}

void PostgresStorage::RecomputeValue(TrialId t, int attempt) {
  c_->Exec(
      "UPDATE trials SET "
      "last_step = (SELECT MAX(step) FROM reports WHERE trial_id = $1::bigint AND attempt = $2::integer "
      "AND excluded IS NULL), "
      "value = (SELECT objective FROM reports WHERE trial_id = $1::bigint AND attempt = $2::integer "
      "AND excluded IS NULL AND objective IS NOT NULL ORDER BY id DESC LIMIT 1) WHERE id = $1::bigint",
      {P(static_cast<int64_t>(t)), P(attempt)});
}

Status PostgresStorage::ContinueTrial(TrialId t, int attempt, const std::string& location, int64_t through_step) {
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    const int previous = row.attempt;
    TUNE_RETURN_IF_ERROR(Start(t, attempt, location));
    // Copies in the order of the originals (identity ids follow the
    // SELECT's order), then their metrics through carried_from.
    c_->Exec(
        "INSERT INTO reports (trial_id, attempt, step, time, objective, carried_from) "
        "SELECT trial_id, $2::integer, step, time, objective, id FROM reports WHERE trial_id = $1::bigint "
        "AND attempt = $3::integer AND excluded IS NULL AND step <= $4::bigint ORDER BY id",
        {P(static_cast<int64_t>(t)), P(attempt), P(previous), P(through_step)});
    c_->Exec(
        "INSERT INTO metrics (report_id, name, value) SELECT c.id, m.name, m.value FROM reports c "
        "JOIN metrics m ON m.report_id = c.carried_from WHERE c.trial_id = $1::bigint AND c.attempt = $2::integer "
        "AND c.carried_from IS NOT NULL",
        {P(static_cast<int64_t>(t)), P(attempt)});
    RecomputeValue(t, attempt);
    return Status::Ok();
  });
}

Status PostgresStorage::PauseTrial(TrialId t, const std::string& message) {
  std::optional<Rows> r;
  TUNE_RETURN_IF_ERROR(Single(
      "WITH u AS (UPDATE trials SET state = 'paused', message = $1::text WHERE id = $2::bigint AND state = 'running' "
      "RETURNING id), " TUNE_PG_BUMP("u") "SELECT count(*) FROM u",
      {P(message), P(static_cast<int64_t>(t))}, &r));
  if (r->i64(0, 0) == 1) return Status::Ok();
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " + TrialStateName(row.state) +
                                        "; only a running trial can be paused");
    }
    c_->Exec("UPDATE trials SET state = 'paused', message = $1::text WHERE id = $2::bigint",
             {P(message), P(static_cast<int64_t>(t))});
    return Status::Ok();
  });
}

Status PostgresStorage::RecordExploit(TrialId t, int64_t step, TrialId donor, int64_t donor_step,
                                      const ParamMap& after) {
  TUNE_RETURN_IF_ERROR(CheckStorable(after));
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning && row.state != TrialState::kPaused) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " + TrialStateName(row.state) +
                                        "; only a running or paused trial can take a donor's checkpoint");
    }
    TUNE_ASSIGN_OR_RETURN(TrialRow donor_row, LoadTrial(donor));
    if (donor_row.experiment_id != row.experiment_id) {
      return Status::InvalidArgument(TrialName(donor, donor_row) + " is not in the experiment of " +
                                     TrialName(t, row));
    }
    c_->Exec(
        "INSERT INTO exploits (trial_id, step, donor_trial_id, donor_step, params_before, params_after, "
        "after_report_id, time) SELECT $1::bigint, $2::bigint, $3::bigint, $4::bigint, params_json, $5::text, "
        "(SELECT COALESCE(MAX(id), 0) FROM reports), $6::float8 FROM trials WHERE id = $1::bigint",
        {P(static_cast<int64_t>(t)), P(step), P(static_cast<int64_t>(donor)), P(donor_step), P(ParamsToJson(after)),
         P(Now())});
    WriteParams(t, after, true);
    return Status::Ok();
  });
}

Result<std::vector<StoredExploit>> PostgresStorage::ListExploits(ExperimentId e) {
  std::vector<StoredExploit> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    Rows r = c_->Exec(
        "SELECT x.id, x.after_report_id, x.trial_id, t.number, x.step, x.donor_trial_id, d.number, "
        "x.donor_step, x.params_before, x.params_after, x.time FROM exploits x "
        "JOIN trials t ON t.id = x.trial_id JOIN trials d ON d.id = x.donor_trial_id "
        "WHERE t.experiment_id = $1::bigint ORDER BY x.id",
        {P(static_cast<int64_t>(e))});
    for (int i = 0; i < r.size(); ++i) {
      StoredExploit x;
      x.id = r.i64(i, 0);
      x.after_seq = r.i64(i, 1);
      x.trial_id = r.i64(i, 2);
      x.trial_number = r.i32(i, 3);
      x.step = r.i64(i, 4);
      x.donor_id = r.i64(i, 5);
      x.donor_number = r.i32(i, 6);
      x.donor_step = r.i64(i, 7);
      auto before = ParamsFromJson(r.text(i, 8));
      auto after = ParamsFromJson(r.text(i, 9));
      if (!before.ok() || !after.ok()) {
        return Status::Internal("exploit id " + std::to_string(x.id) + ": unreadable parameters");
      }
      x.before = std::move(before).value();
      x.after = std::move(after).value();
      x.time = r.f64(i, 10);
      out.push_back(std::move(x));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Status PostgresStorage::InsertReport(TrialId t, int attempt, const MetricReport& report,
                                     std::optional<double> objective, const std::string& excluded) {
  // The hot path, one round trip: the checks, the report, its metrics, the
  // trial's value and last_step and the data version in one statement.
  // When the checks fail, the transaction below says why.
  {
    auto [names, values] = NameValueArrays(report.values);
    std::optional<Rows> r;
    TUNE_RETURN_IF_ERROR(Single(
        "WITH ok AS (SELECT id FROM trials WHERE id = $1::bigint AND state = 'running' AND attempt = $2::integer), "
        "r AS (INSERT INTO reports (trial_id, attempt, step, time, objective, excluded) "
        "SELECT id, $2::integer, $3::bigint, $4::float8, $5::float8, $6::text FROM ok RETURNING id), "
        "m AS (INSERT INTO metrics (report_id, name, value) SELECT r.id, n, v FROM r, "
        "unnest($7::text[], $8::float8[]) AS u(n, v)), "
        "t AS (UPDATE trials SET last_step = GREATEST(last_step, $3::bigint), "
        "value = CASE WHEN $9::boolean THEN $5::float8 ELSE value END "
        "WHERE id IN (SELECT id FROM ok) AND $6::text IS NULL), " TUNE_PG_BUMP("r")
        "SELECT count(*) FROM r",
        {P(static_cast<int64_t>(t)), P(attempt), P(report.step), P(report.time > 0 ? report.time : Now()),
         P(objective), excluded.empty() ? Param() : P(excluded), names, values, P(objective.has_value())},
        &r));
    if (r->i64(0, 0) == 1) return Status::Ok();
  }
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " + TrialStateName(row.state) +
                                        "; only a running trial takes reports");
    }
    if (attempt != row.attempt) {
      return Status::FailedPrecondition("a report of attempt " + std::to_string(attempt) + " of " +
                                        TrialName(t, row) + " arrived, but its current attempt is " +
                                        std::to_string(row.attempt));
    }
    auto [names, values] = NameValueArrays(report.values);
    // The report and its metrics in one statement.
    c_->Exec(
        "WITH r AS (INSERT INTO reports (trial_id, attempt, step, time, objective, excluded) "
        "VALUES ($1::bigint, $2::integer, $3::bigint, $4::float8, $5::float8, $6::text) RETURNING id) "
        "INSERT INTO metrics (report_id, name, value) SELECT r.id, n, v FROM r, "
        "unnest($7::text[], $8::float8[]) AS u(n, v)",
        {P(static_cast<int64_t>(t)), P(attempt), P(report.step), P(report.time > 0 ? report.time : Now()),
         P(objective), excluded.empty() ? Param() : P(excluded), names, values});
    if (!excluded.empty()) return Status::Ok();  // changes neither value nor last_step
    c_->Exec(
        "UPDATE trials SET last_step = GREATEST(last_step, $1::bigint), "
        "value = CASE WHEN $4::boolean THEN $2::float8 ELSE value END WHERE id = $3::bigint",
        {P(report.step), P(objective), P(static_cast<int64_t>(t)), P(objective.has_value())});
    return Status::Ok();
  });
}

Status PostgresStorage::ExcludeAttemptReports(TrialId t, int attempt, const std::string& reason,
                                              std::optional<int64_t> from_step) {
  TUNE_CHECK(!reason.empty());
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning || attempt != row.attempt) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " + TrialStateName(row.state) + " in attempt " +
                                        std::to_string(row.attempt) + "; only the running attempt's reports (not " +
                                        std::to_string(attempt) + "'s) can be excluded");
    }
    c_->Exec(
        "UPDATE reports SET excluded = $1::text WHERE trial_id = $2::bigint AND attempt = $3::integer "
        "AND excluded IS NULL AND step >= $4::bigint",
        {P(reason), P(static_cast<int64_t>(t)), P(attempt),
         P(static_cast<int64_t>(from_step.value_or(std::numeric_limits<int64_t>::min())))});
    RecomputeValue(t, attempt);
    return Status::Ok();
  });
}

Status PostgresStorage::Retry(TrialId t, const std::string& message, bool failed) {
  std::optional<Rows> r;
  TUNE_RETURN_IF_ERROR(Single(
      "WITH u AS (UPDATE trials SET state = 'pending', message = $1::text, value = NULL, last_step = NULL, "
      "failed_attempts = failed_attempts + $2::integer WHERE id = $3::bigint AND state = 'running' RETURNING id), "
      TUNE_PG_BUMP("u") "SELECT count(*) FROM u",
      {P(message), P(failed ? 1 : 0), P(static_cast<int64_t>(t))}, &r));
  if (r->i64(0, 0) == 1) return Status::Ok();
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (row.state != TrialState::kRunning) {
      return Status::FailedPrecondition(TrialName(t, row) + " is " + TrialStateName(row.state) +
                                        "; only a running trial can be retried");
    }
    c_->Exec(
        "UPDATE trials SET state = 'pending', message = $1::text, value = NULL, last_step = NULL, "
        "failed_attempts = failed_attempts + $2::integer WHERE id = $3::bigint",
        {P(message), P(failed ? 1 : 0), P(static_cast<int64_t>(t))});
    return Status::Ok();
  });
}

Status PostgresStorage::FinishTrialWithValues(TrialId t, TrialState state, std::optional<double> value,
                                              const std::vector<double>& values,
                                              const std::vector<double>& constraints,
                                              std::optional<int64_t> pruned_rung, const std::string& message) {
  if (!IsFinished(state)) {
    return Status::InvalidArgument(std::string("FinishTrial needs a terminal state, got ") + TrialStateName(state));
  }
  const bool with_values = !values.empty() || !constraints.empty();
  if (!with_values) {  // one round trip
    std::optional<Rows> r;
    TUNE_RETURN_IF_ERROR(Single(
        "WITH u AS (UPDATE trials SET state = $1::text, value = CASE WHEN $7::boolean THEN $2::float8 ELSE value END, "
        "pruned_rung = $3::bigint, message = $4::text, ended_at = $5::float8 WHERE id = $6::bigint "
        "AND state NOT IN ('completed', 'pruned', 'failed', 'stopped') RETURNING id), " TUNE_PG_BUMP("u")
        "SELECT count(*) FROM u",
        {P(TrialStateName(state)), P(value), P(pruned_rung), P(message), P(Now()), P(static_cast<int64_t>(t)),
         P(value.has_value())},
        &r));
    if (r->i64(0, 0) == 1) return Status::Ok();
  }
  return Transact(true, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    if (IsFinished(row.state)) {
      return Status::FailedPrecondition(TrialName(t, row) + " is already " + TrialStateName(row.state) +
                                        "; a finished trial is immutable");
    }
    // The final value as given (NaN: NULL); none given keeps the latest.
    c_->Exec(
        "UPDATE trials SET state = $1::text, value = CASE WHEN $7::boolean THEN $2::float8 ELSE value END, "
        "pruned_rung = $3::bigint, message = $4::text, ended_at = $5::float8 WHERE id = $6::bigint",
        {P(TrialStateName(state)), P(value), P(pruned_rung), P(message), P(Now()), P(static_cast<int64_t>(t)),
         P(value.has_value())});
    for (const auto& [kind, list] : {std::pair<const char*, const std::vector<double>*>{"objective", &values},
                                     {"constraint", &constraints}}) {
      for (size_t i = 0; i < list->size(); ++i) {
        c_->Exec(
            "INSERT INTO trial_values (trial_id, kind, position, value) VALUES ($1::bigint, $2::text, $3::bigint, "
            "$4::float8) ON CONFLICT (trial_id, kind, position) DO UPDATE SET value = EXCLUDED.value",
            {P(static_cast<int64_t>(t)), P(std::string(kind)), P(static_cast<int64_t>(i)), P((*list)[i])});
      }
    }
    return Status::Ok();
  });
}

// Trial::values and Trial::constraints from trial_values, for experiment
// `e`'s trials, or (e = 0) the one trial in `trials`.
void PostgresStorage::FillValues(ExperimentId e, std::vector<Trial*>& trials) {
  std::unordered_map<TrialId, Trial*> by_id;
  by_id.reserve(trials.size());
  for (Trial* t : trials) by_id[t->id] = t;
  const int64_t one = trials.size() == 1 && e == 0 ? trials.front()->id : 0;
  Rows r = c_->Exec(
      "SELECT v.trial_id, v.kind, v.position, v.value FROM trial_values v JOIN trials t ON t.id = v.trial_id "
      "WHERE ($1::bigint = 0 AND t.id = $2::bigint) OR t.experiment_id = $1::bigint "
      "ORDER BY v.trial_id, v.kind, v.position",
      {P(static_cast<int64_t>(e)), P(one)});
  for (int i = 0; i < r.size(); ++i) {
    auto it = by_id.find(r.i64(i, 0));
    if (it == by_id.end()) continue;
    std::vector<double>& list = r.text(i, 1) == "objective" ? it->second->values : it->second->constraints;
    const auto position = static_cast<size_t>(r.i64(i, 2));
    if (list.size() <= position) list.resize(position + 1, std::numeric_limits<double>::quiet_NaN());
    list[position] = r.null(i, 3) ? std::numeric_limits<double>::quiet_NaN() : r.f64(i, 3);
  }
}

// ---------------------------------------------------------------------------
// Queries

void PostgresStorage::FillIntermediate(ExperimentId e, std::vector<Trial*>& trials) {
  std::unordered_map<TrialId, Trial*> by_id;
  by_id.reserve(trials.size());
  for (Trial* t : trials) by_id[t->id] = t;
  Rows r = c_->Exec(
      "SELECT r.trial_id, r.step, r.objective FROM trials t "
      "JOIN reports r ON r.trial_id = t.id AND r.attempt = t.attempt "
      "WHERE t.experiment_id = $1::bigint AND t.state <> 'pending' AND r.objective IS NOT NULL "
      "AND r.excluded IS NULL "
      // Of two reports of one step, the later one wins.
      "ORDER BY t.number, r.step, r.id",
      {P(static_cast<int64_t>(e))});
  for (int i = 0; i < r.size(); ++i) {
    auto it = by_id.find(r.i64(i, 0));
    if (it == by_id.end()) continue;
    it->second->intermediate[r.i64(i, 1)] = r.f64(i, 2);
  }
}

void ReadTrial(const Rows& r, int i, Trial& t, Status& st) {
  t.id = r.i64(i, 0);
  t.number = r.i32(i, 1);
  t.state = StateFromText(r.text(i, 2));
  auto params = ParamsFromJson(r.text(i, 3));
  if (!params.ok()) {
    st = Status::Internal("trial id " + std::to_string(t.id) + ": " + params.status().message());
    return;
  }
  t.params = std::move(params).value();
  t.value = r.opt_f64(i, 4);
  t.attempt = r.i32(i, 5);
}

constexpr const char kTrialRecordColumns[] =
    "SELECT id, number, state, params_json, value, attempt, started_at, ended_at, "
    "last_step, pruned_rung, location, message, failed_attempts FROM trials ";

Status ReadTrialRecord(const Rows& r, int i, TrialRecord& out) {
  Status st;
  ReadTrial(r, i, out.trial, st);
  TUNE_RETURN_IF_ERROR(st);
  out.started_at = r.opt_f64(i, 6);
  out.ended_at = r.opt_f64(i, 7);
  out.last_step = r.opt_i64(i, 8);
  out.pruned_rung = r.opt_i64(i, 9);
  out.location = r.text(i, 10);
  out.message = r.text(i, 11);
  out.failed_attempts = r.i32(i, 12);
  return Status::Ok();
}

Result<History> PostgresStorage::ListTrials(ExperimentId e) {
  History out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    Rows r = c_->Exec(
        "SELECT id, number, state, params_json, value, attempt FROM trials WHERE experiment_id = $1::bigint "
        "ORDER BY number",
        {P(static_cast<int64_t>(e))});
    Status read;
    for (int i = 0; i < r.size(); ++i) {
      ReadTrial(r, i, out.emplace_back(), read);
      TUNE_RETURN_IF_ERROR(read);
    }
    std::vector<Trial*> ptrs;
    for (Trial& t : out) ptrs.push_back(&t);
    FillValues(e, ptrs);
    FillIntermediate(e, ptrs);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<TrialRecord>> PostgresStorage::ReadTrialRecords(ExperimentId e, bool intermediate) {
  static const std::string sql = std::string(kTrialRecordColumns) + "WHERE experiment_id = $1::bigint ORDER BY number";
  std::vector<TrialRecord> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    Rows r = c_->Exec(sql.c_str(), {P(static_cast<int64_t>(e))});
    for (int i = 0; i < r.size(); ++i) TUNE_RETURN_IF_ERROR(ReadTrialRecord(r, i, out.emplace_back()));
    std::vector<Trial*> ptrs;
    for (TrialRecord& rec : out) ptrs.push_back(&rec.trial);
    FillValues(e, ptrs);
    if (!intermediate) return Status::Ok();
    FillIntermediate(e, ptrs);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<TrialRecord> PostgresStorage::GetTrialSummary(TrialId t) {
  static const std::string sql = std::string(kTrialRecordColumns) + "WHERE id = $1::bigint";
  TrialRecord out;
  Status st = Transact(false, [&]() -> Status {
    Rows r = c_->Exec(sql.c_str(), {P(static_cast<int64_t>(t))});
    if (r.size() == 0) return Status::NotFound("trial id " + std::to_string(t) + " does not exist");
    TUNE_RETURN_IF_ERROR(ReadTrialRecord(r, 0, out));
    std::vector<Trial*> one = {&out.trial};
    FillValues(0, one);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<int64_t> PostgresStorage::DataVersion() {
  int64_t version = 0;
  Status st = Transact(false, [&]() -> Status {
    version = c_->Exec("SELECT value FROM tune_meta WHERE key = 'data_version'").i64(0, 0);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return version;
}

Result<TrialTally> PostgresStorage::TallyTrials(ExperimentId e, bool maximize) {
  TrialTally tally;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    Rows counts = c_->Exec("SELECT state, COUNT(*) FROM trials WHERE experiment_id = $1::bigint GROUP BY state",
                           {P(static_cast<int64_t>(e))});
    for (int i = 0; i < counts.size(); ++i) {
      const int n = counts.i32(i, 1);
      tally.counts[StateFromText(counts.text(i, 0))] += n;
      tally.total += n;
    }
    // Finite values only (NaN is stored as NULL).
    Rows best = c_->Exec(maximize ? "SELECT number, value FROM trials WHERE experiment_id = $1::bigint AND "
                                    "state = 'completed' AND value > '-Infinity'::float8 AND value < "
                                    "'Infinity'::float8 ORDER BY value DESC, number LIMIT 1"
                                  : "SELECT number, value FROM trials WHERE experiment_id = $1::bigint AND "
                                    "state = 'completed' AND value > '-Infinity'::float8 AND value < "
                                    "'Infinity'::float8 ORDER BY value ASC, number LIMIT 1",
                         {P(static_cast<int64_t>(e))});
    if (best.size() > 0) tally.best = std::make_pair(best.i32(0, 0), best.f64(0, 1));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return tally;
}

// Rows of (report id, trial id, attempt, step, time, metric name, value,
// excluded), ordered by report id; a report without metrics has a NULL name.
std::vector<StoredReport> ReadReports(const Rows& r) {
  std::vector<StoredReport> out;
  for (int i = 0; i < r.size(); ++i) {
    const int64_t seq = r.i64(i, 0);
    if (out.empty() || out.back().seq != seq) {
      StoredReport& s = out.emplace_back();
      s.seq = seq;
      s.trial_id = r.i64(i, 1);
      s.attempt = r.i32(i, 2);
      s.report.step = r.i64(i, 3);
      s.report.time = r.f64(i, 4);
      if (!r.null(i, 7)) s.excluded = r.text(i, 7);
    }
    if (!r.null(i, 5)) {
      out.back().report.values[r.text(i, 5)] =
          r.null(i, 6) ? std::numeric_limits<double>::quiet_NaN() : r.f64(i, 6);
    }
  }
  return out;
}

Result<std::vector<StoredReport>> PostgresStorage::ListReports(ExperimentId e) {
  std::vector<StoredReport> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    out = ReadReports(c_->Exec(
        "SELECT r.id, r.trial_id, r.attempt, r.step, r.time, m.name, m.value, r.excluded "
        "FROM trials t JOIN reports r ON r.trial_id = t.id AND r.attempt = t.attempt "
        "LEFT JOIN metrics m ON m.report_id = r.id "
        "WHERE t.experiment_id = $1::bigint AND t.state <> 'pending' AND r.excluded IS NULL ORDER BY r.id, m.name",
        {P(static_cast<int64_t>(e))}));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<StoredReport>> PostgresStorage::ListTrialReports(TrialId t) {
  std::vector<StoredReport> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(TrialRow row, LoadTrial(t));
    (void)row;
    out = ReadReports(c_->Exec(
        "SELECT r.id, r.trial_id, r.attempt, r.step, r.time, m.name, m.value, r.excluded "
        "FROM reports r LEFT JOIN metrics m ON m.report_id = r.id WHERE r.trial_id = $1::bigint "
        "ORDER BY r.id, m.name",
        {P(static_cast<int64_t>(t))}));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Status PostgresStorage::SetTrackingRun(ExperimentId e, const std::string& target, int trial_number,
                                       const std::string& run_id) {
  return Transact(true, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    c_->Exec(
        "INSERT INTO tracking_runs (experiment_id, target, trial_number, run_id) "
        "VALUES ($1::bigint, $2::text, $3::integer, $4::text) "
        "ON CONFLICT (experiment_id, target, trial_number) DO UPDATE SET run_id = EXCLUDED.run_id",
        {P(static_cast<int64_t>(e)), P(target), P(trial_number), P(run_id)});
    return Status::Ok();
  });
}

Result<std::map<int, std::string>> PostgresStorage::ListTrackingRuns(ExperimentId e, const std::string& target) {
  std::map<int, std::string> out;
  Status st = Transact(false, [&]() -> Status {
    TUNE_RETURN_IF_ERROR(CheckExperiment(e));
    Rows r = c_->Exec(
        "SELECT trial_number, run_id FROM tracking_runs WHERE experiment_id = $1::bigint AND target = $2::text",
        {P(static_cast<int64_t>(e)), P(target)});
    for (int i = 0; i < r.size(); ++i) out[r.i32(i, 0)] = r.text(i, 1);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

// ---------------------------------------------------------------------------
// Opening

// A connection to `url`, or Unavailable naming it and libpq's reason.
// `read_only` makes the session refuse every write.
Result<std::unique_ptr<PgConnection>> Connect(const std::string& url, bool read_only) {
  TUNE_RETURN_IF_ERROR(CheckPostgresUrl(url));
  const char* keys[] = {"dbname", "application_name", "options", "connect_timeout", nullptr};
  // synchronous_commit off: SQLite's synchronous=NORMAL in WAL mode. A
  // commit returns once the server has it (a killed tuner loses nothing it
  // committed); a crash of the server's machine may lose the last few
  // hundred milliseconds of commits, never consistency. Each commit no
  // longer waits for a disk flush (about 1 ms, 10x a report's cost).
  const char* values[] = {url.c_str(), "tune",
                          read_only ? "-c default_transaction_read_only=on -c client_min_messages=warning"
                                    : "-c synchronous_commit=off -c client_min_messages=warning",
                          "10", nullptr};
  // expand_dbname: the URL's own settings; ours only where it has none.
  auto c = std::make_unique<PgConnection>(PQconnectdbParams(keys, values, /*expand_dbname=*/1));
  if (c->get() == nullptr || PQstatus(c->get()) != CONNECTION_OK) {
    std::string why = c->get() ? c->ErrorMessage() : "out of memory";
    return Status::Unavailable(url + ": cannot connect to the PostgreSQL server (" + why + ")");
  }
  return c;
}

// The schema version of the database (0: no tune_meta table).
int SchemaVersion(PgConnection& c) {
  // A catalog query, not to_regclass: this session's catalog cache may
  // still hold "no such table" from before another tuner created it.
  Rows exists = c.Exec(
      "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() "
      "AND tablename = 'tune_meta')");
  if (!exists.boolean(0, 0)) return 0;
  Rows r = c.Exec("SELECT value FROM tune_meta WHERE key = 'schema_version'");
  return r.size() == 0 ? 0 : r.i32(0, 0);
}

// Brings the schema to kSchemaVersion, as EnsureSchema does for SQLite.
Status EnsurePostgresSchema(PgConnection& c, const std::string& url, bool create_if_missing) {
  constexpr int kTarget = internal::kSchemaVersion;
  int version = SchemaVersion(c);  // fast path: no lock
  if (version == kTarget) return Status::Ok();
  if (version == 0 && !create_if_missing) {
    return Status::NotFound(url + ": the database holds no tune results");
  }
  c.Simple("BEGIN");
  // Two tuners opening a new database at once: one creates, the other waits
  // and then finds the schema made.
  c.Exec("SELECT pg_advisory_xact_lock($1::bigint)", {P(PostgresLockKey(" schema"))});
  version = SchemaVersion(c);
  if (version > kTarget) {
    c.RollbackQuietly();
    return Status::FailedPrecondition(url + ": the database has schema version " + std::to_string(version) +
                                      " but this tune reads at most version " + std::to_string(kTarget) +
                                      "; use a newer tune");
  }
  if (version == 0) {
    Rows tables = c.Exec(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()");
    if (tables.i64(0, 0) > 0) {
      c.RollbackQuietly();
      return Status::FailedPrecondition(url + ": is a PostgreSQL database but not a tune results database (it has "
                                              "tables and no tune schema version); use an empty database");
    }
  }
  for (const internal::PostgresMigration& m : internal::PostgresMigrations()) {
    if (m.from < version) continue;
    c.Simple(m.sql);
    version = m.to;
  }
  c.Exec(
      "INSERT INTO tune_meta (key, value) VALUES ('schema_version', $1::bigint) "
      "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
      {P(static_cast<int64_t>(kTarget))});
  c.Simple("COMMIT");
  return Status::Ok();
}

class PostgresLease final : public ExperimentLease {
 public:
  explicit PostgresLease(std::unique_ptr<PgConnection> c) : c_(std::move(c)) {}
  // Closing the session releases its advisory locks.
  ~PostgresLease() override = default;

 private:
  std::unique_ptr<PgConnection> c_;
};

// Plain SQL for tune migrate: every value as text, PostgreSQL parsing it by
// the column it goes to.
class PostgresRaw final : public internal::RawDatabase {
 public:
  PostgresRaw(std::unique_ptr<PgConnection> c, std::string url) : c_(std::move(c)), url_(std::move(url)) {}
  Result<std::vector<internal::RawRow>> Query(const std::string& sql, const internal::RawRow& params,
                                              const std::string&, const std::string& column_types) override {
    try {
      Rows r = Run(sql, params);
      std::vector<internal::RawRow> out;
      for (int i = 0; i < r.size(); ++i) {
        internal::RawRow& row = out.emplace_back();
        for (size_t k = 0; k < column_types.size(); ++k) {
          row.push_back(r.null(i, static_cast<int>(k)) ? std::nullopt : internal::RawValue(r.text(i, static_cast<int>(k))));
        }
      }
      return out;
    } catch (const PgError& e) {
      return FromPgError(url_, e);
    }
  }
  Status Exec(const std::string& sql, const internal::RawRow& params, const std::string&) override {
    try {
      Run(sql, params);
      return Status::Ok();
    } catch (const PgError& e) {
      return FromPgError(url_, e);
    }
  }
  bool IsPostgres() const override { return true; }

 private:
  // Statements are few and repeated: prepared once each.
  Rows Run(const std::string& sql, const internal::RawRow& params) {
    if (params.empty()) return c_->Simple(sql);  // BEGIN, COMMIT, setval
    auto it = texts_.find(sql);
    if (it == texts_.end()) it = texts_.emplace(sql, std::make_unique<std::string>(sql)).first;
    return c_->Exec(it->second->c_str(), params);
  }
  std::unique_ptr<PgConnection> c_;
  std::string url_;
  std::unordered_map<std::string, std::unique_ptr<std::string>> texts_;  // stable c_str()s for Exec's cache
};

}  // namespace

Result<std::unique_ptr<internal::RawDatabase>> internal::OpenPostgresRaw(const std::string& url) {
  TUNE_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> c, Connect(url, false));
  return std::unique_ptr<internal::RawDatabase>(new PostgresRaw(std::move(c), url));
}

Result<std::unique_ptr<Storage>> OpenPostgresStorage(const std::string& url, bool create_if_missing) {
  TUNE_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> c, Connect(url, false));
  try {
    TUNE_RETURN_IF_ERROR(EnsurePostgresSchema(*c, url, create_if_missing));
  } catch (const PgError& e) {
    c->RollbackQuietly();
    Status st = FromPgError(url, e);
    if (st.code() == StatusCode::kInternal) {
      return Status::Internal(url + ": cannot create the schema: " + e.message);
    }
    return st;
  }
  return std::unique_ptr<Storage>(new PostgresStorage(std::move(c), url, false));
}

Result<std::unique_ptr<Storage>> OpenPostgresStorageReadOnly(const std::string& url) {
  TUNE_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> c, Connect(url, true));
  try {
    const int version = SchemaVersion(*c);
    if (version == 0) return Status::NotFound(url + ": the database holds no tune results");
    if (version != internal::kSchemaVersion) {
      return Status::FailedPrecondition(
          url + ": the database has schema version " + std::to_string(version) + " but this tune reads version " +
          std::to_string(internal::kSchemaVersion) +
          (version < internal::kSchemaVersion ? "; upgrade it once with a writing command (tune status)"
                                              : "; use a newer tune"));
    }
  } catch (const PgError& e) {
    return FromPgError(url, e);
  }
  return std::unique_ptr<Storage>(new PostgresStorage(std::move(c), url, true));
}

Result<std::unique_ptr<ExperimentLease>> LockPostgresExperiment(const std::string& url,
                                                                const std::string& experiment) {
  TUNE_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> c, Connect(url, false));
  try {
    Rows r = c->Exec("SELECT pg_try_advisory_lock($1::bigint)", {P(PostgresLockKey(experiment))});
    if (!r.boolean(0, 0)) {
      return Status::FailedPrecondition("experiment '" + experiment + "' in " + url +
                                        " is being run by another tune process");
    }
  } catch (const PgError& e) {
    return FromPgError(url, e);
  }
  return std::unique_ptr<ExperimentLease>(new PostgresLease(std::move(c)));
}

#endif  // TUNE_HAVE_POSTGRES

}  // namespace tune
