// LocalBackend with real child processes: synthetic_trial and /bin/sh
// scripts. Every test checks processes through /proc, not through the
// backend's own bookkeeping.
#include "trial_runner/local_backend.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/common/temp_dir.h"

namespace tune {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kSynthetic = std::string(TUNE_BIN_DIR) + "/synthetic_trial";

using testing::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

LocalBackend::Options SmallMachine(double cpus = 4) {
  LocalBackend::Options o;
  o.cpu_slots = cpus;
  o.gpu_ids = std::vector<int>{};
  o.failure_grace = 2000ms;
  o.shutdown_grace = 2000ms;
  return o;
}

LaunchSpec Spec(TrialId id, const std::string& dir, std::vector<std::string> argv,
                int workers = 1) {
  LaunchSpec s;
  s.trial_id = id;
  s.trial_number = static_cast<int>(id);
  s.experiment = "test";
  s.argv = std::move(argv);
  s.trial_dir = dir;
  s.working_dir = dir;
  s.workers = workers;
  s.cpu_per_worker = 1;
  return s;
}

std::vector<std::string> Sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

struct Outcome {
  RunStatus status;
  std::vector<MetricReport> reports;
};

// Polls until the attempt's state is final (fails the test after 60 s).
Outcome WaitDone(LocalBackend& b, TrialId id) {
  Outcome out;
  auto give_up = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    auto reports = b.Poll(id);
    REQUIRE(reports.ok());
    out.reports.insert(out.reports.end(), reports->begin(), reports->end());
    auto st = b.State(id);
    REQUIRE(st.ok());
    if (st->state == RunState::kSucceeded || st->state == RunState::kFailed) {
      out.status = *st;
      // Final state means every report was already returned.
      auto rest = b.Poll(id);
      REQUIRE(rest.ok());
      CHECK(rest->empty());
      return out;
    }
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    b.WaitForEvent(1000ms);
  }
}

// Waits (up to 30 s) until `path` exists and is non-empty; returns it.
std::string WaitForFile(const std::string& path) {
  auto give_up = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    std::string s = ReadFile(path);
    if (!s.empty() && s.back() == '\n') return s;
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    std::this_thread::sleep_for(5ms);
  }
}

// Live (non-zombie) processes whose process group is `pgid`, from /proc.
std::vector<pid_t> LiveInGroup(pid_t pgid) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  REQUIRE(d != nullptr);
  while (dirent* e = ::readdir(d)) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream in(stat.substr(paren + 2));
    char state = 0;
    pid_t ppid = 0, pgrp = 0;
    in >> state >> ppid >> pgrp;
    if (pgrp == pgid && state != 'Z' && state != 'X') out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

bool ProcessLive(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return false;
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

// Waits up to 10 s for a condition that should become true promptly.
template <typename F>
bool Eventually(F f) {
  auto give_up = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < give_up) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return f();
}

std::vector<pid_t> Pgids(const RunStatus& s) {
  std::vector<pid_t> out;
  std::string loc = s.location;
  REQUIRE(loc.rfind("local:pgid ", 0) == 0);
  std::istringstream in(loc.substr(11));
  std::string tok;
  while (std::getline(in, tok, ',')) out.push_back(std::stoi(tok));
  return out;
}

// Every line of `log` that starts with `prefix`, without it.
std::string EnvValue(const std::string& log, const std::string& name) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "=", 0) == 0) return line.substr(name.size() + 1);
  }
  return "<unset>";
}

TEST_CASE("synthetic_trial reports are parsed from rank 0 and logged", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  std::string dir = tmp.Sub("t1");
  REQUIRE(b.Launch(Spec(1, dir, {kSynthetic, "--steps", "30", "--report-every", "10"})).ok());
  Outcome o = WaitDone(b, 1);
  CHECK(o.status.state == RunState::kSucceeded);
  CHECK(o.status.message.empty());
  REQUIRE(o.reports.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(o.reports[i].step == static_cast<int64_t>(10 * (i + 1)));
    CHECK(o.reports[i].values.count("eval_loss") == 1);
    CHECK(o.reports[i].values.count("train_loss") == 1);
    CHECK(o.reports[i].time > 1.6e9);
  }
  std::string log = ReadFile(dir + "/rank_0.log");
  CHECK(log.find("synthetic_trial: learning rate") != std::string::npos);
  CHECK(log.find("step=30 train_loss=") != std::string::npos);
}

TEST_CASE("JSON reports, time_attr and report counting", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  std::string dir = tmp.Sub("t");
  LaunchSpec json = Spec(1, dir, {kSynthetic, "--steps", "4", "--report-every", "2", "--json"});
  REQUIRE(b.Launch(json).ok());
  Outcome o = WaitDone(b, 1);
  REQUIRE(o.reports.size() == 2);
  CHECK(o.reports[0].step == 2);
  CHECK(o.reports[1].step == 4);

  // time_attr "epoch": taken when present (rounded), else the report count.
  LaunchSpec s =
      Spec(2, tmp.Sub("u"),
           Sh("echo loss=1; echo 'epoch=6.6 loss=2'; echo ordinary output; echo loss=3"));
  s.time_attr = "epoch";
  REQUIRE(b.Launch(s).ok());
  o = WaitDone(b, 2);
  REQUIRE(o.reports.size() == 3);
  CHECK(o.reports[0].step == 1);
  CHECK(o.reports[1].step == 7);
  CHECK(o.reports[2].step == 3);
  CHECK(o.reports[2].values.at("loss") == 3);
}

TEST_CASE("two workers: only rank 0's metrics count, both logs exist", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  std::string dir = tmp.Sub("t");
  REQUIRE(b.Launch(Spec(1, dir, Sh("echo step=1 rank=$RANK; echo step=2 rank=$RANK >&2"), 2)).ok());
  Outcome o = WaitDone(b, 1);
  CHECK(o.status.state == RunState::kSucceeded);
  REQUIRE(o.reports.size() == 2);
  for (const MetricReport& r : o.reports) CHECK(r.values.at("rank") == 0);
  CHECK(ReadFile(dir + "/rank_0.log").find("step=2 rank=0") != std::string::npos);
  std::string log1 = ReadFile(dir + "/rank_1.log");
  CHECK(log1.find("step=1 rank=1") != std::string::npos);
  CHECK(log1.find("step=2 rank=1") != std::string::npos);  // stderr too
  CHECK(Pgids(o.status).size() == 2);
}

TEST_CASE("workers get the torchrun environment", "[local_backend]") {
  TempDir tmp;
  LocalBackend::Options opts = SmallMachine();
  opts.gpu_ids = std::vector<int>{0, 1, 2};
  LocalBackend b(opts);
  std::string dir = tmp.Sub("t");
  LaunchSpec s = Spec(1, dir, {"/usr/bin/env"}, 2);
  s.env = {{"TUNE_TRIAL_ID", "1"}, {"OMP_NUM_THREADS", "1"}};
  s.gpu_per_worker = 1;
  REQUIRE(b.Launch(s).ok());
  CHECK(WaitDone(b, 1).status.state == RunState::kSucceeded);
  std::string log0 = ReadFile(dir + "/rank_0.log"), log1 = ReadFile(dir + "/rank_1.log");
  CHECK(EnvValue(log0, "RANK") == "0");
  CHECK(EnvValue(log1, "RANK") == "1");
  CHECK(EnvValue(log0, "LOCAL_RANK") == "0");
  CHECK(EnvValue(log1, "LOCAL_RANK") == "1");
  CHECK(EnvValue(log1, "WORLD_SIZE") == "2");
  CHECK(EnvValue(log1, "LOCAL_WORLD_SIZE") == "2");
  CHECK(EnvValue(log0, "MASTER_ADDR") == "127.0.0.1");
  std::string port = EnvValue(log0, "MASTER_PORT");
  CHECK(std::stoi(port) > 0);
  CHECK(EnvValue(log1, "MASTER_PORT") == port);
  CHECK(EnvValue(log0, "CUDA_VISIBLE_DEVICES") == "0");
  CHECK(EnvValue(log1, "CUDA_VISIBLE_DEVICES") == "1");
  CHECK(EnvValue(log1, "OMP_NUM_THREADS") == "1");
  CHECK(EnvValue(log1, "TUNE_TRIAL_ID") == "1");
  CHECK(EnvValue(log0, "PATH") != "<unset>");  // the tuner's environment is inherited

  // No GPU asked for while GPUs exist: an empty CUDA_VISIBLE_DEVICES.
  LaunchSpec cpu = Spec(2, tmp.Sub("u"), {"/usr/bin/env"});
  REQUIRE(b.Launch(cpu).ok());
  CHECK(WaitDone(b, 2).status.state == RunState::kSucceeded);
  CHECK(EnvValue(ReadFile(tmp.path.string() + "/u/rank_0.log"), "CUDA_VISIBLE_DEVICES").empty());
}

TEST_CASE("concurrent trials get distinct ports that stay reserved", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine(8));
  const int kTrials = 4;
  for (int i = 0; i < kTrials; ++i) {
    std::string dir = tmp.Sub("t" + std::to_string(i));
    REQUIRE(b.Launch(Spec(i, dir, Sh("echo $MASTER_PORT > port; exec sleep 30"), 2)).ok());
  }
  std::set<std::string> ports;
  for (int i = 0; i < kTrials; ++i) {
    ports.insert(WaitForFile(tmp.path.string() + "/t" + std::to_string(i) + "/port"));
  }
  CHECK(ports.size() == static_cast<size_t>(kTrials));
  for (int i = 0; i < kTrials; ++i) REQUIRE(b.Kill(i, 1000ms).ok());
  for (int i = 0; i < kTrials; ++i) {
    Outcome o = WaitDone(b, i);
    CHECK(o.status.state == RunState::kFailed);
    CHECK(o.status.message == "killed");
  }
}

TEST_CASE("a failing rank fails the trial and stops the others", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  std::string dir = tmp.Sub("t");
  // Rank 0 would run for 100 s; rank 1 fails once rank 0 is up.
  REQUIRE(
      b.Launch(Spec(1, dir,
                    Sh("if [ $RANK = 1 ]; then while [ ! -s up ]; do sleep 0.01; done; exit 3; fi;"
                       " echo $$ > up; exec sleep 100"),
                    2))
          .ok());
  std::string pid0 = WaitForFile(dir + "/up");
  Outcome o = WaitDone(b, 1);
  CHECK(o.status.state == RunState::kFailed);
  CHECK(o.status.message == "rank 1 exited with code 3");
  CHECK(Eventually([&] { return !ProcessLive(std::stoi(pid0)); }));
  for (pid_t g : Pgids(o.status)) CHECK(Eventually([&] { return LiveInGroup(g).empty(); }));
}

TEST_CASE("a rank killed by a signal is named with the signal", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  REQUIRE(b.Launch(Spec(1, tmp.Sub("t"), Sh("kill -USR2 $$; sleep 5"))).ok());
  Outcome o = WaitDone(b, 1);
  CHECK(o.status.state == RunState::kFailed);
  CHECK(o.status.message ==
        "rank 0 was killed by signal " + std::to_string(SIGUSR2) + " (SIGUSR2)");

  REQUIRE(b.Launch(Spec(2, tmp.Sub("u"),
                        {kSynthetic, "--steps", "5", "--fail-at", "3", "--exit-code", "7"}))
              .ok());
  o = WaitDone(b, 2);
  CHECK(o.status.message == "rank 0 exited with code 7: \"synthetic_trial: failing at step 3 as asked\" (last line of " +
                               tmp.path.string() + "/u/rank_0.log)");
  CHECK(ReadFile(tmp.path.string() + "/u/rank_0.log").find("failing at step 3") != std::string::npos);
}

TEST_CASE("timeout_s kills the attempt", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  std::string dir = tmp.Sub("t");
  LaunchSpec s = Spec(1, dir, Sh("echo $$ > pid; echo step=1 loss=1; exec sleep 100"), 2);
  s.timeout_s = 0.5;
  REQUIRE(b.Launch(s).ok());
  Outcome o = WaitDone(b, 1);
  CHECK(o.status.state == RunState::kFailed);
  CHECK(o.status.message == "timed out after 0.5 s");
  REQUIRE(o.reports.size() == 1);
  for (pid_t g : Pgids(o.status)) CHECK(Eventually([&] { return LiveInGroup(g).empty(); }));
}

TEST_CASE("Kill stops a running trial, does not block, and is idempotent", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  std::string dir = tmp.Sub("t");
  REQUIRE(
      b.Launch(Spec(1, dir,
                    {kSynthetic, "--steps", "100000", "--report-every", "1", "--sleep-ms", "10"}))
          .ok());
  // Wait for the first report, as a scheduler decision would.
  std::vector<MetricReport> seen;
  while (seen.empty()) {
    b.WaitForEvent(1000ms);
    auto r = b.Poll(1);
    REQUIRE(r.ok());
    seen = *r;
  }
  REQUIRE(b.Kill(1).ok());
  REQUIRE(b.Kill(1).ok());
  Outcome o = WaitDone(b, 1);
  CHECK(o.status.state == RunState::kFailed);
  CHECK(o.status.message == "killed");
  for (pid_t g : Pgids(o.status)) CHECK(Eventually([&] { return LiveInGroup(g).empty(); }));
  CHECK(b.Kill(1).ok());  // after the end too
  CHECK(b.Kill(99).IsNotFound());

  // A worker that ignores SIGTERM: Kill returns at once, SIGKILL follows
  // after the grace period.
  std::string dir2 = tmp.Sub("u");
  REQUIRE(
      b.Launch(Spec(2, dir2, Sh("trap '' TERM; echo $$ > pid; sleep 100 & wait; sleep 100"))).ok());
  pid_t pid = std::stoi(WaitForFile(dir2 + "/pid"));
  REQUIRE(b.Kill(2, 3000ms).ok());
  auto st = b.State(2);
  REQUIRE(st.ok());
  CHECK(st->state == RunState::kRunning);  // still in its grace period
  CHECK(ProcessLive(pid));
  o = WaitDone(b, 2);
  CHECK(o.status.message == "killed");
  CHECK(Eventually([&] { return !ProcessLive(pid); }));
}

TEST_CASE("Kill leaves no process of the worker's group, grandchildren included",
          "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  std::string dir = tmp.Sub("t");
  REQUIRE(b.Launch(Spec(1, dir, Sh("sleep 100 & echo $! > grandchild; wait"))).ok());
  pid_t grandchild = std::stoi(WaitForFile(dir + "/grandchild"));
  auto st = b.State(1);
  REQUIRE(st.ok());
  pid_t pgid = Pgids(*st)[0];
  CHECK(LiveInGroup(pgid).size() >= 3);  // supervisor, sh, sleep
  REQUIRE(b.Kill(1, 5000ms).ok());
  WaitDone(b, 1);
  // SIGKILL is delivered asynchronously: allow the kernel a moment.
  CHECK(Eventually([&] { return LiveInGroup(pgid).empty(); }));
  CHECK(Eventually([&] { return !ProcessLive(grandchild); }));

  // A worker that exits 0 but leaves a background process: it goes too.
  std::string dir2 = tmp.Sub("u");
  REQUIRE(b.Launch(Spec(2, dir2, Sh("sleep 100 >/dev/null 2>&1 & echo $! > grandchild"))).ok());
  Outcome o = WaitDone(b, 2);
  CHECK(o.status.state == RunState::kSucceeded);
  pid_t left = std::stoi(ReadFile(dir2 + "/grandchild"));
  CHECK(Eventually([&] { return !ProcessLive(left); }));
  CHECK(Eventually([&] { return LiveInGroup(Pgids(o.status)[0]).empty(); }));
}

TEST_CASE("no orphans when the tuner is SIGKILLed", "[local_backend]") {
  TempDir tmp;
  std::string dir = tmp.Sub("t");
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  pid_t tuner = ::fork();
  REQUIRE(tuner >= 0);
  if (tuner == 0) {
    // The "tuner": starts a sleeper with a grandchild, reports its group,
    // then waits to be killed.
    ::close(pipe_fds[0]);
    LocalBackend b(SmallMachine());
    Status st = b.Launch(Spec(1, dir, Sh("sleep 100 & echo $! > grandchild; echo $$ > pid; wait")));
    if (!st.ok()) ::_exit(1);
    std::string loc = b.State(1)->location + "\n";
    if (::write(pipe_fds[1], loc.data(), loc.size()) < 0) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(pipe_fds[1]);
  char buf[128] = {};
  ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf) - 1);
  ::close(pipe_fds[0]);
  REQUIRE(n > 0);
  RunStatus s;
  s.location = std::string(buf, static_cast<size_t>(n - 1));
  pid_t pgid = Pgids(s)[0];
  pid_t worker = std::stoi(WaitForFile(dir + "/pid"));
  pid_t grandchild = std::stoi(WaitForFile(dir + "/grandchild"));
  REQUIRE(ProcessLive(worker));
  REQUIRE(ProcessLive(grandchild));

  REQUIRE(::kill(tuner, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(tuner, &status, 0) == tuner);
  CHECK(Eventually([&] { return LiveInGroup(pgid).empty(); }));
  CHECK_FALSE(ProcessLive(worker));
  CHECK_FALSE(ProcessLive(grandchild));
}

// A trial script that starts a daemon in a session of its own (setsid),
// which forks once more; both write their pids to files in the trial dir.
std::string SetsidDaemon() {
  return "setsid sh -c '(sleep 100 >/dev/null 2>&1 & echo $! > daemon2.tmp; mv daemon2.tmp daemon2); "
         "echo $$ > daemon.tmp; mv daemon.tmp daemon; exec sleep 100' >/dev/null 2>&1 & ";
}

// Session id of a live process, from /proc (-1 if it is gone).
pid_t SessionOf(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream in(stat.substr(paren + 2));
  char state = 0;
  pid_t ppid = 0, pgrp = 0, session = 0;
  in >> state >> ppid >> pgrp >> session;
  return session;
}

TEST_CASE("a descendant that calls setsid does not outlive its attempt", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  SECTION("the worker exits 0 and leaves the daemon behind") {
    std::string dir = tmp.Sub("exit");
    REQUIRE(b.Launch(Spec(1, dir, Sh(SetsidDaemon() + "while [ ! -e daemon2 ] || [ ! -e daemon ]; do sleep 0.01; done; "
                                                      "echo step=1 loss=1"))).ok());
    pid_t daemon = std::stoi(WaitForFile(dir + "/daemon"));
    pid_t daemon2 = std::stoi(WaitForFile(dir + "/daemon2"));
    Outcome o = WaitDone(b, 1);
    CHECK(o.status.state == RunState::kSucceeded);
    CHECK(o.reports.size() == 1);
    CHECK(Eventually([&] { return !ProcessLive(daemon) && !ProcessLive(daemon2); }));
  }
  SECTION("Kill while the worker runs") {
    std::string dir = tmp.Sub("kill");
    REQUIRE(b.Launch(Spec(2, dir, Sh(SetsidDaemon() + "sleep 100"))).ok());
    pid_t daemon = std::stoi(WaitForFile(dir + "/daemon"));
    pid_t daemon2 = std::stoi(WaitForFile(dir + "/daemon2"));
    REQUIRE(ProcessLive(daemon));
    CHECK(SessionOf(daemon) == daemon);  // it really left the trial's session and group
    REQUIRE(b.Kill(2, 200ms).ok());
    Outcome o = WaitDone(b, 2);
    CHECK(o.status.state == RunState::kFailed);
    CHECK(Eventually([&] { return !ProcessLive(daemon) && !ProcessLive(daemon2); }));
  }
  SECTION("a worker that ignores SIGTERM, killed after its grace period") {
    std::string dir = tmp.Sub("term");
    REQUIRE(b.Launch(Spec(3, dir, Sh("trap '' TERM; " + SetsidDaemon() + "while :; do sleep 0.05; done"))).ok());
    pid_t daemon = std::stoi(WaitForFile(dir + "/daemon"));
    REQUIRE(b.Kill(3, 300ms).ok());
    Outcome o = WaitDone(b, 3);
    CHECK(o.status.state == RunState::kFailed);
    CHECK(Eventually([&] { return !ProcessLive(daemon); }));
    CHECK(LiveInGroup(Pgids(o.status)[0]).empty());
  }
}

TEST_CASE("a setsid daemon does not outlive a SIGKILLed tuner", "[local_backend]") {
  TempDir tmp;
  std::string dir = tmp.Sub("t");
  pid_t tuner = ::fork();
  REQUIRE(tuner >= 0);
  if (tuner == 0) {
    LocalBackend b(SmallMachine());
    if (!b.Launch(Spec(1, dir, Sh(SetsidDaemon() + "sleep 100"))).ok()) ::_exit(1);
    for (;;) ::pause();
  }
  pid_t daemon = std::stoi(WaitForFile(dir + "/daemon"));
  pid_t daemon2 = std::stoi(WaitForFile(dir + "/daemon2"));
  REQUIRE(ProcessLive(daemon));
  REQUIRE(::kill(tuner, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(tuner, &status, 0) == tuner);
  CHECK(Eventually([&] { return !ProcessLive(daemon) && !ProcessLive(daemon2); }));
}

TEST_CASE("Shutdown kills everything and refuses new launches", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  std::vector<std::string> dirs;
  for (int i = 0; i < 2; ++i) {
    dirs.push_back(tmp.Sub("t" + std::to_string(i)));
    REQUIRE(b.Launch(Spec(i, dirs.back(), Sh("echo $$ > pid; exec sleep 100"), 2)).ok());
  }
  std::vector<pid_t> groups;
  for (int i = 0; i < 2; ++i) {
    WaitForFile(dirs[i] + "/pid");
    auto st = b.State(i);
    REQUIRE(st.ok());
    for (pid_t g : Pgids(*st)) groups.push_back(g);
  }
  b.Shutdown();
  for (pid_t g : groups) CHECK(Eventually([&] { return LiveInGroup(g).empty(); }));
  for (int i = 0; i < 2; ++i) {
    auto st = b.State(i);
    REQUIRE(st.ok());
    CHECK(st->state == RunState::kFailed);
  }
  b.Shutdown();  // idempotent
  Status st = b.Launch(Spec(5, tmp.Sub("late"), {"/bin/true"}));
  CHECK(st.code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("resource pool limits: CanLaunch, busy and impossible requests", "[local_backend]") {
  TempDir tmp;
  LocalBackend::Options opts = SmallMachine(2);
  opts.gpu_ids = std::vector<int>{0, 1};
  LocalBackend b(opts);
  LaunchSpec holder = Spec(1, tmp.Sub("a"), Sh("exec sleep 100"), 2);  // 2 CPU slots
  LaunchSpec other = Spec(2, tmp.Sub("b"), {"/bin/true"});
  LaunchSpec half = other;
  half.cpu_per_worker = 0.5;
  CHECK(b.CanLaunch(holder));
  REQUIRE(b.Launch(holder).ok());
  CHECK_FALSE(b.CanLaunch(other));
  CHECK_FALSE(b.CanLaunch(half));
  Status busy = b.Launch(other);
  CHECK(busy.code() == StatusCode::kUnavailable);
  CHECK(b.Launch(holder).code() == StatusCode::kFailedPrecondition);  // still running
  // Kill hands the slots back once the workers have exited, also when one
  // takes its whole grace period (SIGKILL then): nothing oversubscribes.
  LaunchSpec ignores_term = Spec(7, tmp.Sub("s"), Sh("trap '' TERM; echo $$ > pid; exec sleep 100"));
  REQUIRE(b.Kill(1, 1000ms).ok());
  WaitDone(b, 1);
  CHECK(b.CanLaunch(other));
  CHECK(b.CanLaunch(half));
  ignores_term.cpu_per_worker = 2;
  REQUIRE(b.Launch(ignores_term).ok());
  WaitForFile(tmp.path.string() + "/s/pid");
  CHECK_FALSE(b.CanLaunch(other));
  REQUIRE(b.Kill(7, 1500ms).ok());
  std::this_thread::sleep_for(500ms);
  CHECK(b.State(7)->state == RunState::kRunning);  // still exiting
  CHECK_FALSE(b.CanLaunch(other));                  // and still holding its slots
  WaitDone(b, 7);
  CHECK(b.CanLaunch(ignores_term));

  // Fractional slots add up: four half-slot workers fill two slots.
  LaunchSpec quarter = Spec(3, tmp.Sub("c"), Sh("exec sleep 100"), 4);
  quarter.cpu_per_worker = 0.5;
  REQUIRE(b.Launch(quarter).ok());
  CHECK_FALSE(b.CanLaunch(half));
  REQUIRE(b.Kill(3, 1000ms).ok());
  WaitDone(b, 3);

  // GPUs: two workers x one GPU take both devices.
  LaunchSpec gpu = Spec(4, tmp.Sub("d"), Sh("exec sleep 100"), 2);
  gpu.cpu_per_worker = 0;
  gpu.gpu_per_worker = 1;
  REQUIRE(b.Launch(gpu).ok());
  LaunchSpec gpu1 = other;
  gpu1.cpu_per_worker = 0;
  gpu1.gpu_per_worker = 1;
  CHECK_FALSE(b.CanLaunch(gpu1));
  CHECK(b.CanLaunch(other));
  REQUIRE(b.Kill(4, 1000ms).ok());
  WaitDone(b, 4);
  CHECK(b.CanLaunch(gpu1));

  // Bigger than the whole machine.
  LaunchSpec huge = Spec(5, tmp.Sub("e"), {"/bin/true"}, 2);
  huge.cpu_per_worker = 2;
  CHECK_FALSE(b.CanLaunch(huge));
  Status st = b.Launch(huge);
  CHECK(st.IsInvalidArgument());
  CHECK(st.message() == "a trial needs 4 CPU slots (2 workers x 2) but the machine has 2");
  LaunchSpec many_gpus = Spec(6, tmp.Sub("f"), {"/bin/true"}, 1);
  many_gpus.gpu_per_worker = 3;
  st = b.Launch(many_gpus);
  CHECK(st.IsInvalidArgument());
  CHECK(st.message() == "a trial needs 3 GPUs (1 workers x 3) but the machine has 2");
  CHECK(b.CheckFeasible(many_gpus).IsInvalidArgument());
}

TEST_CASE("argv[0] resolution, bad commands and appended retry logs", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  std::string dir = tmp.Sub("t");
  std::string work = tmp.Sub("work");
  fs::create_directories(work + "/bin");
  {
    std::ofstream script(work + "/bin/run.sh");
    script << "#!/bin/sh\necho \"attempt output $1 in $(pwd)\"\necho loss=$1\nexit $2\n";
  }
  fs::permissions(work + "/bin/run.sh", fs::perms::owner_all);
  LaunchSpec s = Spec(1, dir, {"bin/run.sh", "0.5", "4"});
  s.working_dir = work;
  REQUIRE(b.Launch(s).ok());
  Outcome o = WaitDone(b, 1);
  // The failure quotes the last line the attempt wrote to the rank's log.
  CHECK(o.status.message == "rank 0 exited with code 4: \"loss=0.5\" (last line of " + dir + "/rank_0.log)");
  REQUIRE(o.reports.size() == 1);
  CHECK(o.reports[0].values.at("loss") == 0.5);

  // Retry: attempt 1 appends after a separator; nothing is lost.
  s.attempt = 1;
  s.argv = {"bin/run.sh", "0.25", "0"};
  REQUIRE(b.Launch(s).ok());
  o = WaitDone(b, 1);
  CHECK(o.status.state == RunState::kSucceeded);
  REQUIRE(o.reports.size() == 1);
  CHECK(o.reports[0].values.at("loss") == 0.25);
  std::string log = ReadFile(dir + "/rank_0.log");
  size_t first = log.find("attempt output 0.5 in " + work);
  size_t sep = log.find("----- tune: trial 1 attempt 1 rank 0 started");
  size_t second = log.find("attempt output 0.25");
  CHECK(first != std::string::npos);
  CHECK(sep != std::string::npos);
  CHECK(second != std::string::npos);
  CHECK(first < sep);
  CHECK(sep < second);

  // An attempt that writes nothing quotes nothing (not an earlier attempt's line).
  s.attempt = 2;
  s.argv = {"/bin/sh", "-c", "exit 5"};
  REQUIRE(b.Launch(s).ok());
  CHECK(WaitDone(b, 1).status.message == "rank 0 exited with code 5");

  // Searched in PATH (the trial's PATH wins over the tuner's).
  LaunchSpec p = Spec(2, tmp.Sub("p"), {"run.sh", "1", "0"});
  p.env["PATH"] = work + "/bin:/usr/bin:/bin";
  REQUIRE(b.Launch(p).ok());
  CHECK(WaitDone(b, 2).status.state == RunState::kSucceeded);

  Status missing = b.Launch(Spec(3, tmp.Sub("m"), {"no-such-program-xyz"}));
  CHECK(missing.IsNotFound());
  CHECK(missing.message().find("no-such-program-xyz") != std::string::npos);
  CHECK(b.Launch(Spec(4, tmp.Sub("n"), {"./missing.sh"})).IsNotFound());
  CHECK(b.Launch(Spec(5, tmp.Sub("e"), {})).IsInvalidArgument());
  LaunchSpec nowhere = Spec(7, tmp.Sub("w"), {"/bin/true"});
  nowhere.working_dir = tmp.path.string() + "/no/such/dir";
  CHECK(b.Launch(nowhere).IsNotFound());
  CHECK(b.Poll(3).status().IsNotFound());
  // A failed Launch holds nothing.
  CHECK(b.CanLaunch(Spec(6, dir, {"/bin/true"}, 4)));
}

TEST_CASE("many short trials in parallel all finish with their reports", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine(4));
  const int kTotal = 40;
  int launched = 0, finished = 0;
  std::set<int> running;
  std::map<int, std::vector<int64_t>> steps;
  while (finished < kTotal) {
    while (launched < kTotal) {
      LaunchSpec s = Spec(launched, tmp.Sub("t" + std::to_string(launched)),
                          {kSynthetic, "--steps", "3", "--report-every", "1"});
      if (!b.CanLaunch(s)) break;
      REQUIRE(b.Launch(s).ok());
      running.insert(launched++);
    }
    b.WaitForEvent(1000ms);
    for (auto it = running.begin(); it != running.end();) {
      auto r = b.Poll(*it);
      REQUIRE(r.ok());
      for (const MetricReport& m : *r) steps[*it].push_back(m.step);
      auto st = b.State(*it);
      REQUIRE(st.ok());
      if (st->state == RunState::kSucceeded) {
        ++finished;
        it = running.erase(it);
      } else {
        REQUIRE(st->state == RunState::kRunning);
        ++it;
      }
    }
  }
  CHECK(finished == kTotal);
  REQUIRE(steps.size() == static_cast<size_t>(kTotal));
  for (const auto& [id, s] : steps) CHECK(s == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE("an exception in the monitor thread ends the attempts and is an error and not std::terminate",
          "[local_backend]") {
  TempDir tmp;
  std::atomic<bool> fail{false};
  LocalBackend::Options o = SmallMachine();
  // What std::bad_alloc or a library's exception would do there.
  o.monitor_pass_hook = [&] {
    if (fail) throw std::runtime_error("injected failure");
  };
  LocalBackend b(o);
  const std::string dir = tmp.Sub("t0");
  // Prints a line every 50 ms: each one wakes the monitor thread.
  REQUIRE(b.Launch(Spec(0, dir, Sh("echo $$ > pid; while :; do echo loss=1; sleep 0.05; done"), 2)).ok());
  WaitForFile(dir + "/pid");
  auto running = b.State(0);
  REQUIRE(running.ok());
  const std::vector<pid_t> groups = Pgids(*running);
  REQUIRE(groups.size() == 2);

  fail = true;
  // Every call that needs the monitor says so, naming the error.
  CHECK(Eventually([&] { return !b.Poll(0).ok(); }));
  auto polled = b.Poll(0);
  CHECK(polled.status().code() == StatusCode::kInternal);
  CHECK(polled.status().message() ==
        "the local backend stopped watching its trials (std::runtime_error: injected failure)");
  CHECK(b.State(0).status().code() == StatusCode::kInternal);
  // Both ranks' processes are gone: nothing is left unwatched.
  for (pid_t g : groups) CHECK(Eventually([&] { return LiveInGroup(g).empty(); }));
  Status late = b.Launch(Spec(1, tmp.Sub("t1"), {"/bin/true"}));
  CHECK(late.code() == StatusCode::kInternal);
  CHECK(late.message().find("injected failure") != std::string::npos);
  CHECK(b.Kill(0).ok());
  b.Shutdown();  // joins the ended thread
  b.Shutdown();
}

TEST_CASE("a line over 1 MiB is logged whole but not parsed and other bytes pass as printed", "[local_backend]") {
  TempDir tmp;
  LocalBackend b(SmallMachine());
  const std::string dir = tmp.Sub("t0");
  const size_t kMax = 1 << 20;
  std::string printed = "loss=1 " + std::string(kMax - 7, 'x') + "\n";  // exactly 1 MiB: parsed
  printed += "loss=2 " + std::string(kMax - 6, 'x') + "\n";             // 1 MiB + 1: not parsed
  printed += std::string("caf\xE9 \x1B[2J") + '\0' + " loss=3\rloss=4";  // \r ends a line too
  printed += "\nloss=5";                                                  // no newline at the end
  { std::ofstream(dir + "/out", std::ios::binary) << printed; }
  REQUIRE(b.Launch(Spec(0, dir, Sh("cat out"))).ok());
  Outcome o = WaitDone(b, 0);
  CHECK(o.status.state == RunState::kSucceeded);
  std::vector<double> losses;
  for (const MetricReport& r : o.reports) losses.push_back(r.values.at("loss"));
  CHECK(losses == std::vector<double>{1, 3, 4, 5});
  CHECK(ReadFile(dir + "/rank_0.log") == printed);
}

}  // namespace
}  // namespace tune
