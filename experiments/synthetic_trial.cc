// synthetic_trial: a stand-in training run whose learning curve depends on
// its hyperparameters. Used by the fast experiments and the tests.
//
//   synthetic_trial [--lr F] [--lora-r N] [--dropout F] [--optimizer adam|adamw|sgd]
//                   [--steps N] [--report-every N] [--sleep-ms N] [--seed N]
//                   [--fail-at STEP] [--exit-code N] [--json] [--costs]
//
// The curve is  eval_loss(t) = final + a * exp(-t / tau) + noise, where
// final is smallest at lr = 3e-4, lora_r = 16, dropout = 0.1 (optimizer
// offsets as the TPE benchmark's), and tau grows as lr shrinks, so small
// learning rates converge late. Only RANK 0 prints metrics (docs/architecture.md, section 4.4);
// other ranks just sleep through the same steps.
//
// --costs adds what a LoRA run trades its loss against, for multi-objective
// experiments: adapter_mb (0.25 per unit of rank), peak_mem_gb (6 + 0.08 per
// unit of rank) and tokens_per_s (2000 / (1 + 0.02 rank)); they depend on
// the rank only, so the Pareto front of eval_loss against adapter_mb is the
// best loss at each rank.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

namespace {

// Monotonic time of the last metric line, for the SIGTERM latency note.
std::atomic<int64_t> g_last_report_ns{0};

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// On SIGTERM: say how long after the last report the stop arrived (stderr,
// so it lands in the rank log without being a metric line), then exit.
void OnTerm(int) {
  char buf[128];
  int64_t us = (MonotonicNs() - g_last_report_ns.load()) / 1000;
  int n = snprintf(buf, sizeof buf, "synthetic_trial: SIGTERM %lld us after the last report\n",
                   static_cast<long long>(us));
  if (n > 0) {
    ssize_t w = write(STDERR_FILENO, buf, static_cast<size_t>(n));
    (void)w;
  }
  _exit(143);
}

[[noreturn]] void Usage(const char* msg) {
  std::fprintf(stderr, "synthetic_trial: %s\n", msg);
  std::exit(2);
}

double ParseDouble(const char* flag, const char* v) {
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || *end) Usage((std::string("bad value for ") + flag + ": " + v).c_str());
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  double lr = 1e-3, dropout = 0.1;
  long lora_r = 8, steps = 100, report_every = 10, sleep_ms = 0, seed = 0, fail_at = -1, exit_code = 0;
  std::string optimizer = "adamw";
  bool json = false, costs = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) Usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--lr") lr = ParseDouble("--lr", next());
    else if (a == "--lora-r") lora_r = std::lround(ParseDouble("--lora-r", next()));
    else if (a == "--dropout") dropout = ParseDouble("--dropout", next());
    else if (a == "--optimizer") optimizer = next();
    else if (a == "--steps") steps = std::lround(ParseDouble("--steps", next()));
    else if (a == "--report-every") report_every = std::lround(ParseDouble("--report-every", next()));
    else if (a == "--sleep-ms") sleep_ms = std::lround(ParseDouble("--sleep-ms", next()));
    else if (a == "--seed") seed = std::lround(ParseDouble("--seed", next()));
    else if (a == "--fail-at") fail_at = std::lround(ParseDouble("--fail-at", next()));
    else if (a == "--exit-code") exit_code = std::lround(ParseDouble("--exit-code", next()));
    else if (a == "--json") json = true;
    else if (a == "--costs") costs = true;
    else Usage(("unknown argument " + a).c_str());
  }
  if (lr <= 0 || lora_r <= 0 || steps <= 0 || report_every <= 0) Usage("lr, lora-r, steps, report-every must be > 0");

  const char* rank_env = std::getenv("RANK");
  const int rank = rank_env ? std::atoi(rank_env) : 0;
  double offset = optimizer == "adamw" ? 0.0 : optimizer == "adam" ? 0.05 : 0.3;
  double lr_opt = optimizer == "sgd" ? 1e-2 : 3e-4;
  double final_loss = 1.0 + offset + 0.5 * std::pow(std::log10(lr / lr_opt), 2) +
                      0.05 * std::pow(std::log2(static_cast<double>(lora_r)) - 4.0, 2) +
                      2.0 * std::pow(dropout - 0.1, 2);
  double tau = 10.0 * std::sqrt(lr_opt / lr) + 2.0;
  std::mt19937_64 rng(static_cast<uint64_t>(seed) * 1000003u + static_cast<uint64_t>(lora_r));
  std::normal_distribution<double> noise(0.0, 0.01);

  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGTERM, OnTerm);
  if (rank == 0) std::printf("synthetic_trial: learning rate %g, rank %ld, dropout %g, optimizer %s\n",
                             lr, lora_r, dropout, optimizer.c_str());
  for (long t = 1; t <= steps; ++t) {
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    if (t == fail_at) {
      std::fprintf(stderr, "synthetic_trial: failing at step %ld as asked\n", t);
      return exit_code ? static_cast<int>(exit_code) : 3;
    }
    if (t % report_every != 0 && t != steps) continue;
    double train = final_loss * 0.95 + 2.0 * std::exp(-static_cast<double>(t) / tau) + noise(rng);
    double eval = final_loss + 2.0 * std::exp(-static_cast<double>(t) / tau) + noise(rng);
    if (rank != 0) continue;
    const double r = static_cast<double>(lora_r);
    char extra[160] = "";
    if (costs) {
      std::snprintf(extra, sizeof extra, json ? ", \"adapter_mb\": %.4f, \"peak_mem_gb\": %.4f, \"tokens_per_s\": %.3f"
                                              : " adapter_mb=%.4f peak_mem_gb=%.4f tokens_per_s=%.3f",
                    0.25 * r, 6 + 0.08 * r, 2000 / (1 + 0.02 * r));
    }
    if (json) std::printf("{\"step\": %ld, \"train_loss\": %.6f, \"eval_loss\": %.6f%s}\n", t, train, eval, extra);
    else std::printf("step=%ld train_loss=%.6f eval_loss=%.6f%s\n", t, train, eval, extra);
    g_last_report_ns = MonotonicNs();
  }
  return static_cast<int>(exit_code);
}
