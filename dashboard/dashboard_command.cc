#include "dashboard/dashboard_command.h"

#include <ostream>

#include "core/atomic_write.h"
#include "dashboard/dashboard_data.h"
#include "dashboard/report_page.h"
#include "dashboard/server.h"
#include "storage/open_storage.h"
#include "storage/storage.h"

namespace tune {
namespace {

constexpr int kExitOk = 0, kExitUsage = 2;

int Fail(std::ostream& err, const std::string& message) {
  err << "tune: " << message << "\n";
  return kExitUsage;
}

Result<std::unique_ptr<Storage>> OpenForReading(const std::optional<std::string>& db_path) {
  if (db_path && db_path->empty()) {
    return Status::InvalidArgument("--db: expected a database file path or a postgresql:// URL, got \"\"");
  }
  const std::string path = db_path.value_or("tune.db");
  auto storage = OpenStorageReadOnly(path);  // a PostgreSQL one: a read-only session
  if (!storage.ok() && storage.status().IsNotFound() && IsDatabaseUrl(path)) {
    return Status::NotFound(path + ": the database holds no tune results (run 'tune run EXPERIMENT.json --db " + path +
                            "' first)");
  }
  if (!storage.ok() && storage.status().IsNotFound()) {
    return Status::NotFound(path + ": no results database here (run 'tune run EXPERIMENT.json' first, or pass --db)");
  }
  return storage;
}

// Whether `host` is reachable from this machine alone: a loopback address
// (127.0.0.0/8, ::1) or localhost.
bool LoopbackOnly(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

}  // namespace

int DashboardCommand(const DashboardArgs& args, std::ostream& out, std::ostream& err) {
  if (args.port < 0 || args.port > 65535) {
    return Fail(err, "--port: expected a port number from 0 to 65535, got " + std::to_string(args.port));
  }
  auto storage = OpenForReading(args.db_path);
  if (!storage.ok()) return Fail(err, storage.status().message());
  const std::string db_path = args.db_path.value_or("tune.db");
  DashboardData data(**storage, RunsDirFor(db_path));
  ServerOptions options;
  options.host = args.host;
  options.port = args.port;
  Status st = ServeDashboard(data, options, args.stop, [&](int port) {
    const bool v6 = args.host.find(':') != std::string::npos;
    out << "tune dashboard: serving " << db_path << " at http://" << (v6 ? "[" : "") << args.host
        << (v6 ? "]" : "") << ":" << port << "/ (Ctrl-C to stop)" << std::endl;
    if (!LoopbackOnly(args.host)) {
      err << "tune dashboard: warning: --host " << args.host << " shows every experiment's parameters, results and "
          << "logs, without authentication, to anyone who can reach port " << port << std::endl;
    }
  });
  if (!st.ok()) return Fail(err, st.message());
  return kExitOk;
}

int ReportCommand(const ReportArgs& args, std::ostream& out, std::ostream& err) {
  if (args.out_path.empty()) return Fail(err, "--out: expected the path of the HTML file to write");
  auto storage = OpenForReading(args.db_path);
  if (!storage.ok()) return Fail(err, storage.status().message());
  const std::string db_path = args.db_path.value_or("tune.db");
  std::string name = args.experiment;
  if (name.empty()) {
    auto all = (*storage)->ListExperiments();
    if (!all.ok()) return Fail(err, all.status().message());
    if (all->empty()) return Fail(err, db_path + ": has no experiment yet");
    name = all->back().name;  // listed in creation order
  }
  DashboardData data(**storage, RunsDirFor(db_path));
  auto page = ReportPage(data, name);
  if (!page.ok()) {
    if (page.status().IsNotFound()) return Fail(err, db_path + ": has no experiment named '" + name + "'");
    return Fail(err, page.status().message());
  }
  if (Status st = WriteFileAtomically(args.out_path, *page); !st.ok()) return Fail(err, st.message());
  out << "tune report: wrote " << args.out_path << " (experiment '" << name << "', " << page->size() / 1024
      << " KiB)\n";
  return kExitOk;
}

}  // namespace tune
