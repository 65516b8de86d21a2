#include "tuner/cli_common.h"

#include <cstdio>

#include "core/one_line.h"
#include "storage/open_storage.h"
#include "tuner/components.h"

namespace tune::cli {

int Fail(std::ostream& err, const Status& st, int code) {
  err << "tune: " << OneLine(st.message(), 16384) << "\n";
  return code;
}

Result<std::unique_ptr<Storage>> OpenExisting(const std::optional<std::string>& db_path) {
  if (db_path && db_path->empty()) {
    return Status::InvalidArgument("--db: expected a database file path or a postgresql:// URL, got \"\"");
  }
  std::string path = db_path.value_or("tune.db");
  auto storage = OpenStorage(path, /*create_if_missing=*/false);
  if (!storage.ok() && storage.status().IsNotFound() && IsDatabaseUrl(path)) {
    return Status::NotFound(path + ": the database holds no tune results (run 'tune run EXPERIMENT.json --db " + path +
                            "' first)");
  }
  if (!storage.ok() && storage.status().IsNotFound()) {
    return Status::NotFound(path + ": no results database here (run 'tune run EXPERIMENT.json' first, or pass --db)");
  }
  return storage;
}

Result<std::unique_ptr<TrialBackend>> CheckRunnable(const ExperimentSpec& spec) {
  if (auto s = MakeSampler(spec); !s.ok()) return s.status();
  if (auto s = MakeScheduler(spec, 0); !s.ok()) return s.status();
  return MakeBackend(spec, "");
}

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace tune::cli
