// Helpers for the dashboard tests: a synthetic experiment run by the real
// `tune run`, and a real `tune dashboard` child process on a free port.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_util.h"

namespace tune::dashboard_test {

using namespace tune::e2e;
using nlohmann::json;

// A hostile choice value: it must show as text everywhere.
inline const std::string kHostile = "<img src=x onerror=alert(1)>";

// An ASHA experiment of synthetic_trial: some trials are pruned at a rung.
// The optimizer choice reaches the trial's argv, so a trial with the
// hostile value also prints it in its log.
inline json AshaSpec(const std::string& name, int max_trials, int sleep_ms) {
  return {
      {"name", name},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-5}, {"high", 1e-1}}},
        {"lora_r", {{"type", "choice"}, {"values", {4, 8, 16}}}},
        {"optimizer", {{"type", "choice"}, {"values", {"adamw", kHostile}}}}}},
      {"search", {{"algorithm", "random"}, {"seed", 7}}},
      {"scheduler", {{"type", "asha"}, {"max_t", 30}, {"grace_period", 5}, {"reduction_factor", 3}}},
      {"limits", {{"max_trials", max_trials}, {"max_concurrent_trials", 2}}},
      {"trial",
       {{"command",
         {kBin + "/synthetic_trial", "--lr", "${lr}", "--lora-r", "${lora_r}", "--optimizer", "${optimizer}",
          "--dropout", "0.1", "--steps", "30",
          "--report-every", "5", "--sleep-ms", std::to_string(sleep_ms)}},
        {"workers", 1},
        {"timeout_s", 120}}},
  };
}

inline fs::path WriteSpec(const fs::path& dir, const json& spec) {
  fs::path p = dir / (spec["name"].get<std::string>() + ".json");
  std::ofstream(p) << spec.dump(2);
  return p;
}

// `tune ARGS...` as a child with stdout+stderr to `log`; killed (SIGTERM,
// then waited for) when this goes out of scope, also on a failed REQUIRE.
class Child {
 public:
  Child(const std::vector<std::string>& args, const fs::path& log) : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Child() { Stop(); }
  // Exit code once it ended (SIGTERM sent if it had not).
  int Stop() {
    if (pid_ > 0) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == 0) {
        kill(pid_, SIGTERM);
        waitpid(pid_, &st, 0);
      }
      code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      pid_ = -1;
    }
    return code_;
  }
  // Waits for it to end by itself (at most `seconds`); its exit code, or -1.
  int Wait(double seconds) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (pid_ > 0 && std::chrono::steady_clock::now() < until) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        pid_ = -1;
        return code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return pid_ > 0 ? -1 : code_;
  }
  pid_t pid() const { return pid_; }
  std::string Log() const {
    std::ifstream f(log_);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  int code_ = -1;
};

// A `tune dashboard --db DB --port 0 [--host HOST]` child; port() is where
// it listens.
class Dashboard {
 public:
  Dashboard(const std::string& db, const fs::path& log, const std::string& host = "127.0.0.1")
      : child_({kBin + "/tune", "dashboard", "--db", db, "--port", "0", "--host", host}, log) {
    static const std::regex kServing("serving .* at http://[^ ]*:([0-9]+)/");
    for (int i = 0; i < 200 && port_ == 0; ++i) {
      std::smatch m;
      std::string log_text = child_.Log();
      if (std::regex_search(log_text, m, kServing)) port_ = std::stoi(m[1]);
      else std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    INFO(child_.Log());
    REQUIRE(port_ > 0);
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
  Child& child() { return child_; }

 private:
  Child child_;
  int port_ = 0;
};

}  // namespace tune::dashboard_test
