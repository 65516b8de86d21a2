// `tune migrate`: experiments copied exactly from one results database to
// another (docs/database.md, "PostgreSQL").
#include "storage/postgres_migrate.h"
#include "tuner/cli_commands.h"

namespace tune {

int MigrateCommand(const MigrateArgs& args, std::ostream& out, std::ostream& err) {
  constexpr int kOk = 0, kFailed = 1, kUsage = 2;
  if (args.from.empty() || args.to.empty()) {
    err << "tune: migrate: --from and --to: expected a database file path or a postgresql:// URL each\n";
    return kUsage;
  }
  if (args.from == args.to) {
    err << "tune: migrate: --from and --to name the same database (" << args.from << ")\n";
    return kUsage;
  }
  auto copied = CopyExperiments(args.from, args.to, args.experiments);
  if (!copied.ok()) {
    const Status& st = copied.status();
    err << "tune: " << st.message() << "\n";
    return st.IsNotFound() || st.IsInvalidArgument() || st.code() == StatusCode::kFailedPrecondition ? kUsage
                                                                                                       : kFailed;
  }
  for (const std::string& name : *copied) out << "tune migrate: copied experiment '" << name << "'\n";
  out << "tune migrate: " << copied->size() << " experiment" << (copied->size() == 1 ? "" : "s") << " copied from "
      << args.from << " to " << args.to << "\n";
  return kOk;
}

}  // namespace tune
