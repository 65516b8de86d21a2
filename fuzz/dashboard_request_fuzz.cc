// Fuzzes the dashboard's request handling (dashboard/server.h) with the
// bytes one client sends on one connection: DashboardServer::
// AnswerConnection runs them through the same steps as a socket (request
// heads capped and cut by ScanRequestHead, then cpp-httplib's parser, the
// Host/Origin/method/body rules and the real handlers over a real SQLite
// database with a log, a symlinked log and a FIFO log). Beyond "no crash,
// no undefined behaviour, no exception", it checks the answer: a sequence
// of well-formed HTTP/1.1 responses, one per complete request head at
// most, each with a status from the known set, a Content-Length that
// matches its body (none for HEAD, 204 and 304), no exception text, and a
// bounded size; a 2xx answers only a GET or HEAD.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "dashboard/dashboard_data.h"
#include "dashboard/request_head.h"
#include "dashboard/server.h"
#include "storage/storage.h"

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxAnswerBytes = 4u << 20;  // the largest answer here is chart.min.js (about 200 KB)
constexpr const char* kSecret = "SECRET-OUTSIDE-THE-TRIAL";
const std::set<int> kStatuses = {200, 204, 304, 400, 403, 404, 405, 413, 414, 431};

struct World {
  fs::path dir;
  std::unique_ptr<tune::Storage> storage;
  std::unique_ptr<tune::DashboardData> data;
  std::unique_ptr<tune::DashboardServer> server;
};

World* world = nullptr;

void Fail(const char* why) {
  std::fprintf(stderr, "dashboard_request_fuzz: %s\n", why);
  std::abort();
}

void RemoveWorld() {
  std::error_code ec;
  if (world != nullptr) fs::remove_all(world->dir, ec);
}

// An experiment "fuzz" of three trials whose rank 0 logs are a file, a
// symbolic link to a file outside, and a FIFO.
World* MakeWorld() {
  auto* w = new World;
  std::string tmpl = (fs::temp_directory_path() / "dashboard_fuzz_XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) Fail("mkdtemp failed");
  w->dir = tmpl;
  const std::string db = (w->dir / "results.db").string();
  const std::string spec = R"({"name": "fuzz", "objective": {"metric": "eval_loss", "mode": "min"},
    "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 0.1},
                   "opt": {"type": "choice", "values": ["adamw", "<b>sgd</b>"]}},
    "scheduler": {"type": "asha", "max_t": 30, "grace_period": 5, "reduction_factor": 3},
    "limits": {"max_trials": 3}, "trial": {"command": ["sh", "-c", "true"]}})";
  {
    auto writable = tune::OpenSqliteStorage(db);
    if (!writable.ok()) Fail("cannot create the database");
    auto e = (*writable)->CreateExperiment("fuzz", spec, 1);
    if (!e.ok()) Fail("cannot create the experiment");
    for (int i = 0; i < 3; ++i) {
      auto t = (*writable)->CreateTrial(*e, {{"lr", 0.001 * (i + 1)}, {"opt", std::string(i ? "adamw" : "<b>sgd</b>")}});
      if (!t.ok() || !(*writable)->StartTrial(t->id, 0, "local:pgid 1").ok()) Fail("cannot create a trial");
      for (int64_t step : {5, 15, 30}) {
        tune::MetricReport r;
        r.step = step;
        r.values = {{"eval_loss", 3.0 - step / 20.0 - i}, {"acc", 0.5}};
        r.time = 1.7e9 + static_cast<double>(step);
        if (!(*writable)->AppendReport(t->id, 0, r, r.values["eval_loss"]).ok()) Fail("cannot append a report");
      }
      if (!(*writable)->FinishTrial(t->id, tune::TrialState::kCompleted, std::nullopt, std::nullopt, "done").ok()) {
        Fail("cannot finish a trial");
      }
    }
  }
  const fs::path runs = w->dir / "tune_runs" / "fuzz";
  for (const char* t : {"trial_0000", "trial_0001", "trial_0002"}) fs::create_directories(runs / t);
  std::ofstream(runs / "trial_0000" / "rank_0.log") << "step=5 eval_loss=2.75\ncaf\xe9 \x01 line\nlast\n";
  std::ofstream(w->dir / "secret.txt") << kSecret << "\n";
  fs::create_symlink(w->dir / "secret.txt", runs / "trial_0001" / "rank_0.log");
  if (mkfifo((runs / "trial_0002" / "rank_0.log").c_str(), 0600) != 0) Fail("mkfifo failed");

  auto storage = tune::OpenSqliteStorageReadOnly(db);
  if (!storage.ok()) Fail("cannot open the database");
  w->storage = std::move(*storage);
  w->data = std::make_unique<tune::DashboardData>(*w->storage, (w->dir / "tune_runs").string());
  tune::ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 8080;
  w->server = std::make_unique<tune::DashboardServer>(*w->data, options);
  return w;
}

// The method as cpp-httplib 0.11.4 reads it from a head: the request
// line is cut at its first NUL (strlen), split at spaces, each part
// trimmed of spaces and tabs, empty parts skipped; "" when none.
std::string MethodOf(const std::string& head) {
  std::string line = head.substr(0, head.find('\n'));
  line = line.substr(0, line.find('\0'));
  size_t at = 0;
  while (at < line.size()) {
    size_t space = line.find(' ', at);
    if (space == std::string::npos) space = line.size();
    std::string part = line.substr(at, space - at);
    part.erase(0, part.find_first_not_of(" \t"));
    const size_t last = part.find_last_not_of(" \t");
    part.erase(last == std::string::npos ? 0 : last + 1);
    if (!part.empty()) return part;
    at = space + 1;
  }
  return "";
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// Checks one response at the start of `out` for a request of `method`;
// returns its length.
size_t CheckResponse(std::string_view out, std::string_view method) {
  if (out.substr(0, 9) != "HTTP/1.1 " || out.size() < 12) Fail("an answer does not start with HTTP/1.1");
  const int status = std::atoi(std::string(out.substr(9, 3)).c_str());
  if (kStatuses.count(status) == 0) Fail("an answer's status is not in the known set");
  if (status < 300 && method != "GET" && method != "HEAD") Fail("a request other than GET or HEAD was answered 2xx");
  const size_t end = out.find("\r\n\r\n");
  if (end == std::string_view::npos) Fail("an answer's head does not end");
  std::string_view head = out.substr(0, end + 2);
  long length = -1;
  for (size_t at = head.find("\r\n") + 2; at < head.size();) {
    const size_t eol = head.find("\r\n", at);
    std::string_view line = head.substr(at, eol - at);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) Fail("an answer's header line has no colon");
    std::string_view name = line.substr(0, colon);
    if (IEquals(name, "EXCEPTION_WHAT")) Fail("an exception's text went into a header");
    if (IEquals(name, "Content-Length")) {
      if (length >= 0) Fail("two Content-Length headers");
      length = std::atol(std::string(line.substr(colon + 1)).c_str());
    }
    at = eol + 2;
  }
  const bool bodiless = method == "HEAD" || status == 204 || status == 304;
  if (!bodiless && length < 0) Fail("an answer with a body has no Content-Length");
  const size_t body = bodiless ? 0 : static_cast<size_t>(length);
  if (end + 4 + body > out.size()) Fail("an answer is shorter than its Content-Length");
  if (end + 4 + body > kMaxAnswerBytes) Fail("an answer is larger than any this database can give");
  return end + 4 + body;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  world = MakeWorld();
  std::atexit(RemoveWorld);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string out = world->server->AnswerConnection(in);
  // The requests as the server cut them, each answered in turn.
  std::string_view rest = out;
  size_t answers = 0;
  while (!rest.empty()) {
    tune::ScannedHead head = tune::ScanRequestHead(in, tune::HeadLimits{});
    std::string method;
    if (head.state == tune::HeadState::kComplete) {
      method = MethodOf(head.head);
      in.remove_prefix(head.consumed);
    } else if (head.state == tune::HeadState::kIncomplete) {
      Fail("an answer to a request that never ended");
    } else {
      in = {};
    }
    rest.remove_prefix(CheckResponse(rest, method));
    ++answers;
  }
  if (answers == 0 && tune::ScanRequestHead(std::string_view(reinterpret_cast<const char*>(data), size),
                                            tune::HeadLimits{})
                              .state != tune::HeadState::kIncomplete) {
    Fail("a complete request head got no answer");
  }
  // The linked file's text in an answer, when the request did not bring it
  // (a refused Host is quoted back in its 403).
  const std::string_view sent(reinterpret_cast<const char*>(data), size);
  if (out.find(kSecret) != std::string::npos && sent.find(kSecret) == std::string_view::npos) {
    Fail("a log linked to a file outside was read");
  }
  return 0;
}
