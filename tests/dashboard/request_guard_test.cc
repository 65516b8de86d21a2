// The dashboard's guards one by one: where a request head ends and what of
// it is passed on (ScanRequestHead), which Host and Origin are this
// server's (RequestRules), the connection layer (HttpConnections) over
// real loopback sockets with small limits, and inputs the fuzzer
// (fuzz/dashboard_request_fuzz.cc) found, through
// DashboardServer::AnswerConnection over a real database.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "dashboard/dashboard_data.h"
#include "dashboard/http_connections.h"
#include "dashboard/request_head.h"
#include "dashboard/request_rules.h"
#include "dashboard/server.h"
#include "storage/storage.h"
#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune;

TEST_CASE("ScanRequestHead: where a head ends, its caps, and the header lines left out", "[dashboard]") {
  const HeadLimits limits{200, 5};
  SECTION("complete, with a pipelined request after it") {
    const std::string in = "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\n";
    ScannedHead h = ScanRequestHead(in, limits);
    REQUIRE(h.state == HeadState::kComplete);
    CHECK(h.head == "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    CHECK(in.substr(h.consumed) == "GET /next HTTP/1.1\r\n");
  }
  SECTION("incomplete until the blank line; a first line of \\r\\n is the request line, not the end") {
    CHECK(ScanRequestHead("GET / HTTP/1.1\r\nHost: a\r\n", limits).state == HeadState::kIncomplete);
    CHECK(ScanRequestHead("GET / HTTP/1.1\r\nHo", limits).state == HeadState::kIncomplete);
    CHECK(ScanRequestHead("", limits).state == HeadState::kIncomplete);
    ScannedHead h = ScanRequestHead("\r\nHost: a\r\n\r\n", limits);
    CHECK(h.state == HeadState::kComplete);
    CHECK(h.consumed == 13);
  }
  SECTION("Range, If-Range and Expect are left out, by name without case; other names stay") {
    ScannedHead h = ScanRequestHead(
        "GET / HTTP/1.1\r\nrange: bytes=0-,0-\r\nIF-RANGE: x\r\nExpect: 100-continue\r\nRanges: kept\r\n"
        "X-Range: kept\r\n\r\n",
        HeadLimits{200, 10});
    REQUIRE(h.state == HeadState::kComplete);
    CHECK(h.head == "GET / HTTP/1.1\r\nRanges: kept\r\nX-Range: kept\r\n\r\n");
  }
  SECTION("more lines than max_lines, or more bytes than max_bytes, with or without its end") {
    CHECK(ScanRequestHead("GET / HTTP/1.1\r\na: 1\r\nb: 1\r\nc: 1\r\nd: 1\r\n\r\n", limits).state ==
          HeadState::kComplete);  // 5 lines
    CHECK(ScanRequestHead("GET / HTTP/1.1\r\na: 1\r\nb: 1\r\nc: 1\r\nd: 1\r\ne: 1\r\n", limits).state ==
          HeadState::kTooLarge);
    CHECK(ScanRequestHead("GET / HTTP/1.1\r\nX: " + std::string(300, 'a'), limits).state == HeadState::kTooLarge);
    CHECK(ScanRequestHead("GET / HTTP/1.1\r\nX: " + std::string(300, 'a') + "\r\n\r\n", limits).state ==
          HeadState::kTooLarge);
    const std::string exact = "GET / HTTP/1.1\r\nX: " + std::string(200 - 16 - 5 - 2, 'a') + "\r\n\r\n";
    REQUIRE(exact.size() == 200);
    CHECK(ScanRequestHead(exact, limits).state == HeadState::kComplete);
    CHECK(ScanRequestHead(exact.substr(0, 199) + "a\r\n\r\n", limits).state == HeadState::kTooLarge);
  }
}

RequestFacts Get(const std::string& host, std::vector<std::string> origins = {}) {
  RequestFacts f;
  f.method = "GET";
  f.hosts = {host};
  f.origins = std::move(origins);
  f.local_addr = "127.0.0.1";
  return f;
}

TEST_CASE("RequestRules: the Host must name this server, the Origin must be its own", "[dashboard]") {
  const RequestRules local("127.0.0.1", 8080);
  for (const char* host : {"127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "[::1]:8080", "[0:0::1]:8080"}) {
    INFO(host);
    CHECK(local.HostAllowed(host, "127.0.0.1"));
    CHECK_FALSE(local.Check(Get(host)));
  }
  for (const char* host : {"evil.example:8080", "127.0.0.1", "127.0.0.1:8081", "127.0.0.1:80800", "::1:8080",
                           "[127.0.0.1]:8080", "[::1]", "127.0.0.2:8080", "localhost.:8080", ":8080", "",
                           "127.0.0.1:8080x", "[::1:8080", "127.0.0.1:+8080"}) {
    INFO(host);
    CHECK_FALSE(local.HostAllowed(host, "127.0.0.1"));
    std::optional<Refusal> r = local.Check(Get(host));
    REQUIRE(r);
    CHECK(r->status == 403);
  }
  // Port 80 may be left out.
  CHECK(RequestRules("127.0.0.1", 80).HostAllowed("localhost", "127.0.0.1"));
  // A --host name or address is allowed besides the loopback ones.
  const RequestRules named("Box.Example", 9000);
  CHECK(named.HostAllowed("box.example:9000", "10.0.0.5"));
  CHECK(named.HostAllowed("127.0.0.1:9000", "10.0.0.5"));
  CHECK_FALSE(named.HostAllowed("10.0.0.5:9000", "10.0.0.5"));
  const RequestRules v6("[fd00::5]", 9000);
  CHECK(v6.HostAllowed("[FD00:0::5]:9000", "fd00::5"));
  CHECK(v6.url() == "http://[fd00::5]:9000/");
  // A wildcard: also the address the connection came in on.
  const RequestRules any("0.0.0.0", 9000);
  CHECK(any.HostAllowed("10.0.0.5:9000", "10.0.0.5"));
  CHECK(any.HostAllowed("10.0.0.5:9000", "::ffff:10.0.0.5"));
  CHECK_FALSE(any.HostAllowed("10.0.0.6:9000", "10.0.0.5"));
  CHECK_FALSE(any.HostAllowed("evil.example:9000", "10.0.0.5"));
  CHECK(RequestRules("::", 9000).HostAllowed("[fd00::5]:9000", "fd00::5"));

  CHECK_FALSE(local.Check(Get("127.0.0.1:8080", {"http://127.0.0.1:8080"})));
  CHECK_FALSE(local.Check(Get("localhost:8080", {"HTTP://LOCALHOST:8080"})));
  for (const char* origin : {"http://evil.example", "null", "http://localhost:8080", "https://127.0.0.1:8080", ""}) {
    INFO(origin);
    std::optional<Refusal> r = local.Check(Get("127.0.0.1:8080", {origin}));
    REQUIRE(r);
    CHECK(r->status == 403);
  }
}

TEST_CASE("RequestRules: one Host, GET or HEAD, no body", "[dashboard]") {
  const RequestRules rules("127.0.0.1", 8080);
  RequestFacts f = Get("127.0.0.1:8080");
  f.hosts.clear();
  CHECK(rules.Check(f)->status == 400);
  f.hosts = {"127.0.0.1:8080", "127.0.0.1:8080"};
  CHECK(rules.Check(f)->status == 400);
  f = Get("127.0.0.1:8080");
  f.method = "HEAD";
  CHECK_FALSE(rules.Check(f));
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "get"}) {
    f.method = method;
    CHECK(rules.Check(f)->status == 405);
  }
  f = Get("127.0.0.1:8080");
  f.content_lengths = {"0"};
  CHECK_FALSE(rules.Check(f));
  f.content_lengths = {"12"};
  CHECK(rules.Check(f)->status == 413);
  f.content_lengths = {};
  f.has_transfer_encoding = true;
  CHECK(rules.Check(f)->status == 413);
}

// A loopback listener whose accepted sockets go to an HttpConnections.
class Listener {
 public:
  Listener(const ConnectionLimits& limits, Answerer answer) : connections_(limits, std::move(answer)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(fd_, 64) == 0);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accepter_ = std::thread([this] {
      while (true) {
        int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        connections_.Add(c);
      }
    });
  }
  ~Listener() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    accepter_.join();
    connections_.Stop();
  }
  int Connect() const {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    return fd;
  }

 private:
  HttpConnections connections_;
  int fd_ = -1;
  int port_ = 0;
  std::thread accepter_;
};

// Everything until the peer closes (at most 10 s).
std::string ReadToEnd(int fd) {
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

void Send(int fd, const std::string& s) { send(fd, s.data(), s.size(), MSG_NOSIGNAL); }

// Answers "OK <path>" and keeps the connection; throws for /throw.
Answer Echo(const std::string& head, const RequestContext& context) {
  const std::string path = head.substr(4, head.find(' ', 4) - 4);
  if (path == "/throw") throw std::runtime_error("the handler failed");
  const std::string body = "OK " + path + " from " + context.remote_addr;
  return Answer{"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, !context.last};
}

TEST_CASE("HttpConnections: pipelined requests, a throwing answerer, the request cap per connection",
          "[dashboard]") {
  ConnectionLimits limits;
  limits.max_requests_per_connection = 3;
  Listener server(limits, Echo);
  int fd = server.Connect();
  // Four requests at once: three answered in order, then the connection closes.
  Send(fd, "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\nGET /c HTTP/1.1\r\n\r\nGET /d HTTP/1.1\r\n\r\n");
  const std::string out = ReadToEnd(fd);
  close(fd);
  CHECK(out.find("OK /a from 127.0.0.1") != std::string::npos);
  CHECK(out.find("OK /b") > out.find("OK /a"));
  CHECK(out.find("OK /c") > out.find("OK /b"));
  CHECK(out.find("OK /d") == std::string::npos);

  // An exception in the answerer: a 500 with one sentence, and the server goes on.
  fd = server.Connect();
  Send(fd, "GET /throw HTTP/1.1\r\n\r\n");
  const std::string failed = ReadToEnd(fd);
  close(fd);
  CHECK(failed.rfind("HTTP/1.1 500 ", 0) == 0);
  CHECK(failed.find("{\"error\":\"internal error: the handler failed\"}") != std::string::npos);
  fd = server.Connect();
  Send(fd, "GET /after HTTP/1.1\r\n\r\n");
  shutdown(fd, SHUT_WR);
  CHECK(ReadToEnd(fd).find("OK /after") != std::string::npos);
  close(fd);
}

TEST_CASE("HttpConnections: a slow head gets 408, a large one 431, and the oldest waiting connection makes room",
          "[dashboard]") {
  ConnectionLimits limits;
  limits.head_timeout = std::chrono::milliseconds(300);
  limits.head = HeadLimits{1024, 10};
  limits.max_connections = 3;
  Listener server(limits, Echo);

  int slow = server.Connect();
  Send(slow, "GET /slow HTTP/1.1\r\n");
  const std::string timed_out = ReadToEnd(slow);
  close(slow);
  CHECK(timed_out.rfind("HTTP/1.1 408 ", 0) == 0);

  int large = server.Connect();
  Send(large, "GET /large HTTP/1.1\r\nX: " + std::string(5000, 'a') + "\r\n\r\n");
  const std::string too_large = ReadToEnd(large);
  close(large);
  CHECK(too_large.rfind("HTTP/1.1 431 ", 0) == 0);

  // Three connections that send nothing fill the table; a fourth one is
  // served, and the first one is closed to make room.
  ConnectionLimits roomy = limits;
  roomy.head_timeout = std::chrono::seconds(30);
  Listener full(roomy, Echo);
  int idle[3];
  for (int& fd : idle) {
    fd = full.Connect();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // accepted in this order
  }
  int fourth = full.Connect();
  Send(fourth, "GET /fourth HTTP/1.1\r\n\r\n");
  shutdown(fourth, SHUT_WR);
  CHECK(ReadToEnd(fourth).find("OK /fourth") != std::string::npos);
  close(fourth);
  CHECK(ReadToEnd(idle[0]).empty());  // closed without an answer
  for (int fd : idle) close(fd);
}

// A server over an empty results database, answering from memory.
struct MemoryServer {
  tune::e2e::TempDir dir;
  std::unique_ptr<Storage> storage;
  std::unique_ptr<DashboardData> data;
  std::unique_ptr<DashboardServer> server;
  MemoryServer() {
    const std::string db = (dir.path / "results.db").string();
    REQUIRE(OpenSqliteStorage(db).ok());
    auto opened = OpenSqliteStorageReadOnly(db);
    REQUIRE(opened.ok());
    storage = std::move(*opened);
    data = std::make_unique<DashboardData>(*storage, (dir.path / "tune_runs").string());
    ServerOptions options;
    options.port = 8080;
    server = std::make_unique<DashboardServer>(*data, options);
  }
};

TEST_CASE("DashboardServer: a request line cut by a NUL byte gets a 400 without a body (fuzzer input)",
          "[dashboard]") {
  MemoryServer s;
  // dashboard_request_fuzz: "HEAD" with a NUL in its request line got a 400
  // whose JSON body followed a head that a HEAD client reads as bodiless.
  static const char kInput[] = "HEAD / HTTP/1/api/experiment?name=fuzz\x04\0\0\0\0\0\0\0\0\0" "8080\r\n\r\nGET t\r";
  const std::string in(kInput, sizeof kInput - 1);
  REQUIRE(in.size() == 62);
  const std::string out = s.server->AnswerConnection(in);
  INFO(out);
  CHECK(out.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(out.find("Content-Length: 0\r\n") != std::string::npos);
  CHECK(out.size() == out.find("\r\n\r\n") + 4);  // nothing after the head
  // A GET that cpp-httplib refuses still gets the API's JSON error.
  const std::string missing = s.server->AnswerConnection("GET /nothing HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
  CHECK(missing.rfind("HTTP/1.1 404 ", 0) == 0);
  CHECK(missing.find("{\"error\":\"no such page") != std::string::npos);
}

}  // namespace
