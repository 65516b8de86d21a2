// Helpers for the end-to-end tests: they drive the real `tune` binary (and
// trial programs) through a shell (tests/common/run_tune.h) and inspect
// files and /proc.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <random>
#include <string>
#include <thread>

#include "tests/common/run_tune.h"
#include "tests/common/temp_dir.h"

namespace tune::e2e {

namespace fs = std::filesystem;

// The common helpers (tests/common), under the names these tests use.
using testing::kBin;
using testing::Output;
using testing::Quote;
using testing::Sh;
using testing::TempDir;
using testing::Tune;

// Number of live (not zombie) processes whose command line contains `needle`.
inline int CountProcesses(const std::string& needle) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string pid = e.path().filename();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    // A process may end between the listing and the read, which then fails
    // with ESRCH: read through operator<<, which turns that into "".
    auto read = [](const fs::path& p) {
      std::ifstream f(p);
      std::ostringstream out;
      out << f.rdbuf();
      return out.str();
    };
    std::string cmd = read(e.path() / "cmdline");
    std::string stat = read(e.path() / "stat");
    auto close = stat.rfind(')');
    bool zombie = close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
    if (!zombie && cmd.find(needle) != std::string::npos) ++n;
  }
  return n;
}

// --- Runs of `tune run` in the background (the reliability tests).

// Writes `spec` (an experiment as JSON) to <dir>/<name>.json.
template <typename Json>
fs::path Write(const fs::path& dir, const Json& spec) {
  fs::path p = dir / (spec["name"].template get<std::string>() + ".json");
  std::ofstream(p) << spec.dump(2);
  return p;
}

// `tune run SPEC --db DB --quiet [extra]` in the background, output to `log`.
inline pid_t StartTune(const fs::path& spec, const std::string& db, const fs::path& log, const char* extra = nullptr) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl((kBin + "/tune").c_str(), "tune", "run", spec.c_str(), "--db", db.c_str(), "--quiet", extra,
          static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// The exit code of `pid`, waiting at most `limit_s` (then SIGKILL, -1).
inline int WaitExit(pid_t pid, int limit_s) {
  for (int i = 0; i < limit_s * 20; ++i) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

inline std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Waits until `sql` (one number) on `db` is at least `n`.
inline bool WaitCount(const std::string& db, const std::string& sql, int n) {
  for (int i = 0; i < 600; ++i) {
    Output c = Sh("sqlite3 " + Quote(db) + " " + Quote(sql));
    if (c.code == 0 && !c.out.empty() && std::isdigit(static_cast<unsigned char>(c.out[0])) && std::stoi(c.out) >= n)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Starts `tune run SPEC --db DB --quiet --resume` `kills` times, each time
// SIGKILLing it after a moment drawn (from `seed`) up to `max_moment_s`:
// early, late, during a trial, between trials, while it starts. Output to
// `log`.
inline void KillResumedRuns(const fs::path& spec, const std::string& db, const fs::path& log, int kills,
                            unsigned seed, double max_moment_s) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> moment(0.0, max_moment_s);
  for (int k = 0; k < kills; ++k) {
    pid_t pid = StartTune(spec, db, log, "--resume");
    REQUIRE(pid > 0);
    std::this_thread::sleep_for(std::chrono::duration<double>(moment(rng)));
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

// Waits until no live process has `needle` in its command line.
inline bool NoProcessLeft(const std::string& needle) {
  for (int i = 0; i < 100; ++i) {
    if (CountProcesses(needle) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace tune::e2e
