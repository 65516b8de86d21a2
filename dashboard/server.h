// The `tune dashboard` HTTP server (cpp-httplib): the page and its scripts
// from the binary, and the JSON API of docs/dashboard.md:
//   GET /api/experiments
//   GET /api/experiment?name=NAME
//   GET /api/trial?experiment=NAME&number=N
// Reads only (DashboardData over a read-only Storage); serves no file
// named by a request. The API's answers and the scripts are gzip-compressed
// for a client that accepts gzip (dashboard/http_gzip.h), plain otherwise.
// The experiments list and an experiment's document carry an ETag from the
// database's data version; If-None-Match with it gets 304.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "dashboard/dashboard_data.h"
#include "tuner/core/status.h"

namespace tune {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
};

// Listens on host:port, calls `on_listening(port)` once it accepts
// connections, then serves until `stop` becomes true (checked every
// 100 ms; null: until the process ends). Unavailable with one sentence
// when the address cannot be bound (the port is in use, or the host is not
// an address of this machine).
Status ServeDashboard(DashboardData& data, const ServerOptions& options, const std::atomic<bool>* stop,
                      const std::function<void(int port)>& on_listening);

}  // namespace tune
