// mo_bench: multi-objective search quality and sampler cost of tune's
// multi-objective TPE (TpeSamplerOptions::objectives_maximize) and
// Nsga2Sampler, beside RandomSampler, on ZDT1, ZDT2, DTLZ2 (3 objectives),
// a mixed LoRA-like space with a choice, and the constrained SRN problem.
// bench/mo_optuna.py runs Optuna 5.0's TPESampler and NSGAIISampler on the
// same functions (defined again in bench/mo_suite.py) and writes the same
// JSON lines; bench/mo_compare.py computes every hypervolume of both sides
// with one reference point per function; bench/mo_bench.sh runs all three.
// Results are in bench/RESULTS.md.
//
//   mo_bench [--seeds 30] [--first-seed 0] [--trials 200]
//            [--functions zdt1,zdt2,dtlz2,mixed,srn] [--samplers tpe,nsga2,random]
//            (also tpe-univariate, tpe-24, tpe-univariate-24: see MakeSampler)
//            [--out FILE]
//
// Trials run one at a time, as the tuner runs them with one worker:
// Reseed(TrialSeed(seed, number)), SampleTrial, evaluate, and the trial
// appended to the history as completed with its `values` (raw, in
// objective order; `value` the first, as the tuner sets it) and its
// `constraints`, then AfterTrial. One JSON line per run (function, sampler,
// seed) to FILE (default stdout):
//
//   {"side": "tune", "function", "sampler", "seed", "params": [...],
//    "values": [[...], ...], "constraints": [[...], ...], "sampler_cpu": [...]}
//
// sampler_cpu: this thread's CPU seconds in SampleTrial plus AfterTrial,
// per trial.
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "search/random_sampler.h"
#include "search/tpe_sampler.h"
#if __has_include("search/nsga2_sampler.h")
#include "search/nsga2_sampler.h"
#define MO_BENCH_HAS_NSGA2 1
#endif

namespace tune {
namespace {

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double Num(const ParamMap& p, const std::string& name) {
  const ParamValue& v = p.at(name);
  if (auto* d = std::get_if<double>(&v)) return *d;
  return static_cast<double>(std::get<int64_t>(v));
}

struct Evaluation {
  std::vector<double> values;       // raw, in objective order
  std::vector<double> constraints;  // Optuna's convention: <= 0 feasible
};

// One problem of the suite; bench/mo_suite.py holds the same definitions
// (and the reference points of the hypervolume).
struct MoProblem {
  std::string name;
  SearchSpace space;
  std::function<Evaluation(const ParamMap&)> f;
  std::vector<bool> maximize;
};

SearchSpace Unit(int n) {
  SearchSpace s;
  for (int i = 0; i < n; ++i) s["x" + std::to_string(i)] = FloatDistribution{0.0, 1.0, false, std::nullopt};
  return s;
}

std::vector<double> Xs(const ParamMap& p, int n) {
  std::vector<double> x;
  for (int i = 0; i < n; ++i) x.push_back(Num(p, "x" + std::to_string(i)));
  return x;
}

// ZDT1/ZDT2 (Zitzler, Deb, Thiele 2000) with 6 variables: g = 1 + 9 mean(x1..x5).
double ZdtG(const std::vector<double>& x) {
  double s = 0;
  for (size_t i = 1; i < x.size(); ++i) s += x[i];
  return 1 + 9 * s / (x.size() - 1);
}

std::vector<MoProblem> MoSuite() {
  std::vector<MoProblem> suite;
  suite.push_back({"zdt1", Unit(6), [](const ParamMap& p) {
                     auto x = Xs(p, 6);
                     double g = ZdtG(x);
                     return Evaluation{{x[0], g * (1 - std::sqrt(x[0] / g))}, {}};
                   }, {false, false}});
  suite.push_back({"zdt2", Unit(6), [](const ParamMap& p) {
                     auto x = Xs(p, 6);
                     double g = ZdtG(x);
                     return Evaluation{{x[0], g * (1 - (x[0] / g) * (x[0] / g))}, {}};
                   }, {false, false}});
  // DTLZ2 (Deb, Thiele, Laumanns, Zitzler 2002), 3 objectives, 6 variables.
  suite.push_back({"dtlz2", Unit(6), [](const ParamMap& p) {
                     auto x = Xs(p, 6);
                     double g = 0;
                     for (size_t i = 2; i < x.size(); ++i) g += (x[i] - 0.5) * (x[i] - 0.5);
                     double a = x[0] * M_PI / 2, b = x[1] * M_PI / 2;
                     return Evaluation{{(1 + g) * std::cos(a) * std::cos(b), (1 + g) * std::cos(a) * std::sin(b),
                                        (1 + g) * std::sin(a)}, {}};
                   }, {false, false, false}});
  // mixed: quality (maximised) against adapter size (minimised); `target`
  // trades size per rank against loss, each with its own best lr and
  // weight decay.
  {
    SearchSpace s;
    s["lr"] = FloatDistribution{1e-5, 1e-1, true, std::nullopt};
    s["rank"] = IntDistribution{1, 64, true, 1};
    s["dropout"] = FloatDistribution{0.0, 0.5, false, std::nullopt};
    s["target"] = CategoricalDistribution{{std::string("attn"), std::string("mlp"), std::string("all")}, false};
    s["weight_decay"] = FloatDistribution{1e-6, 1e-1, true, std::nullopt};
    suite.push_back({"mixed", s, [](const ParamMap& p) {
                       const std::string& t = std::get<std::string>(p.at("target"));
                       double offset = t == "attn" ? 0.15 : t == "mlp" ? 0.05 : 0.0;
                       double size = t == "attn" ? 1.0 : t == "mlp" ? 2.0 : 4.0;
                       double lr_opt = t == "attn" ? 3e-3 : t == "mlp" ? 1e-3 : 3e-4;
                       double wd_opt = t == "attn" ? 1e-2 : t == "mlp" ? 1e-3 : 1e-4;
                       double u = std::log10(Num(p, "lr") / lr_opt), v = std::log10(Num(p, "weight_decay") / wd_opt);
                       double d = Num(p, "dropout") - 0.1;
                       double loss = offset + 0.6 / std::sqrt(Num(p, "rank")) + u * u + 0.3 * v * v + 2 * d * d;
                       return Evaluation{{3.0 - loss, size * Num(p, "rank") / 64.0}, {}};
                     }, {true, false}});
  }
  // SRN (Srinivas and Deb 1994): two constraints.
  {
    SearchSpace s;
    s["x"] = FloatDistribution{-20.0, 20.0, false, std::nullopt};
    s["y"] = FloatDistribution{-20.0, 20.0, false, std::nullopt};
    suite.push_back({"srn", s, [](const ParamMap& p) {
                       double x = Num(p, "x"), y = Num(p, "y");
                       return Evaluation{{2 + (x - 2) * (x - 2) + (y - 1) * (y - 1), 9 * x - (y - 1) * (y - 1)},
                                         {x * x + y * y - 225, x - 3 * y + 10}};
                     }, {false, false}});
  }
  return suite;
}

// tpe: TpeSamplerOptions' defaults (what `"algorithm": "tpe"` runs) with
// objectives_maximize. Variants, to tell where a difference from Optuna
// comes from: tpe-univariate (multivariate false: one model per parameter,
// Optuna 5.0's default with several objectives), tpe-24 (24 candidates
// also for all-numerical draws, as Optuna), tpe-univariate-24 (both).
std::unique_ptr<Sampler> MakeSampler(const std::string& kind, const MoProblem& prob, uint64_t seed) {
  if (kind == "tpe" || kind == "tpe-univariate" || kind == "tpe-24" || kind == "tpe-univariate-24") {
    TpeSamplerOptions o;
    o.objectives_maximize = prob.maximize;
    o.seed = seed;
    if (kind.find("univariate") != std::string::npos) o.multivariate = false;
    if (kind.find("-24") != std::string::npos) o.n_ei_candidates_numerical = 0;
    return std::make_unique<TpeSampler>(o);
  }
#ifdef MO_BENCH_HAS_NSGA2
  if (kind == "nsga2") {
    Nsga2SamplerOptions o;
    o.maximize = prob.maximize;
    o.seed = seed;
    return std::make_unique<Nsga2Sampler>(o);
  }
#endif
  if (kind == "random") return std::make_unique<RandomSampler>(seed);
  return nullptr;
}

nlohmann::json ParamsJson(const ParamMap& p) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : p) std::visit([&](const auto& x) { j[name] = x; }, v);
  return j;
}

nlohmann::json RunOne(const MoProblem& prob, const std::string& kind, uint64_t seed, int trials) {
  auto sampler = MakeSampler(kind, prob, seed);
  History history;
  nlohmann::json params = nlohmann::json::array(), values = nlohmann::json::array(),
                 constraints = nlohmann::json::array(), cpu = nlohmann::json::array();
  for (int i = 0; i < trials; ++i) {
    sampler->Reseed(TrialSeed(seed, i));
    double t0 = CpuNow();
    ParamMap p = SampleTrial(*sampler, prob.space, history);
    double dt = CpuNow() - t0;
    Evaluation e = prob.f(p);
    Trial t;
    t.id = i + 1;
    t.number = i;
    t.state = TrialState::kCompleted;
    t.params = std::move(p);
    t.values = e.values;
    t.value = e.values.front();
    t.constraints = e.constraints;
    history.push_back(t);
    t0 = CpuNow();
    sampler->AfterTrial(history.back());
    dt += CpuNow() - t0;
    params.push_back(ParamsJson(t.params));
    values.push_back(e.values);
    constraints.push_back(e.constraints);
    cpu.push_back(dt);
  }
  return {{"side", "tune"}, {"function", prob.name}, {"sampler", kind}, {"seed", seed}, {"params", params},
          {"values", values}, {"constraints", constraints}, {"sampler_cpu", cpu}};
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

int Main(int argc, char** argv) {
  int seeds = 30, first = 0, trials = 200;
  std::string functions = "zdt1,zdt2,dtlz2,mixed,srn", samplers = "tpe,nsga2,random", out_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "mo_bench: %s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--seeds") seeds = std::stoi(next());
    else if (a == "--first-seed") first = std::stoi(next());
    else if (a == "--trials") trials = std::stoi(next());
    else if (a == "--functions") functions = next();
    else if (a == "--samplers") samplers = next();
    else if (a == "--out") out_path = next();
    else { std::fprintf(stderr, "mo_bench: unknown argument %s (see bench/mo_bench.cc)\n", a.c_str()); return 2; }
  }
  std::vector<MoProblem> suite = MoSuite();
  std::ofstream file;
  if (!out_path.empty()) {
    file.open(out_path);
    if (!file) { std::fprintf(stderr, "mo_bench: cannot write %s\n", out_path.c_str()); return 1; }
  }
  std::ostream& out = out_path.empty() ? std::cout : file;
  for (const std::string& kind : Split(samplers)) {
    for (const std::string& fname : Split(functions)) {
      const MoProblem* prob = nullptr;
      for (const auto& p : suite) if (p.name == fname) prob = &p;
      if (!prob) { std::fprintf(stderr, "mo_bench: no function %s\n", fname.c_str()); return 2; }
      if (!MakeSampler(kind, *prob, 0)) {
        std::fprintf(stderr, "mo_bench: no sampler %s in this build (see MakeSampler in bench/mo_bench.cc)\n", kind.c_str());
        return 2;
      }
      double cpu = 0;
      for (int s = first; s < first + seeds; ++s) {
        nlohmann::json run = RunOne(*prob, kind, static_cast<uint64_t>(s), trials);
        for (double c : run["sampler_cpu"]) cpu += c;
        out << run.dump() << "\n";
      }
      out.flush();
      std::fprintf(stderr, "%s %s: %d seeds, sampler %.3f ms/trial\n", fname.c_str(), kind.c_str(), seeds,
                   1e3 * cpu / (static_cast<double>(seeds) * trials));
    }
  }
  return 0;
}

}  // namespace
}  // namespace tune

int main(int argc, char** argv) { return tune::Main(argc, argv); }
