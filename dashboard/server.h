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
//
// Hostile clients: connections are read and written by one polling thread
// with caps and deadlines (dashboard/http_connections.h), request heads are
// capped and Range is ignored (dashboard/request_head.h), and a request
// whose Host or Origin is not this server's, or that is not a GET or HEAD
// without a body, is refused before any handler runs
// (dashboard/request_rules.h). An exception in a handler becomes a 500
// with one sentence.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "dashboard/dashboard_data.h"

namespace tune {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
};

// The server with its routes and rules; Bind() then Serve(), or
// AnswerConnection() alone (the fuzzer's way in, no socket).
class DashboardServer {
 public:
  // `data` must outlive this.
  DashboardServer(DashboardData& data, const ServerOptions& options);
  ~DashboardServer();

  // Binds host:port: the port (the chosen one for port 0), or Unavailable
  // with one sentence (see ServeDashboard).
  Result<int> Bind();

  // After Bind(): serves until `stop` becomes true (checked every 100 ms;
  // null: until the process ends).
  void Serve(const std::atomic<bool>* stop);

  // The bytes this server sends back on a connection from 127.0.0.1 on
  // which a client sent `bytes` and nothing more: each complete request
  // head in turn (as HttpConnections reads them) answered as Serve()
  // answers it, until one closes the connection. The Host rule uses
  // options.port (or the bound port after Bind()).
  std::string AnswerConnection(std::string_view bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Listens on host:port, calls `on_listening(port)` once it accepts
// connections, then serves until `stop` becomes true (checked every
// 100 ms; null: until the process ends). Unavailable with one sentence
// when the address cannot be bound (the port is in use, or the host is not
// an address of this machine).
Status ServeDashboard(DashboardData& data, const ServerOptions& options, const std::atomic<bool>* stop,
                      const std::function<void(int port)>& on_listening);

}  // namespace tune
