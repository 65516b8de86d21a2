// CopyExperiments: `tune migrate --from A --to B`, experiments copied
// exactly between two results databases, SQLite or PostgreSQL, either way
// (docs/database.md, "PostgreSQL").
//
// Every row of every table of each experiment is copied as it is (times,
// states, messages, excluded reports, exploits, tracking runs), in one
// transaction on the destination. Ids keep their order: each table's ids
// are shifted by the destination's largest id of that table (by nothing
// into an empty database, where they stay the same), and the references
// between rows follow.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace tune {

// Copies the experiments named (all of the source's when `names` is empty)
// from database `from` (which must exist) to `to` (created if missing).
// Returns the names copied, in the source's order. FailedPrecondition (and
// nothing copied) if an experiment of one of those names exists in `to`;
// NotFound if one is not in `from`.
Result<std::vector<std::string>> CopyExperiments(const std::string& from, const std::string& to,
                                                 const std::vector<std::string>& names);

namespace internal {

// A value as text (NULL: nullopt); reals in round-trip form.
using RawValue = std::optional<std::string>;
using RawRow = std::vector<RawValue>;

// Plain SQL on one database, for the copy. `sql` uses $1, $2, ... (each
// once, in order); `types` has one letter per parameter or column: 'i'
// integer, 'r' real, 't' text, 'n' a number that may be either.
class RawDatabase {
 public:
  virtual ~RawDatabase() = default;
  virtual Result<std::vector<RawRow>> Query(const std::string& sql, const RawRow& params,
                                            const std::string& param_types, const std::string& column_types) = 0;
  virtual Status Exec(const std::string& sql, const RawRow& params, const std::string& param_types) = 0;
  virtual bool IsPostgres() const = 0;
};

// A raw session on a PostgreSQL database (postgres_storage.cc).
Result<std::unique_ptr<RawDatabase>> OpenPostgresRaw(const std::string& url);

}  // namespace internal
}  // namespace tune
