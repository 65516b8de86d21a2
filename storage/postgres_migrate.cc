#include "storage/postgres_migrate.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/open_storage.h"
#include "storage/postgres_storage.h"

namespace tune {
namespace {

using internal::RawDatabase;
using internal::RawRow;
using internal::RawValue;

std::string RealText(double v) {
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Plain SQL on an SQLite file through SQLiteCpp.
class SqliteRaw final : public RawDatabase {
 public:
  SqliteRaw(std::unique_ptr<SQLite::Database> db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}

  Result<std::vector<RawRow>> Query(const std::string& sql, const RawRow& params, const std::string& param_types,
                                    const std::string& column_types) override {
    try {
      SQLite::Statement& s = Prepare(sql, params, param_types);
      std::vector<RawRow> out;
      while (s.executeStep()) {
        RawRow& row = out.emplace_back();
        for (size_t k = 0; k < column_types.size(); ++k) {
          SQLite::Column c = s.getColumn(static_cast<int>(k));
          if (c.isNull()) {
            row.emplace_back();
          } else if (column_types[k] == 'i' || (column_types[k] == 'n' && c.isInteger())) {
            row.emplace_back(std::to_string(c.getInt64()));
          } else if (column_types[k] == 'r' || column_types[k] == 'n') {
            row.emplace_back(RealText(c.getDouble()));
          } else {
            row.emplace_back(c.getString());
          }
        }
      }
      s.reset();
      return out;
    } catch (const SQLite::Exception& e) {
      return Status::Internal(path_ + ": SQLite error: " + e.what());
    }
  }

  Status Exec(const std::string& sql, const RawRow& params, const std::string& param_types) override {
    try {
      if (params.empty()) {
        db_->exec(sql);
        return Status::Ok();
      }
      SQLite::Statement& s = Prepare(sql, params, param_types);
      s.exec();
      s.reset();
      return Status::Ok();
    } catch (const SQLite::Exception& e) {
      return Status::Internal(path_ + ": SQLite error: " + e.what());
    }
  }
  bool IsPostgres() const override { return false; }

 private:
  SQLite::Statement& Prepare(const std::string& sql, const RawRow& params, const std::string& types) {
    auto& slot = stmts_[sql];
    if (!slot) slot = std::make_unique<SQLite::Statement>(*db_, sql);
    slot->reset();
    slot->clearBindings();
    for (size_t i = 0; i < params.size(); ++i) {
      const int at = static_cast<int>(i) + 1;
      const RawValue& v = params[i];
      const char type = types[i];
      if (!v) {
        slot->bind(at);
      } else if (type == 'i') {
        slot->bind(at, static_cast<int64_t>(std::strtoll(v->c_str(), nullptr, 10)));
      } else if (type == 'r') {
        slot->bind(at, std::strtod(v->c_str(), nullptr));
      } else if (type == 'n') {
        // An integer stays one; anything with a point or exponent is real.
        if (v->find_first_of(".eEnN") == std::string::npos) {
          slot->bind(at, static_cast<int64_t>(std::strtoll(v->c_str(), nullptr, 10)));
        } else {
          slot->bind(at, std::strtod(v->c_str(), nullptr));
        }
      } else {
        slot->bind(at, *v);
      }
    }
    return *slot;
  }
  std::unique_ptr<SQLite::Database> db_;
  std::string path_;
  std::map<std::string, std::unique_ptr<SQLite::Statement>> stmts_;
};

Result<std::unique_ptr<RawDatabase>> OpenRaw(const std::string& db) {
  if (IsPostgresUrl(db)) return internal::OpenPostgresRaw(db);
  try {
    auto file = std::make_unique<SQLite::Database>(db, SQLite::OPEN_READWRITE, 30000);
    return std::unique_ptr<RawDatabase>(new SqliteRaw(std::move(file), db));
  } catch (const SQLite::Exception& e) {
    return Status::Internal(db + ": cannot open the database: " + e.what());
  }
}

int64_t Int(const RawValue& v) { return v ? std::strtoll(v->c_str(), nullptr, 10) : 0; }
// `v` (an id) shifted by `offset`; NULL stays NULL.
RawValue Shift(const RawValue& v, int64_t offset) {
  if (!v) return v;
  return std::to_string(Int(v) + offset);
}

// One table's copy: the source query (rows of one experiment, $1 its id, in
// id order) and the destination insert, with each column's type and the
// id offsets to add (by the name of the table the id points into).
struct TableCopy {
  const char* select;
  const char* insert;
  const char* types;
  std::vector<const char*> shifts;  // per column: "" or the table whose offset applies
};

const std::vector<TableCopy>& Tables() {
  static const std::vector<TableCopy> tables = {
      {"SELECT id, name, spec_json, state, seed, created_at, ended_at, message, run_seconds FROM experiments "
       "WHERE id = $1",
       "INSERT INTO experiments (id, name, spec_json, state, seed, created_at, ended_at, message, run_seconds) "
       "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
       "itttirrtr",
       {"experiments", "", "", "", "", "", "", "", ""}},
      {"SELECT id, experiment_id, number, state, params_json, value, attempt, started_at, ended_at, last_step, "
       "pruned_rung, location, message, failed_attempts FROM trials WHERE experiment_id = $1 ORDER BY id",
       "INSERT INTO trials (id, experiment_id, number, state, params_json, value, attempt, started_at, ended_at, "
       "last_step, pruned_rung, location, message, failed_attempts) "
       "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
       "iiittrirriitti",
       {"trials", "experiments", "", "", "", "", "", "", "", "", "", "", "", ""}},
      {"SELECT p.trial_id, p.name, p.type, p.value_text, p.value_num FROM trial_params p "
       "JOIN trials t ON t.id = p.trial_id WHERE t.experiment_id = $1 ORDER BY p.trial_id, p.name",
       "INSERT INTO trial_params (trial_id, name, type, value_text, value_num) VALUES ($1, $2, $3, $4, $5)",
       "itttn",
       {"trials", "", "", "", ""}},
      {"SELECT r.id, r.trial_id, r.attempt, r.step, r.time, r.objective, r.excluded, r.carried_from FROM reports r "
       "JOIN trials t ON t.id = r.trial_id WHERE t.experiment_id = $1 ORDER BY r.id",
       "INSERT INTO reports (id, trial_id, attempt, step, time, objective, excluded, carried_from) "
       "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
       "iiiirrti",
       {"reports", "trials", "", "", "", "", "", "reports"}},
      {"SELECT m.report_id, m.name, m.value FROM metrics m JOIN reports r ON r.id = m.report_id "
       "JOIN trials t ON t.id = r.trial_id WHERE t.experiment_id = $1 ORDER BY m.report_id, m.name",
       "INSERT INTO metrics (report_id, name, value) VALUES ($1, $2, $3)",
       "itr",
       {"reports", "", ""}},
      {"SELECT experiment_id, target, trial_number, run_id FROM tracking_runs WHERE experiment_id = $1 "
       "ORDER BY target, trial_number",
       "INSERT INTO tracking_runs (experiment_id, target, trial_number, run_id) VALUES ($1, $2, $3, $4)",
       "itit",
       {"experiments", "", "", ""}},
      {"SELECT x.id, x.trial_id, x.step, x.donor_trial_id, x.donor_step, x.params_before, x.params_after, "
       "x.after_report_id, x.time FROM exploits x JOIN trials t ON t.id = x.trial_id WHERE t.experiment_id = $1 "
       "ORDER BY x.id",
       "INSERT INTO exploits (id, trial_id, step, donor_trial_id, donor_step, params_before, params_after, "
       "after_report_id, time) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
       "iiiiittir",
       {"exploits", "trials", "", "trials", "", "", "", "reports", ""}},
      {"SELECT v.trial_id, v.kind, v.position, v.value FROM trial_values v JOIN trials t ON t.id = v.trial_id "
       "WHERE t.experiment_id = $1 ORDER BY v.trial_id, v.kind, v.position",
       "INSERT INTO trial_values (trial_id, kind, position, value) VALUES ($1, $2, $3, $4)",
       "itir",
       {"trials", "", "", ""}},
  };
  return tables;
}

// Copies everything of experiment `id` from `src` to `dst`.
Status CopyOne(RawDatabase& src, RawDatabase& dst, int64_t id, const std::map<std::string, int64_t>& offsets) {
  for (const TableCopy& t : Tables()) {
    const std::string types = t.types;
    TUNE_ASSIGN_OR_RETURN(std::vector<RawRow> rows, src.Query(t.select, {std::to_string(id)}, "i", types));
    for (RawRow& row : rows) {
      for (size_t k = 0; k < row.size(); ++k) {
        const std::string table = t.shifts[k];
        if (table.empty() || !row[k]) continue;
        // after_report_id 0: no report before the exploit.
        if (table == "reports" && Int(row[k]) == 0) continue;
        row[k] = Shift(row[k], offsets.at(table));
      }
      TUNE_RETURN_IF_ERROR(dst.Exec(t.insert, row, types));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> CopyExperiments(const std::string& from, const std::string& to,
                                                 const std::vector<std::string>& names) {
  // Both schemas checked (and the destination's created or upgraded) the
  // way every command opens them.
  {
    TUNE_ASSIGN_OR_RETURN(std::unique_ptr<Storage> source, OpenStorage(from, /*create_if_missing=*/false));
    TUNE_ASSIGN_OR_RETURN(std::unique_ptr<Storage> dest, OpenStorage(to, /*create_if_missing=*/true));
  }
  TUNE_ASSIGN_OR_RETURN(std::unique_ptr<RawDatabase> src, OpenRaw(from));
  TUNE_ASSIGN_OR_RETURN(std::unique_ptr<RawDatabase> dst, OpenRaw(to));

  TUNE_ASSIGN_OR_RETURN(std::vector<RawRow> all,
                        src->Query("SELECT id, name FROM experiments ORDER BY created_at, id", {}, "", "it"));
  std::vector<std::pair<int64_t, std::string>> chosen;
  for (const std::string& name : names) {
    bool found = false;
    for (const RawRow& r : all) found = found || *r[1] == name;
    if (!found) return Status::NotFound(from + ": no experiment named '" + name + "'");
  }
  for (const RawRow& r : all) {
    bool wanted = names.empty();
    for (const std::string& name : names) wanted = wanted || *r[1] == name;
    if (wanted) chosen.emplace_back(Int(r[0]), *r[1]);
  }

  TUNE_RETURN_IF_ERROR(dst->Exec(dst->IsPostgres() ? "BEGIN" : "BEGIN IMMEDIATE", {}, ""));
  Status st = [&]() -> Status {
    for (const auto& [id, name] : chosen) {
      TUNE_ASSIGN_OR_RETURN(std::vector<RawRow> there,
                            dst->Query("SELECT id FROM experiments WHERE name = $1", {name}, "t", "i"));
      if (!there.empty()) {
        return Status::FailedPrecondition(to + ": an experiment named '" + name +
                                          "' already exists there; nothing was copied");
      }
    }
    std::map<std::string, int64_t> offsets;
    for (const char* table : {"experiments", "trials", "reports", "exploits"}) {
      TUNE_ASSIGN_OR_RETURN(std::vector<RawRow> max,
                            dst->Query(std::string("SELECT COALESCE(MAX(id), 0) FROM ") + table, {}, "", "i"));
      offsets[table] = Int(max[0][0]);
    }
    for (const auto& [id, name] : chosen) TUNE_RETURN_IF_ERROR(CopyOne(*src, *dst, id, offsets));
    if (dst->IsPostgres()) {
      // The identity columns go on after the copied ids; readers see a change.
      for (const char* table : {"experiments", "trials", "reports", "exploits"}) {
        TUNE_RETURN_IF_ERROR(dst->Exec(std::string("SELECT setval(pg_get_serial_sequence('") + table +
                                           "', 'id'), GREATEST((SELECT COALESCE(MAX(id), 0) FROM " + table +
                                           "), 1))",
                                       {}, ""));
      }
      TUNE_RETURN_IF_ERROR(dst->Exec("UPDATE tune_meta SET value = value + 1 WHERE key = 'data_version'", {}, ""));
    }
    return Status::Ok();
  }();
  if (!st.ok()) {
    (void)dst->Exec("ROLLBACK", {}, "");
    return st;
  }
  TUNE_RETURN_IF_ERROR(dst->Exec("COMMIT", {}, ""));
  std::vector<std::string> copied;
  for (const auto& [id, name] : chosen) copied.push_back(name);
  return copied;
}

}  // namespace tune
