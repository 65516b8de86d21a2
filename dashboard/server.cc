#include "dashboard/server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "dashboard/assets.h"
#include "dashboard/http_connections.h"
#include "dashboard/http_gzip.h"
#include "dashboard/request_head.h"
#include "dashboard/request_rules.h"

namespace tune {
namespace {

// With a charset: cpp-httplib then sends it as it is. It compresses only
// the exact type "application/json" (and text/*), and with Debian's build
// it picks Brotli at its highest quality, which takes seconds for the
// megabytes a large experiment's document has (20 s for 10,000 trials).
constexpr const char* kJsonType = "application/json; charset=utf-8";

// zlib level for the API's answers, compressed on every request: at 10,000
// trials level 2 takes the 7.4 MB document to 1.07 MB in about 60 ms
// (level 1: 1.22 MB, 52 ms; level 6: 0.82 MB, 195 ms). Static scripts are
// compressed once, at the smallest level.
constexpr int kApiGzipLevel = 2;
constexpr int kAssetGzipLevel = 9;

// The body as it is, or gzip-compressed when the request accepts gzip.
// Either way "Vary: Accept-Encoding", so a cache keeps the two apart.
void SetBody(const httplib::Request& req, httplib::Response& res, std::string body, const char* type) {
  res.set_header("Vary", "Accept-Encoding");
  if (AcceptsGzip(req.get_header_value("Accept-Encoding"))) {
    res.set_header("Content-Encoding", "gzip");
    body = GzipCompress(body, kApiGzipLevel);
  }
  // What set_content does, without copying megabytes.
  res.body = std::move(body);
  res.set_header("Content-Type", type);
}

// Why host:port cannot be bound ("the port is in use", ...): asked of the
// kernel directly, since cpp-httplib only says that it failed.
std::string BindError(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || res == nullptr) {
    return "the host is not a name or address this machine can resolve";
  }
  std::string why = "it could not be bound";
  int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
      why = errno == EADDRINUSE      ? "the port is in use (pick another with --port)"
            : errno == EADDRNOTAVAIL ? "the host is not an address of this machine"
            : errno == EACCES        ? "binding a port below 1024 needs privileges"
                                     : std::string(std::strerror(errno));
    }
    close(fd);
  }
  freeaddrinfo(res);
  return why;
}

void SendJson(const httplib::Request& req, httplib::Response& res, Result<std::string> doc) {
  if (!res.has_header("Cache-Control")) res.set_header("Cache-Control", "no-store");
  if (doc.ok()) return SetBody(req, res, std::move(*doc), kJsonType);
  res.status = doc.status().IsNotFound() ? 404 : 500;
  SetBody(req, res, DumpJson(nlohmann::json{{"error", doc.status().message()}}), kJsonType);
}

// Whether an If-None-Match value ("a", "b" or *) names `etag`.
bool NoneMatchNames(const std::string& if_none_match, const std::string& etag) {
  size_t start = 0;
  while (start <= if_none_match.size()) {
    size_t comma = if_none_match.find(',', start);
    if (comma == std::string::npos) comma = if_none_match.size();
    std::string tag = if_none_match.substr(start, comma - start);
    tag.erase(0, tag.find_first_not_of(" \t"));
    tag.erase(tag.find_last_not_of(" \t") + 1);
    if (tag.rfind("W/", 0) == 0) tag.erase(0, 2);  // weak comparison (RFC 9110 13.1.2)
    if (tag == "*" || tag == etag) return true;
    start = comma + 1;
  }
  return false;
}

// An answer read from the database alone, with an entity tag: this server
// and the database's data version. A request that names the current tag
// (If-None-Match) gets 304 and no body, so a page polling a finished
// experiment of 10,000 trials no longer rebuilds and resends megabytes.
// The version is read before the answer is built, so a write while it is
// built only makes the next poll rebuild it.
template <typename Build>
void SendTagged(const httplib::Request& req, httplib::Response& res, DashboardData& data, const std::string& server_tag,
                Build build) {
  Result<int64_t> version = data.DataVersion();
  if (!version.ok()) return SendJson(req, res, version.status());
  const std::string etag = "\"" + server_tag + "-" + std::to_string(*version) + "\"";
  if (NoneMatchNames(req.get_header_value("If-None-Match"), etag)) {
    res.status = 304;
    res.set_header("ETag", etag);
    res.set_header("Cache-Control", "no-cache");
    return;
  }
  Result<std::string> doc = build();
  if (doc.ok()) {
    res.set_header("ETag", etag);
    res.set_header("Cache-Control", "no-cache");  // may be kept, but asked again each time
  }
  SendJson(req, res, std::move(doc));
}

void SendBadRequest(const httplib::Request& req, httplib::Response& res, const std::string& why) {
  res.status = 400;
  SetBody(req, res, DumpJson(nlohmann::json{{"error", why}}), kJsonType);
}

// cpp-httplib's Stream over one request head in memory: what a worker
// gives process_request. Reading ends with the head (a request with a body
// is refused before anything would read it); what is written is kept, to
// be sent by the polling thread.
class HeadStream : public httplib::Stream {
 public:
  HeadStream(const std::string& head, const RequestContext& context) : head_(head), context_(context) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, head_.size() - offset_);
    std::memcpy(ptr, head_.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = context_.remote_addr;
    port = context_.remote_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = context_.local_addr;
    port = context_.local_port;
  }
  socket_t socket() const override { return INVALID_SOCKET; }
  std::string& out() { return out_; }

 private:
  const std::string& head_;
  const RequestContext& context_;
  size_t offset_ = 0;
  std::string out_;
};

// A TaskQueue that runs each accepted connection's task at once, on the
// accepting thread: the task (GuardedServer::process_and_close_socket)
// only hands the socket to HttpConnections.
class HandOverQueue : public httplib::TaskQueue {
 public:
  explicit HandOverQueue(HttpConnections& connections) : connections_(connections) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { connections_.Stop(); }

 private:
  HttpConnections& connections_;
};

// cpp-httplib's Server with its per-connection entry point replaced: the
// socket goes to HttpConnections, whose workers call AnswerHead.
class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(const ConnectionLimits& limits) : limits_(limits) {
    new_task_queue = [this] {
      connections_ = std::make_unique<HttpConnections>(
          limits_, [this](const std::string& head, const RequestContext& context) { return AnswerHead(head, context); });
      return new HandOverQueue(*connections_);
    };
    // What cpp-httplib states in its Keep-Alive header.
    set_keep_alive_max_count(static_cast<size_t>(limits_.max_requests_per_connection));
    set_keep_alive_timeout(std::chrono::duration_cast<std::chrono::seconds>(limits_.head_timeout).count());
  }

  // One request: cpp-httplib parses the head, routes it and writes the
  // answer into memory. The connection stays open after a status below 400
  // unless the request or `context.last` closes it.
  Answer AnswerHead(const std::string& head, const RequestContext& context) {
    HeadStream stream(head, context);
    bool closed = false;
    const bool ok = process_request(stream, context.last, closed, nullptr);
    Answer answer;
    answer.bytes = std::move(stream.out());
    int status = 0;
    if (answer.bytes.size() > 12 && answer.bytes.compare(0, 9, "HTTP/1.1 ") == 0) {
      status = std::atoi(answer.bytes.substr(9, 3).c_str());
    }
    answer.keep_open = ok && !closed && !context.last && status >= 200 && status < 400;
    return answer;
  }

  const ConnectionLimits& limits() const { return limits_; }

 private:
  bool process_and_close_socket(socket_t sock) override {
    connections_->Add(sock);
    return true;
  }

  ConnectionLimits limits_;
  std::unique_ptr<HttpConnections> connections_;
};

RequestFacts FactsOf(const httplib::Request& req) {
  RequestFacts facts;
  facts.method = req.method;
  auto values = [&](const char* name) {
    std::vector<std::string> out;
    auto [begin, end] = req.headers.equal_range(name);
    for (auto it = begin; it != end; ++it) out.push_back(it->second);
    return out;
  };
  facts.hosts = values("Host");
  facts.origins = values("Origin");
  facts.content_lengths = values("Content-Length");
  facts.has_transfer_encoding = req.has_header("Transfer-Encoding");
  facts.local_addr = req.local_addr;
  return facts;
}

}  // namespace

struct DashboardServer::Impl {
  Impl(DashboardData& data, const ServerOptions& options)
      : data(data), options(options), server(ConnectionLimits{}), rules(options.host, options.port) {}
  DashboardData& data;
  ServerOptions options;
  GuardedServer server;
  RequestRules rules;  // set again by Bind() (the port)
  int port = -1;
};

DashboardServer::DashboardServer(DashboardData& data, const ServerOptions& options)
    : impl_(std::make_unique<Impl>(data, options)) {
  GuardedServer& server = impl_->server;
  // Before any route: the Host and Origin rule, GET or HEAD, no body.
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    std::optional<Refusal> refusal = impl_->rules.Check(FactsOf(req));
    if (!refusal) return httplib::Server::HandlerResponse::Unhandled;
    res.status = refusal->status;
    if (refusal->status == 405) res.set_header("Allow", "GET, HEAD");
    res.set_header("Cache-Control", "no-store");
    res.body = DumpJson(nlohmann::json{{"error", refusal->message}});
    res.set_header("Content-Type", kJsonType);
    return httplib::Server::HandlerResponse::Handled;
  });
  // An answer of 400 or more closes the connection (HttpConnections does):
  // say so instead of the Keep-Alive cpp-httplib would state.
  // cpp-httplib states "Accept-Ranges: bytes" for HEAD; Range is ignored here.
  server.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    res.headers.erase("Accept-Ranges");
    if (res.status < 400) return;
    res.headers.erase("Keep-Alive");
    if (!res.has_header("Connection")) res.set_header("Connection", "close");
  });
  // cpp-httplib's own refusals (no such route, a malformed header) have no
  // body: give them the API's {"error": ...}. Not when the method is HEAD
  // or was never read (a request line cut by a NUL byte, a request target
  // over 8,192 bytes: 414): cpp-httplib would send a body after a head that
  // a client of "HEAD ..." reads as bodiless.
  server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req,
                                                                   httplib::Response& res) {
    if (!res.body.empty() || req.method.empty() || req.method == "HEAD") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const char* why = res.status == 400   ? "malformed request line or header"
                      : res.status == 404 ? "no such page (the API is under /api/, docs/dashboard.md)"
                                          : "the request could not be answered";
    res.set_header("Cache-Control", "no-store");
    res.body = DumpJson(nlohmann::json{{"error", why}});
    res.set_header("Content-Type", kJsonType);
    return httplib::Server::HandlerResponse::Handled;
  }));
  // An exception out of a handler: a 500 with one sentence (never
  // std::terminate, never the exception's text in a header).
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "an unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    res.status = 500;
    res.headers.erase("Content-Encoding");
    res.headers.erase("ETag");
    res.set_header("Cache-Control", "no-store");
    res.body = DumpJson(nlohmann::json{{"error", "internal error: " + what}});
    res.set_header("Content-Type", kJsonType);
  });
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a
  // second dashboard would share a port in use instead of being refused.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                              {"Content-Security-Policy",
                               "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; object-src 'none'; base-uri 'none'"}});
  // The page and its stylesheet are text/*, which cpp-httplib compresses
  // itself (Brotli or gzip as the client asks; a few KB, so quickly). The
  // scripts are not (see kJsonType): their gzip form is made once here.
  for (const char* name : {"index.html", "dashboard.css"}) {
    std::string path = std::string("/") + (std::string(name) == "index.html" ? "" : name);
    server.Get(path, [name](const httplib::Request&, httplib::Response& res) {
      std::string_view body = DashboardAsset(name);
      res.set_content(body.data(), body.size(), DashboardAssetType(name));
    });
  }
  for (const char* name : {"dashboard.js", "chart.min.js"}) {
    std::string_view plain = DashboardAsset(name);
    server.Get(std::string("/") + name,
               [name, plain, gzip = GzipCompress(plain, kAssetGzipLevel)](const httplib::Request& req,
                                                                          httplib::Response& res) {
                 res.set_header("Vary", "Accept-Encoding");
                 if (!AcceptsGzip(req.get_header_value("Accept-Encoding"))) {
                   return res.set_content(plain.data(), plain.size(), DashboardAssetType(name));
                 }
                 res.set_header("Content-Encoding", "gzip");
                 res.set_content(gzip, DashboardAssetType(name));
               });
  }
  // No icon: an empty answer instead of a 404 in the browser's console.
  server.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  // Distinguishes this server's tags from an earlier one's on the same
  // file (data versions restart with each connection).
  const std::string server_tag =
      std::to_string(getpid()) + "." +
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  // The data by pointer: a lambda that captures a reference parameter by
  // reference outlives the parameter.
  DashboardData* const d = &data;
  server.Get("/api/experiments", [d, server_tag](const httplib::Request& req, httplib::Response& res) {
    SendTagged(req, res, *d, server_tag, [&] { return d->Experiments(); });
  });
  server.Get("/api/experiment", [d, server_tag](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("name")) return SendBadRequest(req, res, "expected ?name=EXPERIMENT");
    SendTagged(req, res, *d, server_tag, [&] { return d->Experiment(req.get_param_value("name")); });
  });
  server.Get("/api/trial", [d](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("experiment") || !req.has_param("number")) {
      return SendBadRequest(req, res, "expected ?experiment=NAME&number=N");
    }
    const std::string number = req.get_param_value("number");
    int n = 0;
    size_t used = 0;
    try {
      n = std::stoi(number, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != number.size() || n < 0) {
      return SendBadRequest(req, res, "number: expected a trial number (0, 1, ...)");
    }
    SendJson(req, res, d->TrialDetail(req.get_param_value("experiment"), n));
  });
}

DashboardServer::~DashboardServer() = default;

Result<int> DashboardServer::Bind() {
  GuardedServer& server = impl_->server;
  const ServerOptions& options = impl_->options;
  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
    if (port < 0) port = -1;
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port < 0) {
    return Status::Unavailable("cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " +
                               BindError(options.host, options.port));
  }
  impl_->port = port;
  impl_->rules = RequestRules(options.host, port);
  return port;
}

void DashboardServer::Serve(const std::atomic<bool>* stop) {
  GuardedServer& server = impl_->server;
  std::thread watcher;
  std::atomic<bool> done{false};
  if (stop != nullptr) {
    watcher = std::thread([&] {
      try {
        while (!done.load() && !stop->load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        server.stop();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tune dashboard: cannot stop the server: %s\n", e.what());
      }
    });
  }
  server.listen_after_bind();
  done = true;
  if (watcher.joinable()) watcher.join();
}

std::string DashboardServer::AnswerConnection(std::string_view bytes) {
  GuardedServer& server = impl_->server;
  const ConnectionLimits& limits = server.limits();
  RequestContext context;
  context.local_addr = context.remote_addr = "127.0.0.1";
  context.local_port = impl_->port > 0 ? impl_->port : impl_->options.port;
  context.remote_port = 40000;
  std::string out;
  for (int served = 0;; ++served) {
    ScannedHead head = ScanRequestHead(bytes, limits.head);
    if (head.state == HeadState::kIncomplete) break;  // the client closed mid-head: no answer
    if (head.state == HeadState::kTooLarge) {
      out += HeadTooLargeResponse(limits.head);
      break;
    }
    bytes.remove_prefix(head.consumed);
    context.last = served + 1 >= limits.max_requests_per_connection;
    Answer answer = server.AnswerHead(head.head, context);
    out += answer.bytes;
    if (!answer.keep_open) break;
  }
  return out;
}

Status ServeDashboard(DashboardData& data, const ServerOptions& options, const std::atomic<bool>* stop,
                      const std::function<void(int port)>& on_listening) {
  DashboardServer server(data, options);
  TUNE_ASSIGN_OR_RETURN(int port, server.Bind());
  on_listening(port);
  server.Serve(stop);
  return Status::Ok();
}

}  // namespace tune
