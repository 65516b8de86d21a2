// storage_bench: is the results database ever the bottleneck?
//
// Writes an experiment the way `tune run` does (each trial created, started,
// `--reports` reports of 3 metrics each, finished; every call its own
// transaction), then times the reads the tuner and `tune trials` make.
//
//   storage_bench [--trials 10000] [--reports 20] [--db PATH or postgresql://URL] [--reads-only]
//
// --reads-only times only the reads, on the newest experiment already in
// --db (e.g. one written by an earlier run with --db).
// Without --db the file goes to a fresh temporary directory, removed at
// the end.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include "storage/open_storage.h"
#include "storage/storage.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// CPU seconds of this process (user + system): robust to a busy machine,
// where wall time mostly measures the other processes.
double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

[[noreturn]] void Die(const tune::Status& st) {
  std::fprintf(stderr, "storage_bench: %s\n", st.ToString().c_str());
  std::exit(1);
}

struct Timing {
  double wall = 0, cpu = 0;
};

// Median wall and CPU time of `runs` calls.
template <typename F>
Timing Median(int runs, F&& f) {
  std::vector<double> wall, cpu;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    double cpu_start = CpuSeconds();
    f();
    wall.push_back(Seconds(start));
    cpu.push_back(CpuSeconds() - cpu_start);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 10000, reports = 20;
  std::string db_path;
  bool reads_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--trials" && i + 1 < argc) {
      trials = std::atoi(argv[++i]);
    } else if (a == "--reports" && i + 1 < argc) {
      reports = std::atoi(argv[++i]);
    } else if (a == "--db" && i + 1 < argc) {
      db_path = argv[++i];
    } else if (a == "--reads-only") {
      reads_only = true;
    } else {
      std::fprintf(stderr, "usage: storage_bench [--trials N] [--reports N] [--db PATH] [--reads-only]\n");
      return 2;
    }
  }
  std::filesystem::path tmp;
  if (db_path.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "storage_bench_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return 1;
    tmp = tmpl;
    db_path = (tmp / "bench.db").string();
  }

  auto opened = tune::OpenStorage(db_path);  // a file, or a postgresql:// URL
  if (!opened.ok()) Die(opened.status());
  tune::Storage& db = **opened;
  tune::Result<tune::ExperimentId> e = tune::ExperimentId{0};
  if (reads_only) {
    auto all = db.ListExperiments();
    if (!all.ok()) Die(all.status());
    if (all->empty()) Die(tune::Status::NotFound(db_path + ": no experiment to read"));
    e = all->back().id;
    trials = 0;
  } else {
    // The space the trials below are drawn from, so that `tune importance`
    // (bench/importance_bench.sh) can read the file too.
    e = db.CreateExperiment("bench-" + std::to_string(::getpid()), R"({"name": "bench",
        "objective": {"metric": "eval_loss", "mode": "min"},
        "parameters": {"learning_rate": {"type": "loguniform", "low": 1e-4, "high": 1e-2},
                       "lora_r": {"type": "choice", "values": [4, 8, 16, 32]},
                       "lora_alpha": {"type": "choice", "values": [16]},
                       "lora_dropout": {"type": "uniform", "low": 0, "high": 0.2},
                       "schedule": {"type": "choice", "values": ["cosine", "linear"]}},
        "trial": {"command": ["lora_train"]}})", 1);
    if (!e.ok()) Die(e.status());
  }

  // ---- writes: one transaction per call, as the tuner makes them
  long transactions = 0;
  double report_seconds = 0, report_cpu = 0;
  auto start = Clock::now();
  double cpu_start = CpuSeconds();
  for (int i = 0; i < trials; ++i) {
    tune::ParamMap params = {{"learning_rate", 1e-4 * (1 + i % 97)},
                             {"lora_r", int64_t{4} << (i % 4)},
                             {"lora_alpha", int64_t{16}},
                             {"lora_dropout", 0.01 * (i % 20)},
                             {"schedule", std::string(i % 2 ? "cosine" : "linear")}};
    auto t = db.CreateTrial(*e, params);
    if (!t.ok()) Die(t.status());
    tune::Status st = db.StartTrial(t->id, 0, "local:pid " + std::to_string(1000 + i));
    if (!st.ok()) Die(st);
    auto report_start = Clock::now();
    double report_cpu_start = CpuSeconds();
    for (int r = 1; r <= reports; ++r) {
      tune::MetricReport m;
      m.step = 10 * r;
      double loss = 3.0 / (1.0 + 0.1 * r) + 0.001 * (i % 100);
      m.values = {{"step", static_cast<double>(m.step)}, {"train_loss", loss + 0.2},
                  {"eval_loss", loss}};
      st = db.AppendReport(t->id, 0, m, loss);
      if (!st.ok()) Die(st);
    }
    report_seconds += Seconds(report_start);
    report_cpu += CpuSeconds() - report_cpu_start;
    st = db.FinishTrial(t->id, tune::TrialState::kCompleted, 3.0 / (1.0 + 0.1 * reports) + 0.001 * (i % 100),
                        std::nullopt, "completed");
    if (!st.ok()) Die(st);
    transactions += 3 + reports;
  }
  double write_seconds = Seconds(start);
  double write_cpu = CpuSeconds() - cpu_start;
  long total_reports = static_cast<long>(trials) * reports;

  // ---- reads
  size_t n_trials = 0, n_reports = 0;
  Timing list_trials = Median(5, [&] {
    auto h = db.ListTrials(*e);
    if (!h.ok()) Die(h.status());
    n_trials = h->size();
  });
  Timing list_records = Median(5, [&] {
    auto h = db.ListTrialRecords(*e);
    if (!h.ok()) Die(h.status());
  });
  Timing list_reports = Median(3, [&] {
    auto r = db.ListReports(*e);
    if (!r.ok()) Die(r.status());
    n_reports = r->size();
  });
  std::error_code ec;
  auto bytes = std::filesystem::file_size(db_path, ec);
  auto wal = std::filesystem::file_size(db_path + "-wal", ec);

  const double n_tx = static_cast<double>(transactions);
  const double n_rep = static_cast<double>(total_reports);
  const bool url = tune::IsDatabaseUrl(db_path);
  std::printf("storage_bench: %d trials x %d reports (3 metrics each), %s\n", trials, reports,
              url ? "PostgreSQL, synchronous_commit=off" : "SQLite WAL, synchronous=NORMAL");
  std::printf("  (wall time, then CPU time of this process in brackets)\n");
  if (trials > 0) {
    std::printf("  writes            %.2f s [%.2f s] for %ld transactions: %.0f/s [%.0f/s]\n",
                write_seconds, write_cpu, transactions, n_tx / write_seconds, n_tx / write_cpu);
    std::printf("  AppendReport      %.0f reports/s [%.0f/s], %.1f us [%.1f us] each\n",
                n_rep / report_seconds, n_rep / report_cpu, 1e6 * report_seconds / n_rep,
                1e6 * report_cpu / n_rep);
    std::printf("  whole trials      %.0f/s [%.0f/s] (create + start + %d reports + finish)\n",
                trials / write_seconds, trials / write_cpu, reports);
  }
  std::printf("  ListTrials        %.1f ms [%.1f ms] for %zu trials (median of 5)\n",
              1e3 * list_trials.wall, 1e3 * list_trials.cpu, n_trials);
  std::printf("  ListTrialRecords  %.1f ms [%.1f ms] (median of 5)\n", 1e3 * list_records.wall,
              1e3 * list_records.cpu);
  std::printf("  ListReports       %.1f ms [%.1f ms] for %zu reports (median of 3)\n",
              1e3 * list_reports.wall, 1e3 * list_reports.cpu, n_reports);
  if (!url) {
    std::printf("  file              %.1f MB (+ %.1f MB WAL)\n", static_cast<double>(bytes) / 1e6,
                static_cast<double>(wal) / 1e6);
  }
  opened->reset();
  if (!tmp.empty()) std::filesystem::remove_all(tmp, ec);
  return 0;
}
