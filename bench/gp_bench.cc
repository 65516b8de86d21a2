// gp_bench: search quality and CPU cost of GpSampler (search/gp_sampler.h)
// beside RandomSampler and TpeSampler (Optuna 5.0 defaults), on the smooth
// learning-rate valley below and functions of bench/tpe_suite.h.
// bench/gp_optuna.py runs Optuna 5.0's GPSampler on the same functions;
// results are recorded in bench/RESULTS.md.
//
//   gp_bench [--seeds 30] [--first-seed 0] [--trials 50] [--inflight 1]
//            [--functions lr_valley,branin,hartmann6,mixed6,hpo_lora]
//            [--samplers gp,tpe,random,auto,auto:N] [--dump FILE]
//
// Per function and sampler: median (and quartiles) over the seeds of the
// simple regret (best value found minus the optimum) after 20, 30 and 50
// trials (those <= --trials; also 100, 200, 300), and the mean CPU time of this thread per
// suggestion over the whole run, over the trials past the 10 startup ones,
// and over the last 10 (the cost at about --trials trials). With --inflight K, K trials run at once: each new trial is sampled
// with the K - 1 unfinished ones in the history as running trials.
// --dump writes one JSON line per run: the best value after each trial, the
// CPU per suggestion, and every trial's parameters in creation order
// (bench/gp_optuna_paired.py starts Optuna's GPSampler from the same 10
// startup trials; bench/gp_optuna_same_history.py asks Optuna's GP for the
// next suggestion at each step of the run).
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench/tpe_suite.h"
#include "search/auto_sampler.h"
#include "search/gp_sampler.h"
#include "search/random_sampler.h"
#include "search/tpe_sampler.h"

namespace tune {
namespace {

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double Num(const ParamMap& p, const char* name) {
  const ParamValue& v = p.at(name);
  if (auto* d = std::get_if<double>(&v)) return *d;
  return static_cast<double>(std::get<int64_t>(v));
}

// A smooth learning-rate valley: log-uniform lr and weight decay, and
// dropout; the best lr falls slowly as weight decay grows. Minimum 0 at
// lr = 3e-4, weight_decay = 1e-3, dropout = 0.1. bench/gp_optuna.py defines
// the same function.
SuiteProblem LrValley() {
  SearchSpace s;
  s["lr"] = FloatDistribution{1e-6, 1e-1, true, std::nullopt};
  s["weight_decay"] = FloatDistribution{1e-6, 1e-1, true, std::nullopt};
  s["dropout"] = FloatDistribution{0.0, 0.5, false, std::nullopt};
  auto f = [](const ParamMap& p) {
    double u = std::log10(Num(p, "lr") / 3e-4);
    double v = std::log10(Num(p, "weight_decay") / 1e-3);
    double w = Num(p, "dropout") - 0.1;
    return 0.3 * std::pow(u + 0.2 * v, 2) + 0.05 * v * v + 2.0 * w * w;
  };
  return {"lr_valley", s, f, 0.0, {{"lr", 3e-4}, {"weight_decay", 1e-3}, {"dropout", 0.1}}};
}

std::unique_ptr<Sampler> MakeSampler(const std::string& kind, uint64_t seed) {
  if (kind == "gp") {
    GpSamplerOptions o;
    o.seed = seed;
    return std::make_unique<GpSampler>(o);
  }
  if (kind == "tpe") {
    TpeSamplerOptions o;
    o.seed = seed;
    return std::make_unique<TpeSampler>(o);
  }
  if (kind == "auto" || kind.rfind("auto:", 0) == 0) {
    // "auto:N": AutoSampler handing over from the GP to TPE at N completed trials.
    AutoSamplerOptions o;
    o.seed = seed;
    if (kind.size() > 5) o.max_completed_for_gp = std::stoi(kind.substr(5));
    return std::make_unique<AutoSampler>(o);
  }
  if (kind != "random") {
    std::fprintf(stderr, "gp_bench: no sampler %s (gp, tpe, random, auto, auto:N)\n", kind.c_str());
    std::exit(2);
  }
  return std::make_unique<RandomSampler>(seed);
}

struct Run {
  std::vector<double> best;  // best value after each trial
  nlohmann::json params = nlohmann::json::array();  // every trial's parameters, in creation order
  double cpu_all = 0, cpu_model = 0, cpu_last = 0;  // cpu_last: the last 10 suggestions
  int n_model = 0;
};

Run RunOne(const SuiteProblem& prob, const std::string& kind, uint64_t seed, int trials, int inflight) {
  auto sampler = MakeSampler(kind, seed);
  History history;
  std::deque<size_t> open;  // positions of running trials, oldest first
  Run run;
  double best = INFINITY;
  // Completes the oldest running trial and records the best value so far.
  auto finish_oldest = [&] {
    Trial& t = history[open.front()];
    t.state = TrialState::kCompleted;
    t.value = prob.f(t.params);
    best = std::min(best, *t.value);
    run.best.push_back(best);
    open.pop_front();
  };
  for (int i = 0; i < trials; ++i) {
    // Finish the oldest running trial once K are open.
    while (static_cast<int>(open.size()) >= inflight) finish_oldest();
    sampler->Reseed(TrialSeed(seed, i));
    double t0 = CpuNow();
    ParamMap p = SampleTrial(*sampler, prob.space, history);
    double dt = CpuNow() - t0;
    run.cpu_all += dt;
    if (i >= 10) run.cpu_model += dt, run.n_model++;
    if (i >= trials - 10) run.cpu_last += dt / 10;
    nlohmann::json params;
    for (const auto& [name, v] : p) std::visit([&, &name = name](const auto& x) { params[name] = x; }, v);
    run.params.push_back(params);
    Trial t;
    t.id = i + 1;
    t.number = i;
    t.state = TrialState::kRunning;
    t.params = std::move(p);
    history.push_back(std::move(t));
    open.push_back(history.size() - 1);
  }
  while (!open.empty()) finish_oldest();
  run.cpu_all /= trials;
  if (run.n_model) run.cpu_model /= run.n_model;
  return run;
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

int Main(int argc, char** argv) {
  int seeds = 30, first = 0, trials = 50, inflight = 1;
  std::string functions = "lr_valley,branin,hartmann6,mixed6,hpo_lora", samplers = "gp,tpe,random", dump;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "gp_bench: %s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--seeds") seeds = std::stoi(next());
    else if (a == "--first-seed") first = std::stoi(next());
    else if (a == "--trials") trials = std::stoi(next());
    else if (a == "--inflight") inflight = std::stoi(next());
    else if (a == "--functions") functions = next();
    else if (a == "--samplers") samplers = next();
    else if (a == "--dump") dump = next();
    else { std::fprintf(stderr, "gp_bench: unknown argument %s (see bench/gp_bench.cc)\n", a.c_str()); return 2; }
  }
  std::vector<SuiteProblem> suite = TpeSuite();
  suite.push_back(LrValley());
  std::ofstream out;
  if (!dump.empty()) out.open(dump);
  std::vector<int> marks;
  for (int m : {20, 30, 50, 100, 200, 300}) if (m <= trials) marks.push_back(m);
  std::printf("| function | sampler |");
  for (int m : marks) std::printf(" regret@%d median [q25, q75] |", m);
  std::printf(" CPU ms/suggestion (all / past startup / last 10) |\n|---|---|");
  for (size_t k = 0; k < marks.size() + 1; ++k) std::printf("---|");
  std::printf("\n");
  for (const std::string& fname : Split(functions)) {
    const SuiteProblem* prob = FindSuiteProblem(suite, fname);
    if (!prob) { std::fprintf(stderr, "gp_bench: no function %s\n", fname.c_str()); return 2; }
    for (const std::string& kind : Split(samplers)) {
      std::vector<std::vector<double>> at(marks.size());
      double cpu_all = 0, cpu_model = 0, cpu_last = 0;
      for (int s = first; s < first + seeds; ++s) {
        Run r = RunOne(*prob, kind, static_cast<uint64_t>(s), trials, inflight);
        for (size_t k = 0; k < marks.size(); ++k) at[k].push_back(r.best[marks[k] - 1] - prob->optimum);
        cpu_all += r.cpu_all, cpu_model += r.cpu_model, cpu_last += r.cpu_last;
        if (out) {
          nlohmann::json j = {{"function", fname}, {"sampler", kind}, {"seed", s}, {"inflight", inflight},
                              {"best", r.best}, {"cpu_per_suggestion", r.cpu_all}, {"cpu_past_startup", r.cpu_model},
                              {"params", r.params}};
          out << j.dump() << "\n";
        }
      }
      std::printf("| %s | %s |", fname.c_str(), kind.c_str());
      for (auto& v : at) std::printf(" %.3g [%.3g, %.3g] |", Quantile(v, 0.5), Quantile(v, 0.25), Quantile(v, 0.75));
      std::printf(" %.2f / %.2f / %.2f |\n", 1e3 * cpu_all / seeds, 1e3 * cpu_model / seeds, 1e3 * cpu_last / seeds);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace tune

int main(int argc, char** argv) { return tune::Main(argc, argv); }
