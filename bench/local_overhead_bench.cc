// local_overhead_bench: what LocalBackend itself costs per trial.
//
//   local_overhead_bench [--trials N] [--parallel P] [--wake-samples N] [-- CMD ARGS...]
//
// 1. Baseline: N runs of CMD (default /bin/true), P at a time, with plain
//    fork+execve+waitpid, output to /dev/null.
// 2. The same N runs as trials through LocalBackend alone (Launch, Poll,
//    State, WaitForEvent; logs, port, resource pool, supervisors).
//    Overhead per trial = (backend wall - baseline wall) / N * P, i.e. the
//    extra time each trial slot is busy.
// 3. Wake latency: this binary re-run as a trial (--emit) prints
//    `t=<CLOCK_REALTIME ns>` lines; we measure from that stamp to the moment
//    WaitForEvent returned and Poll handed the report over.
// 4. Kill latency: Kill() to the final state, for a sleeping worker.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "trial_runner/local_backend.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t RealtimeNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

int Emit(int lines) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  for (int i = 1; i <= lines; ++i) {
    std::this_thread::sleep_for(20ms);
    std::printf("step=%d t=%lld\n", i, static_cast<long long>(RealtimeNs()));
  }
  return 0;
}

double Baseline(const std::vector<std::string>& cmd, int trials, int parallel) {
  std::vector<char*> argv;
  for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  auto start = Clock::now();
  int started = 0, running = 0;
  while (started < trials || running > 0) {
    while (running < parallel && started < trials) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::dup2(null_fd, 1);
        ::dup2(null_fd, 2);
        ::execve(argv[0], argv.data(), environ);
        ::_exit(127);
      }
      ++started;
      ++running;
    }
    int status;
    if (::wait(&status) > 0) --running;
  }
  double wall = Seconds(Clock::now() - start);
  ::close(null_fd);
  return wall;
}

tune::LaunchSpec Spec(tune::TrialId id, const std::string& root, std::vector<std::string> argv) {
  tune::LaunchSpec s;
  s.trial_id = id;
  s.trial_number = static_cast<int>(id);
  s.experiment = "bench";
  s.argv = std::move(argv);
  s.trial_dir = root + "/trial_" + std::to_string(id);
  s.working_dir = root;
  s.cpu_per_worker = 1;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 1000, parallel = 4, wake_samples = 200;
  std::vector<std::string> cmd;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--emit" && i + 1 < argc) return Emit(std::atoi(argv[i + 1]));
    if (a == "--trials" && i + 1 < argc)
      trials = std::atoi(argv[++i]);
    else if (a == "--parallel" && i + 1 < argc)
      parallel = std::atoi(argv[++i]);
    else if (a == "--wake-samples" && i + 1 < argc)
      wake_samples = std::atoi(argv[++i]);
    else if (a == "--") {
      for (++i; i < argc; ++i) cmd.push_back(argv[i]);
    } else {
      std::fprintf(stderr,
                   "usage: local_overhead_bench [--trials N] [--parallel P] "
                   "[--wake-samples N] [-- CMD ARGS...]\n");
      return 2;
    }
  }
  if (cmd.empty()) cmd = {"/bin/true"};
  char tmpl[] = "/tmp/tune_local_bench_XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  const std::string root = tmpl;

  double base = Baseline(cmd, trials, parallel);

  tune::LocalBackend::Options opts;
  opts.cpu_slots = parallel;
  opts.gpu_ids = std::vector<int>{};
  tune::LocalBackend backend(opts);
  std::vector<double> launch_ms, trial_ms;
  std::vector<Clock::time_point> started_at(trials);
  std::vector<tune::TrialId> running;
  int launched = 0, failed = 0;
  auto start = Clock::now();
  while (launched < trials || !running.empty()) {
    // As the tuner does: at most P trials it has not seen end yet.
    while (launched < trials && static_cast<int>(running.size()) < parallel) {
      tune::LaunchSpec s = Spec(launched, root, cmd);
      if (!backend.CanLaunch(s)) break;
      auto t0 = Clock::now();
      tune::Status st = backend.Launch(s);
      launch_ms.push_back(Seconds(Clock::now() - t0) * 1e3);
      if (!st.ok()) {
        std::fprintf(stderr, "launch failed: %s\n", st.ToString().c_str());
        return 1;
      }
      started_at[launched] = t0;
      running.push_back(launched++);
    }
    backend.WaitForEvent(1000ms);
    for (size_t i = 0; i < running.size();) {
      tune::TrialId id = running[i];
      auto reports = backend.Poll(id);
      auto st = backend.State(id);
      if (st->state == tune::RunState::kSucceeded || st->state == tune::RunState::kFailed) {
        if (st->state == tune::RunState::kFailed) ++failed;
        trial_ms.push_back(Seconds(Clock::now() - started_at[id]) * 1e3);
        running[i] = running.back();
        running.pop_back();
      } else {
        ++i;
      }
    }
  }
  double wall = Seconds(Clock::now() - start);

  // Wake latency: report stamped by the worker -> handed over by Poll.
  std::vector<double> wake_ms;
  {
    tune::LaunchSpec s =
        Spec(trials + 1, root, {"/proc/self/exe", "--emit", std::to_string(wake_samples)});
    s.argv[0] = std::filesystem::canonical("/proc/self/exe").string();
    if (!backend.Launch(s).ok()) return 1;
    for (;;) {
      backend.WaitForEvent(1000ms);
      auto reports = backend.Poll(s.trial_id);
      int64_t now = RealtimeNs();
      for (const tune::MetricReport& r : *reports) {
        wake_ms.push_back(static_cast<double>(now - static_cast<int64_t>(r.values.at("t"))) / 1e6);
      }
      auto st = backend.State(s.trial_id);
      if (st->state != tune::RunState::kRunning && st->state != tune::RunState::kStarting) break;
    }
  }
  // Kill latency: SIGTERM to a sleeping shell, until the final state.
  std::vector<double> kill_ms;
  for (int k = 0; k < 20; ++k) {
    tune::LaunchSpec s = Spec(trials + 2 + k, root, {"/bin/sleep", "100"});
    if (!backend.Launch(s).ok()) return 1;
    std::this_thread::sleep_for(5ms);
    auto t0 = Clock::now();
    (void)backend.Kill(s.trial_id, 5000ms);
    for (;;) {
      backend.WaitForEvent(1000ms);
      auto st = backend.State(s.trial_id);
      if (st->state == tune::RunState::kFailed) break;
    }
    kill_ms.push_back(Seconds(Clock::now() - t0) * 1e3);
  }
  backend.Shutdown();
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  std::filesystem::remove_all(root);

  std::printf("command: %s ...; %d trials, %d at a time, %u hardware threads\n", cmd[0].c_str(),
              trials, parallel, std::thread::hardware_concurrency());
  std::printf("baseline fork+exec+wait: %.3f s wall (%.3f ms per trial)\n", base,
              base / trials * 1e3);
  std::printf("LocalBackend:            %.3f s wall (%.3f ms per trial), %d failed\n", wall,
              wall / trials * 1e3, failed);
  std::printf("overhead per trial slot: %.3f ms  ((backend - baseline) / N * P)\n",
              (wall - base) / trials * parallel * 1e3);
  std::printf("Launch() call:           mean %.3f ms, p50 %.3f, p99 %.3f\n", Mean(launch_ms),
              Percentile(launch_ms, 50), Percentile(launch_ms, 99));
  std::printf("launch to final state:   mean %.3f ms, p50 %.3f, p99 %.3f\n", Mean(trial_ms),
              Percentile(trial_ms, 50), Percentile(trial_ms, 99));
  std::printf("metric line to Poll:     mean %.3f ms, p50 %.3f, p99 %.3f, max %.3f (%zu reports)\n",
              Mean(wake_ms), Percentile(wake_ms, 50), Percentile(wake_ms, 99),
              Percentile(wake_ms, 100), wake_ms.size());
  std::printf("Kill to final state:     mean %.3f ms, p50 %.3f, max %.3f\n", Mean(kill_ms),
              Percentile(kill_ms, 50), Percentile(kill_ms, 100));
  std::printf("peak RSS:                %.1f MB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
  return failed == 0 ? 0 : 1;
}
