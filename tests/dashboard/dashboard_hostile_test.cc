// Hostile clients and hostile log files against a real `tune dashboard`
// process, over real sockets (docs/dashboard.md, "Security" and "Limits"):
// a Range header of 3,000 ranges, a foreign Host or Origin, slow clients,
// request bodies, huge heads, and logs that are a symbolic link, a FIFO or
// one 300 MB line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "tests/dashboard/dashboard_util.h"

namespace {

using namespace tune::dashboard_test;
using Clock = std::chrono::steady_clock;

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

struct Raw {
  bool closed = false;  // the server closed the connection (else: time or `cap` ran out)
  int status = 0;       // 0: no status line
  std::string head, body;
  size_t received = 0;
  double seconds = 0;
  std::string Header(const std::string& name) const {
    std::string lower_head = head, lower_name = name + ":";
    for (char& c : lower_head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : lower_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t at = lower_head.find("\r\n" + lower_name);
    if (at == std::string::npos) return "";
    at += 2 + lower_name.size();
    std::string value = head.substr(at, head.find("\r\n", at) - at);
    value.erase(0, value.find_first_not_of(' '));
    return value;
  }
};

// Reads what the server sends on `fd` until it closes, `seconds` pass or
// `cap` bytes came (kept: the first 1 MB of the body).
Raw Receive(int fd, double seconds, size_t cap = size_t{64} << 20) {
  Raw raw;
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  std::string data;
  char buf[65536];
  while (raw.received < cap) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(until - Clock::now()).count();
    if (left <= 0) break;
    timeval tv{static_cast<time_t>(left / 1000000), static_cast<suseconds_t>(left % 1000000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      raw.closed = true;
      break;
    }
    if (n < 0) continue;
    raw.received += static_cast<size_t>(n);
    if (data.size() < (size_t{1} << 20)) data.append(buf, static_cast<size_t>(n));
  }
  raw.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const size_t end = data.find("\r\n\r\n");
  if (data.rfind("HTTP/1.1 ", 0) == 0 && data.size() >= 12) raw.status = std::atoi(data.substr(9, 3).c_str());
  if (end != std::string::npos) {
    raw.head = data.substr(0, end + 2);
    raw.body = data.substr(end + 4);
  }
  return raw;
}

// `request` on a new connection; the answer as Receive reads it.
Raw Exchange(int port, const std::string& request, double seconds = 10, size_t cap = size_t{64} << 20) {
  int fd = Connect(port);
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  Raw raw = Receive(fd, seconds, cap);
  close(fd);
  return raw;
}

std::string HostOf(int port) { return "127.0.0.1:" + std::to_string(port); }

// GET `path` with Host 127.0.0.1:PORT, Connection: close and `extra`
// header lines (each ending in \r\n).
std::string GetRequest(int port, const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: " + HostOf(port) + "\r\nConnection: close\r\n" + extra + "\r\n";
}

// A finished experiment of `trials` short trials: its database and its
// trial directories.
struct SmallExperiment {
  TempDir dir;
  std::string db;
  fs::path runs;
  explicit SmallExperiment(int trials = 1) {
    json spec = {
        {"name", "hostile"},
        {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
        {"parameters", {{"lr", {{"type", "loguniform"}, {"low", 1e-5}, {"high", 1e-1}}}}},
        {"limits", {{"max_trials", trials}, {"max_concurrent_trials", 1}}},
        {"trial",
         {{"command", {kBin + "/synthetic_trial", "--lr", "${lr}", "--steps", "3", "--report-every", "1"}},
          {"workers", 1},
          {"timeout_s", 60}}},
    };
    fs::path path = WriteSpec(dir.path, spec);
    db = (dir.path / "results.db").string();
    Output run = Sh(Tune("run " + Quote(path.string()) + " --db " + Quote(db) + " --quiet"));
    INFO(run.out);
    REQUIRE(run.code == 0);
    runs = dir.path / "tune_runs" / "hostile";
    REQUIRE(fs::exists(runs / "trial_0000" / "rank_0.log"));
  }
  fs::path Log(int trial) const {
    char name[32];
    std::snprintf(name, sizeof name, "trial_%04d", trial);
    return runs / name / "rank_0.log";
  }
};

// The server's peak resident memory (VmHWM), in KiB.
long PeakKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

json TrialLog(const Raw& raw) {
  INFO(raw.head << raw.body.substr(0, 500));
  REQUIRE(raw.status == 200);
  json doc = json::parse(raw.body);
  REQUIRE(doc["logs"].size() == 1);
  return doc["logs"][0];
}

}  // namespace

TEST_CASE("dashboard: a Range header of 3,000 ranges is ignored: one whole answer, not 3,000 copies",
          "[dashboard][hostile]") {
  SmallExperiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log");
  const Raw plain = Exchange(dash.port(), GetRequest(dash.port(), "/chart.min.js"));
  REQUIRE(plain.status == 200);
  const size_t size = std::stoul(plain.Header("Content-Length"));
  REQUIRE(size > 100000);

  std::string ranges = "Range: bytes=0-";
  for (int i = 1; i < 3000; ++i) ranges += ",0-";
  // Read at most 32 MB: the old server sent 3,000 copies (600 MB) as 206.
  const Raw hostile = Exchange(dash.port(), GetRequest(dash.port(), "/chart.min.js", ranges + "\r\n"), 30, 32 << 20);
  INFO(hostile.head);
  CHECK(hostile.status == 200);
  CHECK(hostile.Header("Content-Length") == std::to_string(size));
  CHECK(hostile.received < 2 * size);
  // One ordinary range is ignored too (the dashboard never answers 206).
  const Raw one = Exchange(dash.port(), GetRequest(dash.port(), "/chart.min.js", "Range: bytes=0-9\r\n"));
  CHECK(one.status == 200);
  CHECK(one.Header("Content-Length") == std::to_string(size));
  CHECK(dash.child().Wait(0) == -1);  // still serving
}

TEST_CASE("dashboard: a Host that is not this server's is refused (DNS rebinding), its own addresses are served",
          "[dashboard][hostile]") {
  SmallExperiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log");
  const std::string port = std::to_string(dash.port());
  auto with_host = [&](const std::string& host) {
    return Exchange(dash.port(), "GET /api/experiments HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
  };
  for (const std::string& host : {"127.0.0.1:" + port, "localhost:" + port, "LocalHost:" + port, "[::1]:" + port}) {
    INFO(host);
    CHECK(with_host(host).status == 200);
  }
  for (const std::string& host : std::vector<std::string>{"evil.example:" + port, "evil.example", "127.0.0.1",
                                                         "127.0.0.1:1" + port, "localhost.evil.example:" + port,
                                                         "127.0.0.2:" + port, "[::1]"}) {
    INFO(host);
    const Raw raw = with_host(host);
    CHECK(raw.status == 403);
    CHECK(raw.body.find("is not an address of this dashboard") != std::string::npos);
    CHECK(raw.body.find("\"name\"") == std::string::npos);  // no results in it
  }
  // No Host at all, or two.
  CHECK(Exchange(dash.port(), "GET /api/experiments HTTP/1.1\r\nConnection: close\r\n\r\n").status == 400);
  CHECK(Exchange(dash.port(), "GET /api/experiments HTTP/1.1\r\nHost: 127.0.0.1:" + port +
                                  "\r\nHost: evil.example:" + port + "\r\nConnection: close\r\n\r\n")
            .status == 400);
}

TEST_CASE("dashboard: a cross-site Origin is refused, the page's own origin is served", "[dashboard][hostile]") {
  SmallExperiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log");
  const std::string own = "http://" + HostOf(dash.port());
  CHECK(Exchange(dash.port(), GetRequest(dash.port(), "/api/experiments", "Origin: " + own + "\r\n")).status == 200);
  for (const std::string& origin : {std::string("http://evil.example"), std::string("null"),
                                    "https://" + HostOf(dash.port()), "http://localhost:" + std::to_string(dash.port())}) {
    INFO(origin);
    const Raw raw = Exchange(dash.port(), GetRequest(dash.port(), "/api/experiments", "Origin: " + origin + "\r\n"));
    CHECK(raw.status == 403);
    CHECK(raw.body.find("is another site") != std::string::npos);
  }
}

TEST_CASE("dashboard: a hundred slow-loris connections do not stop it from answering", "[dashboard][hostile]") {
  SmallExperiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log");
  // More connections than cpp-httplib has worker threads on any machine
  // (at least 8): each sends a head a byte at a time, every half second.
  std::vector<int> slow;
  for (int i = 0; i < 100; ++i) {
    slow.push_back(Connect(dash.port()));
    const std::string start = "GET /api/experiments HTTP/1.1\r\nHost: " + HostOf(dash.port()) + "\r\n";
    send(slow.back(), start.data(), start.size(), MSG_NOSIGNAL);
  }
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    for (int t = 0; t < 40 && !stop; ++t) {
      for (int fd : slow) send(fd, "X", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const Raw normal = Exchange(dash.port(), GetRequest(dash.port(), "/api/experiments"), 8);
  stop = true;
  drip.join();
  for (int fd : slow) close(fd);
  INFO(normal.head << " after " << normal.seconds << " s");
  CHECK(normal.status == 200);
}

TEST_CASE("dashboard: a request head that does not arrive within 10 s gets 408 and is closed",
          "[dashboard][hostile]") {
  SmallExperiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log");
  int fd = Connect(dash.port());
  const std::string start = "GET /api/experiments HTTP/1.1\r\nHost: " + HostOf(dash.port()) + "\r\n";
  send(fd, start.data(), start.size(), MSG_NOSIGNAL);
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    for (int t = 0; t < 40 && !stop; ++t) {
      send(fd, "X", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  const Raw raw = Receive(fd, 20);
  stop = true;
  drip.join();
  close(fd);
  INFO(raw.head << raw.body);
  CHECK(raw.status == 408);
  CHECK(raw.closed);
}

TEST_CASE("dashboard: a request with a body is refused unread", "[dashboard][hostile]") {
  SmallExperiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log");
  const std::string host = "Host: " + HostOf(dash.port()) + "\r\n";
  // A GET announcing 1 GB that never comes: answered at once, not waited for.
  const Raw announced =
      Exchange(dash.port(), "GET /api/experiments HTTP/1.1\r\n" + host + "Content-Length: 1000000000\r\n\r\n", 5);
  CHECK(announced.status == 413);
  CHECK(announced.closed);
  CHECK(announced.body.find("takes no request body") != std::string::npos);
  const Raw chunked = Exchange(dash.port(), "GET /api/experiments HTTP/1.1\r\n" + host +
                                                "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 5);
  CHECK(chunked.status == 413);
  const Raw post = Exchange(dash.port(), "POST /api/experiments HTTP/1.1\r\n" + host +
                                             "Content-Length: 5\r\nConnection: close\r\n\r\nhello", 5);
  CHECK(post.status == 405);
  CHECK(post.Header("Allow") == "GET, HEAD");
  // Content-Length: 0 is no body.
  CHECK(Exchange(dash.port(), GetRequest(dash.port(), "/api/experiments", "Content-Length: 0\r\n")).status == 200);
}

TEST_CASE("dashboard: a request head over 16 KiB or 100 lines gets 431", "[dashboard][hostile]") {
  SmallExperiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log");
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "X-Header-" + std::to_string(i) + ": 1\r\n";
  const Raw lines = Exchange(dash.port(), GetRequest(dash.port(), "/api/experiments", many));
  CHECK(lines.status == 431);
  std::string wide;
  for (int i = 0; i < 20; ++i) wide += "X-Wide-" + std::to_string(i) + ": " + std::string(1000, 'a') + "\r\n";
  const Raw bytes = Exchange(dash.port(), GetRequest(dash.port(), "/api/experiments", wide));
  CHECK(bytes.status == 431);
  const Raw huge =
      Exchange(dash.port(), GetRequest(dash.port(), "/api/experiments", "X-Huge: " + std::string(1 << 20, 'a') + "\r\n"));
  CHECK(huge.status == 431);
  CHECK(huge.closed);
  // A request target over cpp-httplib's 8,192 bytes, inside the 16 KiB head
  // (refused before its method is read: no body).
  const Raw target = Exchange(dash.port(), GetRequest(dash.port(), "/" + std::string(9000, 'a')));
  CHECK(target.status == 414);
  CHECK(target.Header("Content-Length") == "0");
  // Just under both limits: answered.
  std::string fits;
  for (int i = 0; i < 90; ++i) fits += "X-Fits-" + std::to_string(i) + ": " + std::string(100, 'b') + "\r\n";
  CHECK(Exchange(dash.port(), GetRequest(dash.port(), "/api/experiments", fits)).status == 200);
}

TEST_CASE("dashboard: a log that is a symbolic link, or in a linked trial directory, is not read",
          "[dashboard][hostile]") {
  SmallExperiment e(2);
  const fs::path secret = e.dir.path / "outside.txt";
  std::ofstream(secret) << "SECRET-OUTSIDE-THE-TRIAL\n";
  fs::remove(e.Log(0));
  fs::create_symlink(secret, e.Log(0));
  // Trial 1's whole directory linked to one elsewhere.
  const fs::path elsewhere = e.dir.path / "elsewhere";
  fs::create_directory(elsewhere);
  std::ofstream(elsewhere / "rank_0.log") << "SECRET-OUTSIDE-THE-TRIAL\n";
  fs::remove_all(e.Log(1).parent_path());
  fs::create_directory_symlink(elsewhere, e.Log(1).parent_path());

  Dashboard dash(e.db, e.dir.path / "dash.log");
  for (int trial : {0, 1}) {
    INFO("trial " << trial);
    const Raw raw =
        Exchange(dash.port(), GetRequest(dash.port(), "/api/trial?experiment=hostile&number=" + std::to_string(trial)));
    CHECK(raw.body.find("SECRET") == std::string::npos);
    const json log = TrialLog(raw);
    CHECK(log["lines"].empty());
    CHECK(log["error"].get<std::string>().find("symbolic link") != std::string::npos);
  }
}

TEST_CASE("dashboard: a log that is a FIFO is refused at once, never waited on", "[dashboard][hostile]") {
  SmallExperiment e;
  fs::remove(e.Log(0));
  REQUIRE(mkfifo(e.Log(0).c_str(), 0600) == 0);
  Dashboard dash(e.db, e.dir.path / "dash.log");
  const Raw raw = Exchange(dash.port(), GetRequest(dash.port(), "/api/trial?experiment=hostile&number=0"), 5);
  // A server stuck opening the FIFO is released (opened and closed at the
  // other end), so that it can be stopped.
  int release = open(e.Log(0).c_str(), O_RDWR | O_NONBLOCK);
  if (release >= 0) close(release);
  const json log = TrialLog(raw);
  CHECK(log["lines"].empty());
  CHECK(log["error"].get<std::string>().find("not a regular file") != std::string::npos);
}

TEST_CASE("dashboard: a 300 MB log line is read from its end only: bounded memory, one cut line",
          "[dashboard][hostile]") {
  SmallExperiment e;
  {
    // A progress bar that rewrote its line for hours: 300 MB, no newline.
    std::ofstream log(e.Log(0), std::ios::binary | std::ios::trunc);
    std::string block;
    for (int i = 0; block.size() < (1 << 20); ++i) block += "progress " + std::to_string(i % 100) + "%\r";
    block.resize(1 << 20);
    for (int i = 0; i < 300; ++i) log.write(block.data(), static_cast<std::streamsize>(block.size()));
    log << "progress done\nlast line\n";
  }
  Dashboard dash(e.db, e.dir.path / "dash.log");
  const long before = PeakKiB(dash.child().pid());
  const Raw raw = Exchange(dash.port(), GetRequest(dash.port(), "/api/trial?experiment=hostile&number=0"), 30);
  const long after = PeakKiB(dash.child().pid());
  INFO("VmHWM " << before << " KiB before, " << after << " KiB after; answer " << raw.received << " bytes in "
                << raw.seconds << " s");
  const json log = TrialLog(raw);
  INFO(log.dump().substr(0, 300));
  REQUIRE(log["lines"].size() == 2);
  const std::string first = log["lines"][0];
  CHECK(first.rfind("[...] ", 0) == 0);
  CHECK(first.size() <= 8 * 1024 + 6);
  CHECK(first.find("progress done") == first.size() - std::string("progress done").size());
  CHECK(log["lines"][1] == "last line");
  CHECK(log["truncated"] == true);
  CHECK(raw.received < 64 * 1024);
  CHECK(after - before < 64 * 1024);  // the whole line would be 300 MB, several times over
}

TEST_CASE("dashboard: --host 0.0.0.0 warns in one line and still refuses a foreign Host", "[dashboard][hostile]") {
  SmallExperiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log", "0.0.0.0");
  std::string log;
  for (int i = 0; i < 100 && log.find("warning") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    log = dash.child().Log();
  }
  INFO(log);
  CHECK(log.find("tune dashboard: warning: --host 0.0.0.0 shows every experiment's parameters, results and logs, "
                 "without authentication, to anyone who can reach port " +
                 std::to_string(dash.port())) != std::string::npos);
  CHECK(Exchange(dash.port(), GetRequest(dash.port(), "/api/experiments")).status == 200);
  const Raw foreign = Exchange(dash.port(), "GET /api/experiments HTTP/1.1\r\nHost: evil.example:" +
                                                std::to_string(dash.port()) + "\r\nConnection: close\r\n\r\n");
  CHECK(foreign.status == 403);
  // A loopback-only dashboard prints no warning.
  Dashboard local(e.db, e.dir.path / "local.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(local.child().Log().find("warning") == std::string::npos);
}
