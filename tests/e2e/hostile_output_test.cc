// Trials that print what real programs print: bytes that are not UTF-8
// (Latin-1, overlong forms, surrogates, sequences cut off), control
// characters (ANSI escapes, \r, \b, DEL, C1), NUL bytes, JSON metric names
// holding all of these, and a 50 MB line without a newline. Then everything
// a user runs on the results must work and exit 0: `tune run`, `tune
// trials` (json, csv, table), `tune best` and `tune importance` (json,
// table), `tune status`, `tune dashboard` (its JSON API, and the page in
// headless Chromium), `tune report`, MLflow tracking against a real `mlflow
// server` (read back with MLflow's own client) and TensorBoard event files
// (read back with TensorBoard's own reader). The database keeps what the
// trials printed byte for byte (metric names; a failure message quotes the
// last log line as one line of at most 200 bytes, control characters as
// spaces); what tune prints is UTF-8, a bad byte showing as U+FFFD.
// Also: an exception nobody expected is one sentence and exit 1.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <httplib.h>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/utf8.h"
#include "storage/storage.h"
#include "tests/dashboard/dashboard_util.h"
#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune::e2e;
using tune::dashboard_test::Dashboard;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kFffd = "\xEF\xBF\xBD";
constexpr size_t kBigLine = 50 * 1024 * 1024;

// hostile.sh KIND CODE: prints KIND's bytes, exits CODE.
const char kHostileScript[] = R"SH(#!/bin/sh
kind=$1; code=$2
[ "$kind" = noobj ] || echo "step=1 loss=0.9"
case $kind in
  utf8)
    printf 'caf\351 \300\257 \355\240\200 \377\376 cut\342\202\n'
    printf 'step=2 loss=0.5 note=caf\351\n'
    printf 'last: caf\351 \300\257 failed\n' ;;
  ctrl)
    printf '\033[2J\033]0;title\007 \r\b\177 \302\205 \342\200\250 end\n'
    printf '{"loss": 0.4, "step": 2, "esc\\u001b[31m": 1, "nl\\nkey": 2, "nul\\u0000key": 3}\n'
    printf 'last: \033[31mred\033[0m\tand\rcr\bbs\001' ;;
  nul)
    printf 'before\000after\n'
    printf 'step=2 loss=0.3 \000tail\n'
    printf 'last: a\000b\000' ;;
  big)
    printf 'step=2 loss=0.6\n'
    head -c 52428800 /dev/zero | tr '\000' x ;;
  noobj)
    printf '{"esc\\u001b[2Jkey": 1, "nl\\nkey": 2, "caf\\u00e9": 3}\n' ;;
esac
exit $code
)SH";

// What hostile.sh KIND prints (the big line aside), byte for byte.
std::string Printed(const std::string& kind) {
  const std::string first = "step=1 loss=0.9\n";
  if (kind == "utf8")
    return first + "caf\xE9 \xC0\xAF \xED\xA0\x80 \xFF\xFE cut\xE2\x82\n" + "step=2 loss=0.5 note=caf\xE9\n" +
           "last: caf\xE9 \xC0\xAF failed\n";
  if (kind == "ctrl")
    return first + "\x1B[2J\x1B]0;title\x07 \r\b\x7F \xC2\x85 \xE2\x80\xA8 end\n" +
           "{\"loss\": 0.4, \"step\": 2, \"esc\\u001b[31m\": 1, \"nl\\nkey\": 2, \"nul\\u0000key\": 3}\n" +
           "last: \x1B[31mred\x1B[0m\tand\rcr\bbs\x01";
  if (kind == "nul") return first + std::string("before\0after\nstep=2 loss=0.3 \0tail\nlast: a\0b\0", 45);
  if (kind == "big") return first + "step=2 loss=0.6\n";
  return "{\"esc\\u001b[2Jkey\": 1, \"nl\\nkey\": 2, \"caf\\u00e9\": 3}\n";  // noobj
}

// What the database stores as the last line a failed trial of KIND wrote
// (tune quotes it in the message: one line, control characters as spaces,
// at most 200 bytes).
std::string QuotedLastLine(const std::string& kind) {
  if (kind == "utf8") return "last: caf\xE9 \xC0\xAF failed";
  if (kind == "ctrl") return "last:  [31mred [0m and cr bs ";
  if (kind == "nul") return "last: a b ";
  if (kind == "big") return std::string(197, 'x') + "...";
  return "{\"esc\\u001b[2Jkey\": 1, \"nl\\nkey\": 2, \"caf\\u00e9\": 3}";
}

// The metric names each kind's reports carry, as printed.
std::set<std::string> MetricNames(const std::string& kind) {
  if (kind == "ctrl") return {"loss", "step", "esc\x1B[31m", "nl\nkey", std::string("nul\0key", 7)};
  if (kind == "noobj") return {"esc\x1B[2Jkey", "nl\nkey", "caf\xC3\xA9"};
  return {"loss", "step"};
}

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The last line of `s` (earlier ones are progress).
std::string LastLine(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

// Text a program reads as UTF-8 lines: valid UTF-8, and no control
// character but the line ends (`crlf`: CSV's \r\n).
void CheckCleanText(const std::string& what, const std::string& text, bool crlf = false) {
  INFO(what);
  CHECK(tune::ValidUtf8(text) == text);
  size_t bad = std::string::npos;
  for (size_t i = 0; i < text.size() && bad == std::string::npos; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || (crlf && c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) continue;
    if (c < 0x20 || c == 0x7F) bad = i;
  }
  INFO("a control character at byte " << bad << ": "
                                      << (bad == std::string::npos ? "" : text.substr(bad < 40 ? 0 : bad - 40, 80)));
  CHECK(bad == std::string::npos);
}

void WriteFile(const fs::path& p, const std::string& text, bool executable = false) {
  std::ofstream(p, std::ios::binary) << text;
  if (executable) fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

json HostileSpec(const std::string& name, const fs::path& dir, const json& tracking) {
  json spec = {
      {"name", name},
      {"objective", {{"metric", "loss"}, {"mode", "min"}}},
      {"parameters",
       {{"kind", {{"type", "choice"}, {"values", {"utf8", "ctrl", "nul", "big", "noobj"}}}},
        {"code", {{"type", "choice"}, {"values", {0, 3}}}}}},
      {"search", {{"algorithm", "grid"}}},
      {"limits", {{"max_trials", 10}, {"max_concurrent_trials", 3}}},
      {"trial", {{"command", {(dir / "hostile.sh").string(), "${kind}", "${code}"}}, {"timeout_s", 300}}},
  };
  if (!tracking.is_null()) spec["tracking"] = tracking;
  return spec;
}

// ---------------------------------------------------------------------------
// A real `mlflow server` (as tests/tracking/mlflow_e2e_test.cc starts it).

std::string VenvPython(const std::string& which) {
  Output o = Sh(Quote(std::string(TUNE_SOURCE_DIR) + "/scripts/tracking-venv.sh") + " " + which);
  INFO(o.out);
  REQUIRE(o.code == 0);
  return LastLine(o.out);
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

class MlflowServer {
 public:
  MlflowServer(const std::string& python, const fs::path& dir)
      : mlflow_((fs::path(python).parent_path() / "mlflow").string()), dir_(dir), port_(FreePort()) {
    const std::string store = "sqlite:///" + (dir_ / "mlflow.db").string();
    const std::string artifacts = (dir_ / "artifacts").string();
    const std::string log = (dir_ / "server.log").string();
    const std::string tmp = (dir_ / "server-tmp").string();
    fs::create_directories(tmp);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      setpgid(0, 0);
      setenv("TMPDIR", tmp.c_str(), 1);
      FILE* f = freopen(log.c_str(), "a", stdout);
      (void)f;
      dup2(STDOUT_FILENO, STDERR_FILENO);
      execl(mlflow_.c_str(), mlflow_.c_str(), "server", "--backend-store-uri", store.c_str(),
            "--default-artifact-root", artifacts.c_str(), "--host", "127.0.0.1", "--port",
            std::to_string(port_).c_str(), "--workers", "1", static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid_, pid_);
    const auto deadline = Clock::now() + std::chrono::minutes(5);
    while (Clock::now() < deadline) {
      httplib::Client c("127.0.0.1", port_);
      c.set_connection_timeout(2);
      c.set_read_timeout(2);
      if (auto res = c.Get("/health"); res && res->status == 200) return;
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = 0;
        FAIL("mlflow server exited: " << Sh("tail -20 " + Quote(log)).out);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    FAIL("mlflow server did not answer within 5 minutes: " << Sh("tail -20 " + Quote(log)).out);
  }
  ~MlflowServer() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    for (int i = 0; i < 100 && kill(-pid_, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string uri() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string mlflow_;
  fs::path dir_;
  int port_;
  pid_t pid_ = 0;
};

// ---------------------------------------------------------------------------
// The stored experiment, by trial number.

struct StoredTrial {
  std::string kind;
  int code = 0;
  tune::TrialRecord record;
  std::vector<tune::StoredReport> reports;
};

std::map<int, StoredTrial> ReadStored(const std::string& db, const std::string& name) {
  auto storage = tune::OpenSqliteStorage(db, /*create_if_missing=*/false);
  REQUIRE(storage.ok());
  auto e = (*storage)->FindExperiment(name);
  REQUIRE(e.ok());
  auto records = (*storage)->ListTrialRecords(e->id);
  REQUIRE(records.ok());
  std::map<int, StoredTrial> out;
  for (const tune::TrialRecord& r : *records) {
    StoredTrial& t = out[r.trial.number];
    if (auto k = r.trial.params.find("kind"); k != r.trial.params.end()) t.kind = std::get<std::string>(k->second);
    t.code = static_cast<int>(std::get<int64_t>(r.trial.params.at("code")));
    t.record = r;
    auto reports = (*storage)->ListTrialReports(r.trial.id);
    REQUIRE(reports.ok());
    t.reports = *reports;
  }
  return out;
}

// What the database must hold for hostile.sh's trials under `runs` (the
// experiment's trial directories).
void CheckStored(const std::map<int, StoredTrial>& trials, const fs::path& runs) {
  REQUIRE(trials.size() == 10);
  for (const auto& [number, t] : trials) {
    INFO("trial " << number << " kind " << t.kind << " code " << t.code);
    char dir[32];
    std::snprintf(dir, sizeof dir, "trial_%04d", number);
    const fs::path log = runs / dir / "rank_0.log";
    // The log has every byte, the 50 MB line included.
    const std::string logged = ReadAll(log);
    if (t.kind == "big") {
      CHECK(logged.size() == Printed("big").size() + kBigLine);
      CHECK(logged.compare(0, Printed("big").size(), Printed("big")) == 0);
    } else {
      CHECK(logged == Printed(t.kind));
    }
    // Metric names as printed, also those holding \n, ESC or NUL.
    std::set<std::string> names;
    for (const auto& r : t.reports)
      for (const auto& [name, v] : r.report.values) names.insert(name);
    CHECK(names == MetricNames(t.kind));
    const std::string& message = t.record.message;
    CHECK(message.find_first_of(std::string("\n\r\x1B\0", 4)) == std::string::npos);
    if (t.kind == "noobj" && t.code == 0) {
      CHECK(t.record.trial.state == tune::TrialState::kFailed);
      CHECK(message ==
            "exited 0 but never reported the objective metric 'loss'; it reported only caf\xC3\xA9, esc [2Jkey, nl key");
    } else if (t.code == 0) {
      CHECK(t.record.trial.state == tune::TrialState::kCompleted);
    } else {
      CHECK(t.record.trial.state == tune::TrialState::kFailed);
      CHECK(message == "rank 0 exited with code 3: \"" + QuotedLastLine(t.kind) + "\" (last line of " +
                           fs::absolute(log).string() + ")");
    }
  }
}

// Runs `tune ARGS` and checks that it exits 0 with clean UTF-8 text.
std::string TuneOk(const std::string& args, bool crlf = false) {
  Output o = Sh(Tune(args));
  INFO("tune " << args << "\n" << tune::ValidUtf8(o.out).substr(0, 4000));
  CHECK(o.code == 0);
  CheckCleanText("tune " + args, o.out, crlf);
  return o.out;
}

json GetJson(int port, const std::string& path, size_t* bytes = nullptr) {
  httplib::Client client("127.0.0.1", port);  // sends Host: 127.0.0.1:PORT
  client.set_read_timeout(60);
  auto res = client.Get(path.c_str());
  INFO(path);
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(tune::ValidUtf8(res->body) == res->body);
  if (bytes) *bytes = res->body.size();
  json j;
  REQUIRE_NOTHROW(j = json::parse(res->body));
  return j;
}

json Browse(const std::vector<std::string>& steps) {
  std::string cmd = Quote(TUNE_BROWSER_PYTHON) + " " +
                    Quote(std::string(TUNE_SOURCE_DIR) + "/tests/dashboard/browser_check.py") + " --timeout 90";
  for (const std::string& s : steps) cmd += " " + Quote(s);
  Output o = Sh(cmd);
  INFO(tune::ValidUtf8(o.out).substr(0, 4000));
  json out;
  REQUIRE_NOTHROW(out = json::parse(o.out));
  CHECK(out["error"].is_null());
  CHECK(out["console_errors"].empty());
  CHECK(out["dialogs"].empty());
  return out;
}

// Chromium steps that open experiment NAME at `base`, then trial pages.
std::vector<std::string> PageSteps(const std::string& base, const std::string& name, const std::vector<int>& trials) {
  std::vector<std::string> steps = {"goto:" + base + "#/e/" + name,
                                    "wait:document.body.dataset.loaded >= 1 && window.tuneCharts.history",
                                    "eval:rows=document.querySelectorAll('#trials tbody tr').length"};
  for (int n : trials) {
    const std::string num = std::to_string(n);
    steps.push_back("goto:" + base + "#/e/" + name + "/t/" + num);
    steps.push_back("wait:document.querySelector('h2').textContent.endsWith(' trial " + num +
                    "') && document.querySelector('pre.log')");
    steps.push_back("eval:log" + num + "=document.querySelector('pre.log').textContent.slice(0, 2000)");
  }
  return steps;
}

int NumberOf(const std::map<int, StoredTrial>& trials, const std::string& kind, int code) {
  for (const auto& [n, t] : trials)
    if (t.kind == kind && t.code == code) return n;
  FAIL("no trial of kind " << kind << " code " << code);
  return -1;
}

}  // namespace

TEST_CASE("a failed trial with a Latin-1 last line: run and trials and best and importance and status exit 0", "[hostile]") {
  TempDir dir;
  // Point 1 of the issue: `printf 'caf\351 failed\n'; exit 3` ended
  // `tune trials --format json` with type_error.316 (exit 134).
  WriteFile(dir.path / "trial.sh",
            "#!/bin/sh\necho \"step=1 loss=$1\"\nif [ \"$2\" = 3 ]; then printf 'caf\\351 failed\\n'; exit 3; fi\n",
            true);
  json spec = {{"name", "latin1"},
               {"objective", {{"metric", "loss"}, {"mode", "min"}}},
               {"parameters",
                {{"x", {{"type", "choice"}, {"values", {0.1, 0.2, 0.3}}}},
                 {"code", {{"type", "choice"}, {"values", {0, 3}}}}}},
               {"search", {{"algorithm", "grid"}}},
               {"limits", {{"max_trials", 6}, {"max_concurrent_trials", 2}}},
               {"trial", {{"command", {(dir.path / "trial.sh").string(), "${x}", "${code}"}}}}};
  WriteFile(dir.path / "latin1.json", spec.dump());
  const std::string db = Quote((dir.path / "tune.db").string());
  TuneOk("run " + Quote((dir.path / "latin1.json").string()) + " --db " + db + " --quiet");

  const std::string listed = TuneOk("trials --db " + db + " --format json");
  json rows = json::parse(listed);
  REQUIRE(rows.size() == 6);
  int failed = 0;
  for (const json& r : rows) {
    if (r["state"] != "failed") continue;
    ++failed;
    CHECK(r["message"].get<std::string>().find("\"caf" + kFffd + " failed\"") != std::string::npos);
  }
  CHECK(failed == 3);
  CHECK(TuneOk("trials --db " + db + " --format csv", true).find("caf" + kFffd + " failed") != std::string::npos);
  CHECK(TuneOk("trials --db " + db).find("caf" + kFffd + " failed") != std::string::npos);
  TuneOk("trials --db " + db + " --state failed --format json");
  TuneOk("best --db " + db + " --format json");
  TuneOk("best --db " + db);
  TuneOk("importance --db " + db + " --format json");
  TuneOk("importance --db " + db);
  TuneOk("status --db " + db);
  // The database keeps the byte as the trial printed it.
  auto stored = ReadStored((dir.path / "tune.db").string(), "latin1");
  for (const auto& [n, t] : stored) {
    if (t.code == 3) CHECK(t.record.message.find("\"caf\xE9 failed\"") != std::string::npos);
  }
}

TEST_CASE("an unexpected exception is one sentence and exit 1 and no abort", "[hostile]") {
  TempDir dir;
  WriteFile(dir.path / "exp.json", json({{"name", "limits"},
                                         {"objective", {{"metric", "loss"}, {"mode", "min"}}},
                                         {"parameters", {{"x", {{"type", "uniform"}, {"low", 0}, {"high", 1}}}}},
                                         {"trial", {{"command", {"/bin/true"}}}}})
                                       .dump());
  // A stack limit larger than the address space: the local backend's
  // thread cannot start (std::system_error), a real cause of
  // `terminate called after throwing` before.
  for (const std::string& command : {std::string("validate"), "run --db " + Quote((dir.path / "t.db").string())}) {
    Output o = Sh("ulimit -s 4000000 && ulimit -v 2000000 && " +
                  Tune(command + " " + Quote((dir.path / "exp.json").string())));
    INFO(command << ": " << o.out);
    CHECK(o.code == 1);
    CHECK(o.out == "tune: internal error: std::system_error: Resource temporarily unavailable\n");
    CHECK(!fs::exists(dir.path / "t.db"));
  }
}

TEST_CASE("an error that quotes a path with a newline and escapes is one line", "[hostile]") {
  TempDir dir;
  const std::string path = (dir.path / "exp\n\x1B[2Jx.json").string();
  Output o = Sh(Tune("validate " + Quote(path)));
  INFO(o.out);
  CHECK(o.code == 2);
  CHECK(o.out.rfind("tune: ", 0) == 0);
  CHECK(o.out.find('\n') == o.out.size() - 1);
  CHECK(o.out.find('\x1B') == std::string::npos);
}

TEST_CASE("hostile trial output: run and every output and dashboard and report and MLflow and TensorBoard succeed",
          "[hostile][tracking]") {
  TempDir dir;
  WriteFile(dir.path / "hostile.sh", kHostileScript, true);
  MlflowServer mlflow(VenvPython("mlflow"), dir.path / "mlflow");
  const fs::path tb = dir.path / "tb";
  const std::string name = "hostile";
  WriteFile(dir.path / "hostile.json",
            HostileSpec(name, dir.path,
                        {{"tensorboard", tb.string()}, {"mlflow", {{"tracking_uri", mlflow.uri()}}}})
                .dump());
  const std::string db_path = (dir.path / "tune.db").string();
  const std::string db = Quote(db_path);

  // tune run: exit 0 (half the trials completed), its lines clean.
  const std::string ran = TuneOk("run " + Quote((dir.path / "hostile.json").string()) + " --db " + db + " --quiet");
  CHECK(ran.find("tune: experiment 'hostile' finished: max_trials reached") != std::string::npos);

  // The database holds what the trials printed.
  const std::map<int, StoredTrial> stored = ReadStored(db_path, name);
  CheckStored(stored, dir.path / "tune_runs" / name);

  // Every output of every query command, and a U+FFFD where a byte was bad.
  json rows = json::parse(TuneOk("trials --db " + db + " --format json"));
  REQUIRE(rows.size() == 10);
  for (const json& r : rows) {
    const StoredTrial& t = stored.at(r["number"].get<int>());
    CHECK(r["message"] == tune::ValidUtf8(t.record.message));
  }
  const int utf8_failed = NumberOf(stored, "utf8", 3);
  CHECK(rows[utf8_failed]["message"].get<std::string>().find("\"last: caf" + kFffd + " " + kFffd + kFffd +
                                                              " failed\"") != std::string::npos);
  TuneOk("trials --db " + db + " --format csv", true);
  TuneOk("trials --db " + db);
  TuneOk("trials --db " + db + " --state failed");
  TuneOk("best --db " + db + " --format json");
  TuneOk("best --db " + db);
  TuneOk("importance --db " + db + " --format json");
  TuneOk("importance --db " + db);
  TuneOk("status --db " + db);

  // TensorBoard's own reader: every scalar, every status.
  {
    Output o = Sh(Quote(VenvPython("tensorboard")) + " " +
                  Quote(std::string(TUNE_SOURCE_DIR) + "/tests/tracking/read_events.py") + " " +
                  Quote((tb / name).string()));
    INFO(tune::ValidUtf8(o.out).substr(0, 4000));
    REQUIRE(o.code == 0);
    json seen = json::parse(o.out);
    for (const auto& [n, t] : stored) {
      char run[32];
      std::snprintf(run, sizeof run, "trial_%04d", n);
      INFO(run);
      REQUIRE(seen.contains(run));
      json scalars = json::object();
      for (const auto& r : t.reports)
        for (const auto& [tag, v] : r.report.values)
          scalars[tag].push_back({r.report.step, static_cast<double>(static_cast<float>(v))});
      CHECK(seen[run]["scalars"] == scalars);
      CHECK(seen[run]["status"] ==
            (t.record.trial.state == tune::TrialState::kFailed ? "STATUS_FAILURE" : "STATUS_SUCCESS"));
    }
  }

  // A metric name that is not UTF-8 (a database another program wrote):
  // `tune export tensorboard` still writes files TensorBoard reads.
  {
    const fs::path copy = dir.path / "latin1-name.db";
    fs::copy_file(db_path, copy);
    Output sql = Sh("sqlite3 " + Quote(copy.string()) +
                    " \"UPDATE metrics SET name = CAST(X'636166E9' AS TEXT) WHERE name = 'step'\"");
    INFO(sql.out);
    REQUIRE(sql.code == 0);
    const fs::path out = dir.path / "exported";
    TuneOk("export tensorboard --db " + Quote(copy.string()) + " --experiment " + name + " --out " +
           Quote(out.string()));
    Output o = Sh(Quote(VenvPython("tensorboard")) + " " +
                  Quote(std::string(TUNE_SOURCE_DIR) + "/tests/tracking/read_events.py") + " " +
                  Quote((out / name).string()));
    INFO(tune::ValidUtf8(o.out).substr(0, 4000));
    REQUIRE(o.code == 0);
    json seen = json::parse(o.out);
    CHECK(seen["trial_0000"]["scalars"].contains("caf" + kFffd));
  }

  // MLflow's own client: a run per trial with its state and error, and the
  // objective's history. A metric name MLflow refuses (it holds ESC, \n or
  // NUL) is left out, the rest of its report is not.
  {
    Output o = Sh(Quote(VenvPython("mlflow")) + " " +
                  Quote(std::string(TUNE_SOURCE_DIR) + "/tests/tracking/read_mlflow.py") + " " +
                  Quote(mlflow.uri()) + " " + name);
    INFO(tune::ValidUtf8(o.out).substr(0, 4000));
    REQUIRE(o.code == 0);
    const json runs = json::parse(LastLine(o.out))["runs"];
    for (const auto& [n, t] : stored) {
      char run_name[32];
      std::snprintf(run_name, sizeof run_name, "trial_%04d", n);
      INFO(run_name);
      REQUIRE(runs.contains(run_name));
      const json& run = runs[run_name];
      CHECK(run["tags"]["tune.state"] == tune::TrialStateName(t.record.trial.state));
      if (t.record.trial.state == tune::TrialState::kFailed) {
        CHECK(run["status"] == "FAILED");
        CHECK(run["tags"]["tune.error"] == tune::ValidUtf8(t.record.message));
      }
      json loss = json::array();
      for (const auto& r : t.reports) {
        auto it = r.report.values.find("loss");
        if (it != r.report.values.end()) loss.push_back({r.report.step, it->second});
      }
      json got = json::array();
      if (run["metrics"].contains("loss"))
        for (const json& p : run["metrics"]["loss"]) got.push_back({p[0], p[1]});
      CHECK(got == loss);
    }
  }

  // The dashboard's JSON API: every document, with the Host it expects.
  Dashboard dash(db_path, dir.path / "dashboard.log");
  GetJson(dash.port(), "/api/experiments");
  json doc = GetJson(dash.port(), "/api/experiment?name=" + name);
  REQUIRE(doc["trial_rows"].size() == 10);
  for (const json& r : doc["trial_rows"])
    CHECK(r["message"] == tune::ValidUtf8(stored.at(r["number"].get<int>()).record.message));
  for (const auto& [n, t] : stored) {
    size_t bytes = 0;
    json trial = GetJson(dash.port(), "/api/trial?experiment=" + name + "&number=" + std::to_string(n), &bytes);
    INFO("trial " << n << " kind " << t.kind << ": " << bytes << " bytes");
    std::set<std::string> names;
    for (const json& r : trial["reports"])
      for (const auto& [key, v] : r["metrics"].items()) names.insert(key);
    CHECK(names == MetricNames(t.kind));
    REQUIRE(trial["logs"].size() == 1);
    std::string lines;
    for (const json& l : trial["logs"][0]["lines"]) lines += l.get<std::string>() + "\n";
    if (t.kind == "utf8") CHECK(lines.find("last: caf" + kFffd + " ") != std::string::npos);
    if (t.kind == "nul") CHECK(lines.find(std::string("before\0after", 12)) != std::string::npos);
    // A log tail is a bounded window of the log's end, not the 50 MB line.
    CHECK(bytes < (1u << 20));
  }

  // The page in Chromium, and the report file: no console error.
  const int ctrl_failed = NumberOf(stored, "ctrl", 3), big_failed = NumberOf(stored, "big", 3);
  const std::vector<int> pages = {utf8_failed, ctrl_failed, big_failed, NumberOf(stored, "noobj", 0)};
  const fs::path html = dir.path / "report.html";
  TuneOk("report --db " + db + " --experiment " + name + " --out " + Quote(html.string()));
  CHECK(fs::file_size(html) > 0);
  CHECK(fs::file_size(html) < 8u * (1 << 20));  // the logs' windows, not 100 MB of lines
#ifdef TUNE_BROWSER_PYTHON_FOUND
  for (const std::string& base : {dash.url(), "file://" + html.string()}) {
    INFO(base);
    json out = Browse(PageSteps(base, name, pages));
    CHECK(out["values"]["rows"] == 10);
    CHECK(out["values"]["log" + std::to_string(utf8_failed)].get<std::string>().find("caf" + kFffd) !=
          std::string::npos);
  }
#else
  WARN("chromium or python3-websocket missing: the page was not checked in a browser");
#endif
  CHECK(dash.child().Stop() != -1);
}
