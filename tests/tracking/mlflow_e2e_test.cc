// `"tracking": {"mlflow": ...}` and `tune export mlflow` against a real
// `mlflow server` on loopback (PyPI mlflow in the cached environment of
// `scripts/tracking-venv.sh mlflow`, an SQLite backend store in the test's
// temp dir), read back with MLflow's own Python client: one child run per
// trial under a parent run, params, every report's metric point with its
// step, statuses and tags as the database holds them; the server killed in
// the middle of the run and started again loses nothing; an export skips
// what is there.
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "storage/storage.h"
#include "tests/e2e/e2e_util.h"
#include "tracking/mlflow_keys.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string LastLine(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

std::string MlflowPython() {
  Output o = Sh(Quote(std::string(TUNE_SOURCE_DIR) + "/scripts/tracking-venv.sh") + " mlflow");
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
  a.sin_port = 0;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

// Whether GET /health on 127.0.0.1:`port` answers 200.
bool Healthy(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[64] = {};
      ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
      ok = n > 12 && std::string(buf, n).find(" 200") != std::string::npos;
    }
  }
  close(fd);
  return ok;
}

// `mlflow server` in its own process group (it starts workers), killed
// with the whole group by Kill() and the destructor.
class MlflowServer {
 public:
  MlflowServer(const std::string& python, const fs::path& dir, int port)
      : mlflow_((fs::path(python).parent_path() / "mlflow").string()), dir_(dir), port_(port) {}
  ~MlflowServer() { Kill(); }

  std::string uri() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Starts it and waits until /health answers.
  void Start() {
    REQUIRE(pid_ == 0);
    const std::string store = "sqlite:///" + (dir_ / "mlflow.db").string();
    const std::string artifacts = (dir_ / "artifacts").string();
    const std::string log = (dir_ / "server.log").string();
    // Its own temp dir (it leaves lock files there), inside the test's.
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
    // Its first start creates the store's tables; on a busy 2-core machine
    // that has taken two minutes.
    const auto deadline = Clock::now() + std::chrono::minutes(5);
    while (Clock::now() < deadline) {
      if (Healthy(port_)) return;
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = 0;
        FAIL("mlflow server exited: " << Sh("tail -20 " + Quote(log)).out);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    FAIL("mlflow server did not answer within 5 minutes: " << Sh("tail -20 " + Quote(log)).out);
  }

  void Kill() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    // Its workers are in the group too; wait until none is left.
    for (int i = 0; i < 100 && kill(-pid_, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pid_ = 0;
  }

 private:
  std::string mlflow_;
  fs::path dir_;
  int port_;
  pid_t pid_ = 0;
};

// What MLflow's Python client reads for MLflow experiment `name`.
json ReadMlflow(const std::string& python, const std::string& uri, const std::string& name) {
  Output o = Sh(Quote(python) + " " + Quote(std::string(TUNE_SOURCE_DIR) + "/tests/tracking/read_mlflow.py") + " " +
                Quote(uri) + " " + Quote(name));
  INFO(o.out);
  REQUIRE(o.code == 0);
  return json::parse(LastLine(o.out));
}

std::string RunName(int number) {
  char b[32];
  std::snprintf(b, sizeof b, "trial_%04d", number);
  return b;
}

std::string ParamText(const tune::ParamValue& v) { return tune::ParamToString(v); }

const char* StatusOf(tune::TrialState s) {
  switch (s) {
    case tune::TrialState::kCompleted:
      return "FINISHED";
    case tune::TrialState::kFailed:
      return "FAILED";
    default:
      return "KILLED";
  }
}

// Checks every trial's run in `got` (read_mlflow.py's "runs") against the
// database: params, metric histories (every counted report of every
// attempt, with step and time), state tags, status, parent.
void CheckRuns(tune::Storage& storage, const std::string& experiment, const json& got) {
  auto e = storage.FindExperiment(experiment);
  REQUIRE(e.ok());
  auto records = storage.ListTrialRecords(e->id);
  REQUIRE(records.ok());
  REQUIRE(got.contains(experiment));
  const json& parent = got[experiment];
  int started = 0;
  for (const auto& rec : *records) {
    if (!rec.started_at) continue;
    ++started;
    INFO("trial " << rec.trial.number << " " << tune::TrialStateName(rec.trial.state));
    REQUIRE(got.contains(RunName(rec.trial.number)));
    const json& run = got[RunName(rec.trial.number)];
    CHECK(run["tags"]["mlflow.parentRunId"] == parent["run_id"]);
    CHECK(run["tags"]["tune.trial_number"] == std::to_string(rec.trial.number));
    json params = json::object();
    for (const auto& [name, v] : rec.trial.params) params[name] = ParamText(v);
    CHECK(run["params"] == params);
    json metrics = json::object();
    auto reports = storage.ListTrialReports(rec.trial.id);
    REQUIRE(reports.ok());
    for (const auto& r : *reports) {
      if (!r.excluded.empty()) continue;
      for (const auto& [key, v] : r.report.values)
        metrics[key].push_back({r.report.step, v, std::llround(r.report.time * 1000)});
    }
    for (auto& [key, points] : metrics.items()) std::sort(points.begin(), points.end());
    CHECK(run["metrics"] == metrics);
    CHECK(run["status"] == StatusOf(rec.trial.state));
    CHECK(run["tags"]["tune.state"] == tune::TrialStateName(rec.trial.state));
    CHECK(run["tags"]["tune.attempt"] == std::to_string(rec.trial.attempt));
    if (rec.pruned_rung) {
      CHECK(run["tags"]["tune.pruned_rung"] == std::to_string(*rec.pruned_rung));
    } else {
      CHECK(!run["tags"].contains("tune.pruned_rung"));
    }
    if (rec.trial.state == tune::TrialState::kFailed) CHECK(run["tags"]["tune.error"] == rec.message);
    REQUIRE(rec.ended_at);
    CHECK(run["end_time"] == std::llround(*rec.ended_at * 1000));
  }
  CHECK(got.size() == static_cast<size_t>(started) + 1);  // one run per trial, and the parent
}

TEST_CASE("tracking.mlflow: every trial is a child run with its params, reports and status, across a server restart",
          "[tracking][e2e][mlflow]") {
  const std::string python = MlflowPython();
  TempDir dir;
  MlflowServer server(python, dir.path, FreePort());
  server.Start();

  const std::string bin = kBin + "/synthetic_trial";
  const fs::path go = dir.path / "go";
  // Trials 0 and 1 run at once; 2 to 5 wait for `go`, made once the server
  // was killed while 0 and 1 reported, and started again. Trial 1 fails
  // after its first reports (its attempt's reports stay in MLflow, as in
  // the database); ASHA prunes some of the rest.
  const std::string args = " --lr ${lr} --lora-r ${lora_r} --optimizer ${optimizer} --steps 40 --report-every 2 "
                           "--sleep-ms 150 --seed ${trial_id}";
  const std::string script = "if [ ${trial_id} -ge 2 ]; then while [ ! -e " + Quote(go.string()) +
                             " ]; do sleep 0.1; done; fi; "
                             "if [ ${trial_id} -eq 1 ]; then exec " + bin + args + " --fail-at 9; fi; exec " + bin +
                             args;
  json spec = {
      {"name", "mlf"},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-4}, {"high", 1e-1}}},
        {"lora_r", {{"type", "choice"}, {"values", {4, 8, 16}}}},
        {"optimizer", {{"type", "choice"}, {"values", {"adamw", "sgd"}}}}}},
      {"search", {{"algorithm", "random"}, {"seed", 3}}},
      {"scheduler", {{"type", "asha"}, {"max_t", 40}, {"grace_period", 8}, {"reduction_factor", 2}}},
      {"limits", {{"max_trials", 6}, {"max_concurrent_trials", 2}}},
      {"trial", {{"command", {"sh", "-c", script}}, {"timeout_s", 600}}},
      {"tracking",
       {{"mlflow", {{"tracking_uri", server.uri()}, {"experiment_name", "lora sweep"}, {"tags", {{"team", "nlp"}}}}}}},
  };
  fs::path spec_path = dir.path / "mlf.json";
  std::ofstream(spec_path) << spec.dump(2);
  const std::string db = (dir.path / "r.db").string();
  const fs::path log = dir.path / "run.log";

  // tune run in the background.
  pid_t tune_pid = fork();
  REQUIRE(tune_pid >= 0);
  if (tune_pid == 0) {
    execl("/bin/sh", "sh", "-c",
          (Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db) + " --quiet") + " > " +
           Quote(log.string()) + " 2>&1")
              .c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  struct Reap {
    pid_t pid;
    ~Reap() {
      if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
        kill(pid, SIGINT);
        waitpid(pid, nullptr, 0);
      }
    }
  } reap{tune_pid};

  auto count = [&](const char* sql) {
    Output o = Sh("sqlite3 " + Quote(db) + " " + Quote(sql));
    return o.code == 0 ? std::atoi(o.out.c_str()) : 0;
  };
  auto wait_for = [&](const char* sql, int at_least, const char* what) {
    const auto deadline = Clock::now() + std::chrono::minutes(3);
    while (count(sql) < at_least) {
      INFO(what << "; tune run says: " << Sh("cat " + Quote(log.string())).out);
      REQUIRE(Clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  };
  // Some reports reached MLflow; kill it while trials 0 and 1 go on.
  wait_for("SELECT count(*) FROM reports", 3, "the first reports");
  server.Kill();
  wait_for("SELECT count(*) FROM trials WHERE number < 2 AND ended_at IS NOT NULL", 2,
           "trials 0 and 1 ending while the server is down");
  server.Start();
  std::ofstream(go.string()) << "";
  int st = 0;
  REQUIRE(waitpid(tune_pid, &st, 0) == tune_pid);
  reap.pid = 0;
  const std::string out = Sh("cat " + Quote(log.string())).out;
  INFO(out);
  REQUIRE(WIFEXITED(st));
  REQUIRE(WEXITSTATUS(st) == 0);
  CHECK(out.find("not delivered") == std::string::npos);

  auto storage = tune::OpenSqliteStorage(db, false);
  REQUIRE(storage.ok());
  json got = ReadMlflow(python, server.uri(), "lora sweep");
  const json& runs = got["runs"];
  CheckRuns(**storage, "mlf", runs);
  auto records = (*storage)->ListTrialRecords((*storage)->FindExperiment("mlf")->id);
  int failed = 0, pruned = 0;
  for (const auto& rec : *records) {
    failed += rec.trial.state == tune::TrialState::kFailed;
    pruned += rec.trial.state == tune::TrialState::kPruned;
  }
  CHECK(records->size() == 6);
  CHECK(failed == 1);
  CHECK(pruned > 0);
  // The parent: the spec's tags, the best value and params.
  const json& parent = runs["mlf"];
  CHECK(parent["status"] == "FINISHED");
  CHECK(parent["tags"]["team"] == "nlp");
  Output best = Sh(Tune("best --db " + Quote(db) + " --format json"));
  json b = json::parse(best.out);
  CHECK(parent["tags"]["tune.best_trial"] == std::to_string(b["number"].get<int>()));
  REQUIRE(parent["metrics"].contains("best_eval_loss"));
  CHECK(parent["metrics"]["best_eval_loss"].back()[1] == b["value"]);
  for (const auto& [name, v] : b["params"].items()) {
    CHECK(parent["tags"]["best." + name] == (v.is_string() ? v.get<std::string>() : v.dump()));
  }
  // The run ids are in the database, for --resume.
  CHECK(count("SELECT count(*) FROM tracking_runs") == 7);

  // An export of the same experiment finds everything there.
  Output again = Sh(Tune("export mlflow --db " + Quote(db)));
  INFO(again.out);
  CHECK(again.code == 0);
  CHECK(again.out.find("it was all there") != std::string::npos);
  CHECK(ReadMlflow(python, server.uri(), "lora sweep") == got);

  // A server that is not there: the run finishes as usual and says what it
  // could not deliver; `tune export mlflow` sends all of it afterwards, and
  // a second export nothing.
  const int closed = FreePort();
  spec["name"] = "down";
  spec["tracking"] = {{"mlflow", {{"tracking_uri", "http://127.0.0.1:" + std::to_string(closed)}}}};
  spec["limits"] = {{"max_trials", 3}, {"max_concurrent_trials", 3}};
  spec["trial"]["command"] = {bin, "--lr", "${lr}", "--lora-r", "${lora_r}", "--optimizer", "${optimizer}", "--steps",
                              "12", "--report-every", "3", "--seed", "${trial_id}"};
  std::ofstream(spec_path) << spec.dump(2);
  const std::string db2 = (dir.path / "down.db").string();
  Output down = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db2) + " --quiet"));
  INFO(down.out);
  REQUIRE(down.code == 0);
  CHECK(down.out.find("tune: tracking: not delivered: MLflow at http://127.0.0.1:" + std::to_string(closed) +
                      ": 3 trial starts, ") != std::string::npos);
  CHECK(down.out.find("the experiment's end not delivered (nothing got through for 30 s after the run; last "
                      "error: MLflow experiments/get-by-name at http://127.0.0.1:" +
                      std::to_string(closed) + ": no answer (Connection error))") != std::string::npos);

  Output sent = Sh(Tune("export mlflow --db " + Quote(db2) + " --tracking-uri " + server.uri()));
  INFO(sent.out);
  REQUIRE(sent.code == 0);
  CHECK(sent.out.find("(3 trials) to MLflow experiment 'down'") != std::string::npos);
  CHECK(sent.out.find("4 runs created") != std::string::npos);
  auto storage2 = tune::OpenSqliteStorage(db2, false);
  REQUIRE(storage2.ok());
  json exported = ReadMlflow(python, server.uri(), "down");
  CheckRuns(**storage2, "down", exported["runs"]);
  CHECK(exported["runs"]["down"]["status"] == "FINISHED");
  Output nothing = Sh(Tune("export mlflow --db " + Quote(db2) + " --tracking-uri " + server.uri()));
  INFO(nothing.out);
  CHECK(nothing.code == 0);
  CHECK(nothing.out.find("0 runs created, 0 metric points, 0 params, 0 tags and 0 statuses sent (it was all there)") !=
        std::string::npos);
  CHECK(ReadMlflow(python, server.uri(), "down") == exported);

  // Interrupted (Ctrl-C) while trial 1 runs, then resumed: the same runs
  // go on (their ids come from the database), none is made twice.
  const fs::path go2 = dir.path / "go2";
  const std::string common = " --lr ${lr} --lora-r ${lora_r} --optimizer ${optimizer} --report-every 2 "
                             "--sleep-ms 150 --seed ${trial_id}";
  spec["name"] = "again";
  spec["tracking"] = {{"mlflow", {{"tracking_uri", server.uri()}}}};
  spec["limits"] = {{"max_trials", 4}, {"max_concurrent_trials", 2}};
  spec["trial"]["command"] = {
      "sh", "-c",
      "if [ ${trial_id} -ge 2 ]; then while [ ! -e " + Quote(go2.string()) + " ]; do sleep 0.1; done; fi; " +
          "if [ ${trial_id} -eq 0 ]; then exec " + bin + common + " --steps 6; fi; exec " + bin + common +
          " --steps 40"};
  std::ofstream(spec_path) << spec.dump(2);
  const std::string db3 = (dir.path / "again.db").string();
  pid_t first = fork();
  REQUIRE(first >= 0);
  if (first == 0) {
    execl("/bin/sh", "sh", "-c",
          ("exec " + Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db3) + " --quiet") + " > " +
           Quote(log.string()) + " 2>&1")
              .c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  reap.pid = first;
  auto count3 = [&](const char* sql) {
    Output o = Sh("sqlite3 " + Quote(db3) + " " + Quote(sql));
    return o.code == 0 ? std::atoi(o.out.c_str()) : 0;
  };
  const auto deadline = Clock::now() + std::chrono::minutes(3);
  while (count3("SELECT count(*) FROM trials WHERE number = 0 AND ended_at IS NOT NULL") < 1 ||
         count3("SELECT count(*) FROM reports r JOIN trials t ON t.id = r.trial_id WHERE t.number = 1") < 2) {
    REQUIRE(Clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(first, SIGINT);
  REQUIRE(waitpid(first, &st, 0) == first);
  reap.pid = 0;
  INFO(Sh("cat " + Quote(log.string())).out);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 130);
  const std::string ids = "SELECT trial_number || ' ' || run_id FROM tracking_runs ORDER BY trial_number";
  const std::string before = Sh("sqlite3 " + Quote(db3) + " " + Quote(ids)).out;
  CHECK(before.find("-1 ") == 0);  // the parent, trial 0 and 1 at least
  CHECK(count3("SELECT count(*) FROM tracking_runs") >= 3);
  CHECK(ReadMlflow(python, server.uri(), "again")["runs"]["again"]["status"] == "KILLED");

  std::ofstream(go2.string()) << "";
  Output resumed = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db3) + " --resume --quiet"));
  INFO(resumed.out);
  REQUIRE(resumed.code == 0);
  CHECK(resumed.out.find("not delivered") == std::string::npos);
  const std::string after = Sh("sqlite3 " + Quote(db3) + " " + Quote(ids)).out;
  CHECK(after.substr(0, before.size()) == before);  // the same ids, and more
  CHECK(count3("SELECT count(*) FROM tracking_runs") == 5);
  auto storage3 = tune::OpenSqliteStorage(db3, false);
  REQUIRE(storage3.ok());
  json resumed_runs = ReadMlflow(python, server.uri(), "again")["runs"];
  CheckRuns(**storage3, "again", resumed_runs);
  CHECK(resumed_runs["again"]["status"] == "FINISHED");
}

// tracking/mlflow_keys.cc's rule against MLflow's own validation (the
// cached environment's mlflow.utils.validation), key by key: for ASCII
// keys they agree; keys beyond ASCII tune passes to the server.
TEST_CASE("tracking.mlflow: the key rule agrees with MLflow's own validation", "[tracking][e2e][mlflow]") {
  const std::string python = MlflowPython();
  TempDir dir;
  std::vector<std::string> keys = {"loss", "eval/loss", "a b:c-d.e_f", "x..y", "a/..b", "acc(%)", "eval//loss",
                                   "/loss", "loss/", "./a", "a/./b", "a/../b", "..a", ".", "", "tab\tkey",
                                   "a,b", "a=b", "q?", "#1", "a\\b", "caf\xc3\xa9", "cost\xe2\x82\xac",
                                   std::string(250, 'k'), std::string(251, 'k')};
  std::ofstream(dir.path / "keys.json") << json(keys).dump();
  Output o = Sh(Quote(python) + " " + Quote(std::string(TUNE_SOURCE_DIR) + "/tests/tracking/mlflow_key_rules.py") +
                " " + Quote((dir.path / "keys.json").string()));
  INFO(o.out);
  REQUIRE(o.code == 0);
  json takes = json::parse(LastLine(o.out));
  REQUIRE(takes.size() == keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    INFO("key \"" << keys[i] << "\": " << takes[i].dump() << ", tune: " << tune::tracking::MlflowKeyProblem(keys[i]));
    const bool tune_takes = tune::tracking::MlflowKeyProblem(keys[i]).empty();
    const bool ascii = std::all_of(keys[i].begin(), keys[i].end(), [](char c) { return (c & 0x80) == 0; });
    // Beyond ASCII tune leaves the call to the server (it sends the key,
    // and names it if the server refuses it): "é" MLflow takes, "€" not.
    if (ascii) CHECK(tune_takes == takes[i]["param"].get<bool>()); else CHECK(tune_takes);
    // Metric names have no length check in MLflow's validation (its key
    // column holds 250); tune keeps to 250 for them too.
    if (keys[i].size() <= 250) CHECK(takes[i]["metric"] == takes[i]["param"]);
  }
}

TEST_CASE("tracking.mlflow: keys MLflow refuses are named once and the rest is logged, and credentials in the URI are "
          "stored nowhere",
          "[tracking][e2e][mlflow]") {
  const std::string python = MlflowPython();
  TempDir dir;
  MlflowServer server(python, dir.path, FreePort());
  server.Start();
  const std::string hostport = server.uri().substr(std::string("http://").size());
  // Each trial prints one JSON metric line: the objective, two keys tune
  // refuses itself, one MLflow's server refuses ("€" is not a letter) and
  // one it takes ("é" is).
  const std::string line =
      R"js(echo '{"loss": ${x}, "acc(%)": 1, "eval//loss": 2, "cost€": 3, "précision": 4}')js";
  json spec = {{"name", "keys"},
               {"objective", {{"metric", "loss"}, {"mode", "min"}}},
               {"parameters", {{"x", {{"type", "uniform"}, {"low", 0}, {"high", 1}}}}},
               {"search", {{"algorithm", "random"}, {"seed", 1}}},
               {"limits", {{"max_trials", 3}, {"max_concurrent_trials", 3}}},
               {"trial", {{"command", {"sh", "-c", line}}}},
               {"tracking", {{"mlflow", {{"tracking_uri", "http://alice:s3cret@" + hostport}}}}}};
  const fs::path spec_path = dir.path / "keys.json";
  std::ofstream(spec_path) << spec.dump(2);
  const std::string db = (dir.path / "k.db").string();
  Output run = Sh("MLFLOW_TRACKING_USERNAME= MLFLOW_TRACKING_PASSWORD= MLFLOW_TRACKING_TOKEN= " +
                  Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  CHECK(run.out.find("not delivered") == std::string::npos);
  const std::string named = "tune: MLflow at " + server.uri() + " does not take the metric key ";
  for (const std::string& key : {std::string("acc(%)"), std::string("eval//loss"), std::string("cost\xe2\x82\xac")}) {
    INFO(key);
    const size_t at = run.out.find(named + "\"" + key + "\"");
    CHECK(at != std::string::npos);
    CHECK(run.out.find(named + "\"" + key + "\"", at + 1) == std::string::npos);  // once, not per trial
  }
  CHECK(run.out.find("pr\xc3\xa9" "cision\"") == std::string::npos);

  json got = ReadMlflow(python, server.uri(), "keys");
  const json& runs = got["runs"];
  CHECK(runs.size() == 4);  // the parent and 3 trials
  for (int n = 0; n < 3; ++n) {
    INFO(RunName(n));
    REQUIRE(runs.contains(RunName(n)));
    const json& metrics = runs[RunName(n)]["metrics"];
    CHECK(metrics.size() == 2);
    CHECK(metrics.contains("loss"));
    CHECK(metrics.contains("pr\xc3\xa9" "cision"));
    CHECK(runs[RunName(n)]["status"] == "FINISHED");
  }
  // Nothing of the credentials in the output or the database.
  std::string bytes;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::ifstream f(db + suffix, std::ios::binary);
    bytes.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  for (const std::string& text : {run.out, bytes}) {
    CHECK(text.find("s3cret") == std::string::npos);
    CHECK(text.find("alice") == std::string::npos);
  }
  Output stored = Sh("sqlite3 " + Quote(db) + " 'SELECT spec_json FROM experiments'");
  CHECK(json::parse(stored.out)["tracking"]["mlflow"]["tracking_uri"] == server.uri());

  // On the same server (one start is the slow part): two objectives and a
  // constraint. Each trial's run gets every objective's final value under
  // its metric name at its last step, the constraint's value and
  // tune.feasible (tracking/final_metrics.h); `tune export mlflow` finds
  // them all there.
  const std::string mo_line = R"js(echo '{"step": 3, "loss": ${x}, "size": 2, "mem": 6}')js";
  json mo = {{"name", "mo"},
             {"objective", {{{"metric", "loss"}, {"mode", "min"}}, {{"metric", "size"}, {"mode", "min"}}}},
             {"constraints", {{{"metric", "mem"}, {"max", 5}}}},
             {"parameters", {{"x", {{"type", "uniform"}, {"low", 0}, {"high", 1}}}}},
             {"search", {{"algorithm", "random"}, {"seed", 1}}},
             {"limits", {{"max_trials", 2}, {"max_concurrent_trials", 2}}},
             {"trial", {{"command", {"sh", "-c", mo_line}}}},
             {"tracking", {{"mlflow", {{"tracking_uri", server.uri()}}}}}};
  const fs::path mo_path = dir.path / "mo.json";
  std::ofstream(mo_path) << mo.dump(2);
  const std::string mo_db = (dir.path / "mo.db").string();
  Output mo_run = Sh(Tune("run " + Quote(mo_path.string()) + " --db " + Quote(mo_db) + " --quiet"));
  INFO(mo_run.out);
  REQUIRE(mo_run.code == 0);
  const json mo_runs = ReadMlflow(python, server.uri(), "mo")["runs"];
  for (int n = 0; n < 2; ++n) {
    INFO(RunName(n));
    REQUIRE(mo_runs.contains(RunName(n)));
    const json& metrics = mo_runs[RunName(n)]["metrics"];
    INFO(metrics.dump());
    // [step, value, timestamp]: the report, then the final value at the same
    // step. MLflow keeps one row when both carry the same millisecond (its
    // metrics key includes the timestamp and value), so one row or two.
    for (const char* key : {"loss", "size"}) {
      INFO(key);
      REQUIRE((metrics[key].size() == 1 || metrics[key].size() == 2));
      for (const json& m : metrics[key]) {
        CHECK(m[0] == 3);
        CHECK(m[1] == metrics[key][0][1]);
      }
    }
    CHECK(metrics["tune.constraint.mem"] == json::array({json::array({3, 1.0, metrics["tune.constraint.mem"][0][2]})}));
    CHECK(metrics["tune.feasible"][0][1] == 0.0);
  }
  Output exported = Sh(Tune("export mlflow --db " + Quote(mo_db) + " --experiment mo"));
  INFO(exported.out);
  CHECK(exported.code == 0);
  CHECK(exported.out.find("(it was all there)") != std::string::npos);
}

}  // namespace
