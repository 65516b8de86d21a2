// What names a database: the rules experiment.json's storage.url and every
// command's --db follow (spec/ checks the file with them; the definitions
// are in storage/postgres_storage.cc).
#pragma once

#include <string>

#include "core/status.h"

namespace tune {

// Whether `db` names a PostgreSQL database: it starts with "postgresql://"
// or "postgres://". Anything else is an SQLite file path.
bool IsPostgresUrl(const std::string& db);

// InvalidArgument, one sentence, if `url` carries a password (user:pw@ or
// password=...) or is not a URL libpq reads; FailedPrecondition if this tune
// has no PostgreSQL support. `what` names where the URL came from ("--db",
// "exp.json: storage.url").
Status CheckPostgresUrl(const std::string& url, const std::string& what = "--db");

}  // namespace tune
