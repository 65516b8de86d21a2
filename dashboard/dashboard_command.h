// `tune dashboard` and `tune report` as functions: parsed arguments in,
// exit code out (0 ok, 2 usage or bad input: a missing or unreadable
// database, a port that cannot be bound, an unknown experiment).
#pragma once

#include <atomic>
#include <optional>
#include <ostream>
#include <string>

namespace tune {

struct DashboardArgs {
  std::optional<std::string> db_path;  // unset: ./tune.db
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (printed)
  const std::atomic<bool>* stop = nullptr;  // serve until it is set
};

// Prints "tune dashboard: serving DB at http://HOST:PORT/" once listening,
// and on `err` a one-line warning when HOST is not a loopback address
// (anyone who reaches the port reads everything: there is no login).
int DashboardCommand(const DashboardArgs& args, std::ostream& out, std::ostream& err);

struct ReportArgs {
  std::optional<std::string> db_path;  // unset: ./tune.db
  std::string experiment;              // empty: the latest one
  std::string out_path;                // the HTML file to write
};

// Writes the file whole (through a temporary file renamed into place) or
// not at all.
int ReportCommand(const ReportArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tune
