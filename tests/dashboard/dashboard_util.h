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

#include "storage/storage.h"
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

// A PBT experiment "pbt" written straight into `storage`: trial 0 (lr 0.01)
// reports 2.0 at step 10, is paused and exploits trial 1 (lr 0.02, 1.0 at
// step 10) at step 10, taking lr 0.024; its attempt 1 reports 0.5 at step
// 20 and completes; trial 1 stays paused. With `late_report`, trial 0 also
// has a report at step 35 marked "after max_t".
inline void SeedPbtExperiment(tune::Storage& storage, bool late_report) {
  const tune::ExperimentId e = *storage.CreateExperiment("pbt", AshaSpec("pbt", 2, 0).dump(), 1);
  auto add = [&](double lr) {
    return storage.CreateTrial(e, {{"lr", lr}, {"lora_r", int64_t{4}}, {"optimizer", std::string("adamw")}})->id;
  };
  const tune::TrialId t0 = add(0.01), t1 = add(0.02);
  auto report = [&](tune::TrialId t, int attempt, int64_t step, double v) {
    tune::MetricReport r;
    r.step = step;
    r.values = {{"eval_loss", v}};
    REQUIRE(storage.AppendReport(t, attempt, r, v).ok());
  };
  REQUIRE(storage.StartTrial(t0, 0, "local:pgid 1").ok());
  REQUIRE(storage.StartTrial(t1, 0, "local:pgid 2").ok());
  report(t0, 0, 10, 2.0);
  report(t1, 0, 10, 1.0);
  REQUIRE(storage.PauseTrial(t0, "exploit").ok());
  REQUIRE(storage.RecordExploit(t0, 10, t1, 10,
                                {{"lr", 0.024}, {"lora_r", int64_t{4}}, {"optimizer", std::string("adamw")}})
              .ok());
  REQUIRE(storage.ContinueTrial(t0, 1, "local:pgid 3", 10).ok());
  report(t0, 1, 20, 0.5);
  if (late_report) {
    tune::MetricReport late;
    late.step = 35;
    late.values = {{"eval_loss", 0.1}};
    REQUIRE(storage.AppendExcludedReport(t0, 1, late, 0.1, "after max_t").ok());
  }
  REQUIRE(storage.FinishTrial(t0, tune::TrialState::kCompleted, 0.5, std::nullopt, "").ok());
  REQUIRE(storage.PauseTrial(t1, "waiting").ok());
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
