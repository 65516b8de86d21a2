// mlflow_overhead_bench: what MLflow tracking costs `tune run` itself.
//
// Runs the real `tune run` on N trivial trials (`/bin/echo loss=${x}`,
// random search over 3 parameters, 4 at a time, as bench/tuner_overhead.sh)
// twice per round: with tracking.mlflow off, and on against a stand-in
// MLflow server in this process (loopback, cpp-httplib, answering the
// calls the sink makes at once). Rounds alternate off/on so that a busy
// machine's drift hits both. Prints each run's wall time and CPU time
// (tune and its trials, from wait4) and the on/off ratios.
//
//   mlflow_overhead_bench [--trials 10000] [--rounds 1] [--tune PATH]
//
// --tune defaults to the `tune` next to this program. Scratch files go to a
// fresh temporary directory, removed at the end.
//
// The stand-in rather than `mlflow server`: MLflow's own server takes tens
// of milliseconds per call on this machine (bench/RESULTS.md, "MLflow
// tracking: what a down or slow server costs a run"), so with it `tune run`
// would wait at the end for the server to catch up, and the ratio would
// measure MLflow, not tune.
#include <fcntl.h>
#include <httplib.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// MLflow's REST API as the sink uses it: one experiment, runs made on
// demand, every log-batch and update taken.
class StandIn {
 public:
  StandIn() {
    auto handle = [this](const httplib::Request& q, httplib::Response& r) {
      ++calls_;
      std::string out = "{}";
      if (q.path.find("experiments/get-by-name") != std::string::npos) {
        out = R"({"experiment": {"experiment_id": "1", "lifecycle_stage": "active"}})";
      } else if (q.path.find("runs/search") != std::string::npos) {
        out = R"({"runs": []})";
      } else if (q.path.find("runs/create") != std::string::npos) {
        out = R"({"run": {"info": {"run_id": "r)" + std::to_string(++runs_) + R"("}}})";
      }
      r.set_content(out, "application/json");
    };
    server_.Get(R"(/.*)", handle);
    server_.Post(R"(/.*)", handle);
    // As MLflow's server (uvicorn): a connection is kept alive as long as
    // it is used, and answers are not held back by Nagle's algorithm.
    server_.set_tcp_nodelay(true);
    server_.set_keep_alive_max_count(1000000);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~StandIn() {
    server_.stop();
    thread_.join();
  }
  std::string uri() const { return "http://127.0.0.1:" + std::to_string(port_); }
  long calls() const { return calls_; }
  long runs() const { return runs_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<long> calls_{0}, runs_{0};
};

double SelfCpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Run {
  double wall = 0, cpu = 0;  // s; cpu: tune and its trials (user + system)
  int exit_code = -1;
  std::string log;
};

Run TuneRun(const std::string& tune, const std::string& spec, const std::string& db, const std::string& log) {
  std::vector<std::string> args = {tune, "run", spec, "--db", db, "--quiet"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  Run r;
  const auto start = Clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, tune.c_str(), &fa, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "mlflow_overhead_bench: cannot start %s\n", tune.c_str());
    std::exit(1);
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  rusage u{};
  wait4(pid, &status, 0, &u);
  r.wall = std::chrono::duration<double>(Clock::now() - start).count();
  r.cpu = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
          1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream f(log);
  r.log.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return r;
}

std::string Spec(const std::string& name, int trials, const std::string& mlflow_uri) {
  std::string s = R"({"name": ")" + name + R"(", "objective": {"metric": "loss", "mode": "min"},
  "parameters": {"x": {"type": "uniform", "low": 0, "high": 1},
                 "lr": {"type": "loguniform", "low": 1e-5, "high": 1e-1},
                 "r": {"type": "choice", "values": [4, 8, 16]}},
  "search": {"algorithm": "random", "seed": 1},
  "limits": {"max_trials": )" + std::to_string(trials) + R"(, "max_concurrent_trials": 4},
  "trial": {"command": ["/bin/echo", "loss=${x}"]})";
  if (!mlflow_uri.empty()) s += R"(, "tracking": {"mlflow": {"tracking_uri": ")" + mlflow_uri + R"("}})";
  return s + "}\n";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 10000, rounds = 1;
  std::string tune = (fs::canonical("/proc/self/exe").parent_path() / "tune").string();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trials" && i + 1 < argc) trials = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--tune" && i + 1 < argc) tune = argv[++i];
    else {
      std::fprintf(stderr, "usage: mlflow_overhead_bench [--trials N] [--rounds R] [--tune PATH]\n");
      return 2;
    }
  }
  if (trials < 1 || rounds < 1) {
    std::fprintf(stderr, "mlflow_overhead_bench: --trials and --rounds must be at least 1\n");
    return 2;
  }
  std::string tmpl = (fs::temp_directory_path() / "mlflow_bench_XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    std::perror("mlflow_overhead_bench: mkdtemp");
    return 1;
  }
  const fs::path dir = tmpl;
  StandIn server;
  std::vector<double> off_wall, on_wall, off_cpu, on_cpu;
  bool ok = true;
  std::printf("%d trials of /bin/echo, 4 at a time, %d round(s) of tracking off then on (stand-in MLflow at %s)\n",
              trials, rounds, server.uri().c_str());
  for (int round = 0; round < rounds; ++round) {
    for (bool on : {false, true}) {
      const std::string name = std::string(on ? "on" : "off") + std::to_string(round);
      const fs::path spec = dir / (name + ".json");
      std::ofstream(spec) << Spec(name, trials, on ? server.uri() : "");
      const long calls_before = server.calls();
      const double server_cpu = SelfCpu();
      Run r = TuneRun(tune, spec.string(), (dir / (name + ".db")).string(), (dir / (name + ".log")).string());
      if (r.exit_code != 0 || r.log.find("not delivered") != std::string::npos) {
        // Its last lines: what failed, or what was not delivered.
        size_t from = r.log.size();
        for (int lines = 0; lines < 4 && from > 0; ++lines) from = r.log.rfind('\n', from - 2) + 1;
        std::fprintf(stderr, "mlflow_overhead_bench: tune run (%s) exited %d, ending:\n%s", name.c_str(), r.exit_code,
                     r.log.substr(from).c_str());
        ok = false;
      }
      char extra[128] = "";
      if (on) {
        std::snprintf(extra, sizeof extra, "  %ld MLflow calls, stand-in cpu %.2f s", server.calls() - calls_before,
                      SelfCpu() - server_cpu);
      }
      std::printf("round %d  tracking %-3s  wall %8.2f s  cpu %8.2f s  (%.2f ms wall per trial)%s\n", round,
                  on ? "on" : "off", r.wall, r.cpu, 1000 * r.wall / trials, extra);
      std::fflush(stdout);
      (on ? on_wall : off_wall).push_back(r.wall);
      (on ? on_cpu : off_cpu).push_back(r.cpu);
    }
  }
  std::printf("median wall: off %.2f s, on %.2f s: ratio %.3f\n", Median(off_wall), Median(on_wall),
              Median(on_wall) / Median(off_wall));
  std::printf("median cpu:  off %.2f s, on %.2f s: ratio %.3f\n", Median(off_cpu), Median(on_cpu),
              Median(on_cpu) / Median(off_cpu));
  std::error_code ec;
  fs::remove_all(dir, ec);
  return ok ? 0 : 1;
}
