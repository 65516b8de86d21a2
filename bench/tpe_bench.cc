// tpe_bench: search quality and sampling cost of RandomSampler, TpeSampler
// and multivariate TpeSampler on Branin, Hartmann6 and the mixed 6-D LoRA
// space of issue 3. bench/tpe_optuna.py runs Optuna's TPE on the same
// functions; results are recorded in bench/RESULTS.md.
//
//   tpe_bench [quality] [timing] [--seeds N] [--first-seed S] [--dump FILE] [--trials N] [--sizes 100,1000,10000] [--reps N]
//             [--only tpe|tpe-multivariate] [--parzen-rules optuna5|optuna3]
//   tpe_bench probe --history H.jsonl --seeds N [--only tpe-multivariate] --dump P.jsonl
//   tpe_bench quality --seeds 1 --first-seed S --history-out H.jsonl --history-at N   (a history of tune's own)
//
// Quality: simple regret (best value found minus the optimum) after 25, 50
// and 100 trials, median and quartiles over the seeds. Timing: CPU time of
// this thread per suggestion (SampleTrial over the whole space) with a
// history of n completed random trials on the mixed space; each suggestion
// then completes and joins the history (n grows by the number timed).
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/random_sampler.h"
#include "search/tpe_sampler.h"

namespace tune {
namespace {

double Num(const ParamValue& v) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  return static_cast<double>(std::get<int64_t>(v));
}

FloatDistribution Float(double lo, double hi, bool log = false) {
  return FloatDistribution{lo, hi, log, std::nullopt};
}

struct Problem {
  std::string name;
  SearchSpace space;
  std::function<double(const ParamMap&)> f;
  double optimum;
};

Problem Branin() {
  SearchSpace s;
  s["x1"] = Float(-5, 10);
  s["x2"] = Float(0, 15);
  auto f = [](const ParamMap& p) {
    double x1 = Num(p.at("x1")), x2 = Num(p.at("x2"));
    const double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
    return std::pow(x2 - b * x1 * x1 + c * x1 - 6, 2) + 10 * (1 - t) * std::cos(x1) + 10;
  };
  return {"branin", s, f, 0.397887357729739};
}

Problem Hartmann6() {
  SearchSpace s;
  for (int i = 0; i < 6; ++i) s["x" + std::to_string(i)] = Float(0, 1);
  auto f = [](const ParamMap& p) {
    static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
    static const double a[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                   {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8},
                                   {17, 8, 0.05, 10, 0.1, 14}};
    static const double pm[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                    {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                    {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                    {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
    double x[6];
    for (int i = 0; i < 6; ++i) x[i] = Num(p.at("x" + std::to_string(i)));
    double sum = 0;
    for (int r = 0; r < 4; ++r) {
      double e = 0;
      for (int i = 0; i < 6; ++i) e += a[r][i] * std::pow(x[i] - pm[r][i], 2);
      sum += alpha[r] * std::exp(-e);
    }
    return -sum;
  };
  return {"hartmann6", s, f, -3.32236801141551};
}

// The mixed LoRA-like space of issue 3; minimum 0.
Problem Mixed6() {
  SearchSpace s;
  auto str = [](const char* v) { return ParamValue(std::string(v)); };
  s["optimizer"] = CategoricalDistribution{{str("adam"), str("sgd"), str("adamw")}, false};
  CategoricalDistribution r;
  for (int64_t v : {4, 8, 16, 32, 64}) r.choices.push_back(ParamValue(v));
  s["lora_r"] = r;
  s["num_layers"] = IntDistribution{1, 8, false, 1};
  s["lr"] = Float(1e-6, 1e-1, true);
  s["weight_decay"] = Float(1e-6, 1e-1, true);
  s["dropout"] = Float(0, 0.5);
  auto f = [](const ParamMap& p) {
    std::string opt = std::get<std::string>(p.at("optimizer"));
    double offset = opt == "adamw" ? 0 : opt == "adam" ? 0.05 : 0.3;
    double lr_opt = opt == "sgd" ? 1e-2 : 3e-4;
    double wd_opt = opt == "adamw" ? 1e-2 : opt == "adam" ? 1e-5 : 1e-4;
    double lr = Num(p.at("lr")), wd = Num(p.at("weight_decay"));
    return offset + std::pow(std::log10(lr / lr_opt), 2) +
           0.05 * std::pow(std::log2(Num(p.at("lora_r"))) - 4, 2) +
           0.03 * std::pow(Num(p.at("num_layers")) - 4, 2) +
           0.1 * std::pow(std::log10(wd / wd_opt), 2) + 2 * std::pow(Num(p.at("dropout")) - 0.1, 2);
  };
  return {"mixed6", s, f, 0.0};
}

// --parzen-rules (alias --bandwidths): which Optuna release's estimator
// TpeSampler follows (ParzenRules); the sampler's default is optuna5.
ParzenRules g_parzen_rules = ParzenRules::kOptuna5;

std::unique_ptr<Sampler> MakeSampler(const std::string& kind, uint64_t seed) {
  if (kind == "random") return std::make_unique<RandomSampler>(seed);
  TpeSamplerOptions o;
  o.seed = seed;
  o.multivariate = kind == "tpe-multivariate";
  o.parzen_rules = g_parzen_rules;
  return std::make_unique<TpeSampler>(o);
}

double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

// --dump FILE: one JSON line per run with the regret after the last trial
// ("regret") and at the earlier checkpoints ("regret_25", "regret_50"), as
// tpe_optuna.py writes them (bench/compare_regrets.py [--at N] reads both).
std::FILE* g_dump = nullptr;
// --history-out FILE --history-at N: the mixed6 history of the first seed's
// multivariate run after N trials, in the format of probe's --history.
std::string g_history_out;
int g_history_at = 0;

// Parameters as JSON: choice strings, ints and floats as they are.
nlohmann::json ParamsJson(const ParamMap& p) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, v] : p) {
    if (auto* str = std::get_if<std::string>(&v)) params[name] = *str;
    else if (auto* i = std::get_if<int64_t>(&v)) params[name] = *i;
    else params[name] = Num(v);
  }
  return params;
}

void WriteHistory(const History& history) {
  std::FILE* f = std::fopen(g_history_out.c_str(), "w");
  if (!f) return;
  for (const Trial& t : history) {
    std::fprintf(f, "%s\n", nlohmann::json({{"params", ParamsJson(t.params)}, {"value", *t.value}}).dump().c_str());
  }
  std::fclose(f);
}

void Quality(int first_seed, int seeds, int trials) {
  const std::vector<int> checkpoints = {25, 50, 100};
  std::printf("| function | sampler | regret@25 median [q1, q3] | regret@50 median [q1, q3] | regret@100 median [q1, q3] |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const Problem& problem : {Branin(), Hartmann6(), Mixed6()}) {
    for (const std::string kind : {"random", "tpe", "tpe-multivariate"}) {
      std::vector<std::vector<double>> regret(checkpoints.size());
      for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
        auto sampler = MakeSampler(kind, seed);
        History history;
        double best = INFINITY;
        for (int i = 0; i < trials; ++i) {
          sampler->Reseed(TrialSeed(seed, i));
          ParamMap p = SampleTrial(*sampler, problem.space, history);
          double v = problem.f(p);
          best = std::min(best, v);
          Trial t;
          t.number = i;
          t.id = i + 1;  // storage ids start at 1; id 0 means "no id" (never cached)
          t.state = TrialState::kCompleted;
          t.params = std::move(p);
          t.value = v;
          history.push_back(std::move(t));
          if (!g_history_out.empty() && seed == first_seed && kind == "tpe-multivariate" &&
              problem.name == "mixed6" && i + 1 == g_history_at)
            WriteHistory(history);
          for (size_t c = 0; c < checkpoints.size(); ++c)
            if (i + 1 == checkpoints[c]) regret[c].push_back(best - problem.optimum);
        }
        if (g_dump) {
          std::string at;  // the earlier checkpoints this run reached
          for (size_t c = 0; c < checkpoints.size(); ++c)
            if (checkpoints[c] < trials)
              at += ", \"regret_" + std::to_string(checkpoints[c]) + "\": " +
                    nlohmann::json(regret[c].back()).dump();
          std::fprintf(g_dump,
                       "{\"function\": \"%s\", \"mode\": \"%s\", \"seed\": %d, \"trials\": %d, "
                       "\"regret\": %.17g%s}\n",
                       problem.name.c_str(),
                       kind == "random" ? "random" : kind == "tpe" ? "univariate" : "multivariate",
                       seed, trials, best - problem.optimum, at.c_str());
        }
      }
      std::printf("| %s | %s |", problem.name.c_str(), kind.c_str());
      for (const auto& r : regret) {
        if (r.empty()) { std::printf(" - |"); continue; }
        std::printf(" %.4g [%.4g, %.4g] |", Quantile(r, 0.5), Quantile(r, 0.25), Quantile(r, 0.75));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}

void Timing(const std::vector<int>& sizes, int reps_override, const std::string& only) {
  const Problem problem = Mixed6();
  std::printf("| sampler | history | ms per suggestion | suggestions timed |\n|---|---|---|---|\n");
  for (const std::string kind : {"tpe", "tpe-multivariate"}) {
    if (!only.empty() && kind != only) continue;
    for (int n : sizes) {
      // A history of n completed random trials.
      RandomSampler random(1234);
      History history;
      history.reserve(n);
      for (int i = 0; i < n; ++i) {
        random.Reseed(TrialSeed(1234, i));
        Trial t;
        t.number = i;
        t.id = i + 1;  // storage ids start at 1; id 0 means "no id" (never cached)
        t.state = TrialState::kCompleted;
        t.params = SampleTrial(random, problem.space, history);
        t.value = problem.f(t.params);
        history.push_back(std::move(t));
      }
      auto sampler = MakeSampler(kind, 1);
      const int reps = reps_override > 0 ? reps_override : n >= 10000 ? 20 : n >= 1000 ? 50 : 200;
      sampler->Reseed(1);
      (void)SampleTrial(*sampler, problem.space, history);  // warm-up
            double seconds = 0;
      for (int r = 0; r < reps; ++r) {
        sampler->Reseed(TrialSeed(1, n + r));
        double t0 = ThreadSeconds();
        ParamMap p = SampleTrial(*sampler, problem.space, history);
        seconds += ThreadSeconds() - t0;
        if (p.size() != problem.space.size()) std::abort();
        // As in a run, the suggestion completes and joins the history, so
        // caches kept across trials see one new trial per suggestion.
        Trial t;
        t.number = n + r;
        t.id = n + r + 1;
        t.state = TrialState::kCompleted;
        t.value = problem.f(p);
        t.params = std::move(p);
        history.push_back(std::move(t));
      }
      double ms = seconds / reps * 1e3;
      std::printf("| %s | %d | %.3f | %d |\n", kind.c_str(), n, ms, reps);
      std::fflush(stdout);
    }
  }
}

// probe: one mixed6 suggestion per seed after the fixed history of
// tpe_optuna.py --make-history (JSON lines of params and value), written as
// JSON lines for bench/compare_probe.py.
int Probe(const std::string& history_path, int seeds, const std::string& only) {
  using Json = nlohmann::json;
  std::ifstream in(history_path);
  if (!in) {
    std::fprintf(stderr, "probe: cannot read %s\n", history_path.c_str());
    return 2;
  }
  History history;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    Json row = Json::parse(line);
    Trial t;
    t.number = static_cast<int>(history.size());
    t.id = t.number + 1;
    t.state = TrialState::kCompleted;
    for (const auto& [name, v] : row["params"].items()) {
      if (v.is_string()) t.params[name] = v.get<std::string>();
      else if (v.is_number_integer()) t.params[name] = v.get<int64_t>();
      else t.params[name] = v.get<double>();
    }
    t.value = row["value"].get<double>();
    history.push_back(std::move(t));
  }
  const Problem problem = Mixed6();
  for (const std::string kind : {"tpe", "tpe-multivariate"}) {
    if (!only.empty() && kind != only) continue;
    for (int seed = 0; seed < seeds; ++seed) {
      auto sampler = MakeSampler(kind, seed);
      sampler->Reseed(TrialSeed(seed, static_cast<int>(history.size())));
      ParamMap p = SampleTrial(*sampler, problem.space, history);
      Json out = {{"mode", kind == "tpe" ? "univariate" : "multivariate"}, {"seed", seed}, {"params", ParamsJson(p)}};
      std::fprintf(g_dump ? g_dump : stdout, "%s\n", out.dump().c_str());
    }
  }
  return 0;
}

}  // namespace
}  // namespace tune

int main(int argc, char** argv) {
  bool quality = false, timing = false, probe = false;
  std::string history;
  int seeds = 20, first_seed = 0, trials = 100, reps = 0;
  std::string only;
  std::vector<int> sizes = {100, 1000, 10000};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "quality") quality = true;
    else if (a == "timing") timing = true;
    else if (a == "probe") probe = true;
    else if (a == "--history" && i + 1 < argc) history = argv[++i];
    else if (a == "--history-out" && i + 1 < argc) tune::g_history_out = argv[++i];
    else if (a == "--history-at" && i + 1 < argc) tune::g_history_at = std::atoi(argv[++i]);
    else if (a == "--seeds" && i + 1 < argc) seeds = std::atoi(argv[++i]);
    else if (a == "--first-seed" && i + 1 < argc) first_seed = std::atoi(argv[++i]);
    else if (a == "--dump" && i + 1 < argc) {
      tune::g_dump = std::fopen(argv[++i], "w");
      if (!tune::g_dump) {
        std::fprintf(stderr, "--dump: cannot write %s\n", argv[i]);
        return 2;
      }
    }
    else if (a == "--trials" && i + 1 < argc) trials = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if ((a == "--parzen-rules" || a == "--bandwidths") && i + 1 < argc) {
      std::string b = argv[++i];
      if (b != "optuna3" && b != "optuna5") {
        std::fprintf(stderr, "%s: optuna5 (default) or optuna3\n", a.c_str());
        return 2;
      }
      tune::g_parzen_rules = b == "optuna5" ? tune::ParzenRules::kOptuna5 : tune::ParzenRules::kOptuna3;
    }
    else if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::string s = argv[++i];
      for (size_t pos = 0; pos < s.size();) {
        size_t end = s.find(',', pos);
        if (end == std::string::npos) end = s.size();
        sizes.push_back(std::atoi(s.substr(pos, end - pos).c_str()));
        pos = end + 1;
      }
    } else {
      std::fprintf(stderr, "usage: tpe_bench [quality] [timing] [probe --history FILE] [--history-out FILE --history-at N] [--seeds N] [--first-seed S] [--dump FILE] [--trials N] [--sizes a,b,c] [--reps N] [--only KIND] [--parzen-rules optuna5|optuna3]\n");
      return 2;
    }
  }
  if (probe) {
    int rc = tune::Probe(history, seeds, only);
    if (tune::g_dump) std::fclose(tune::g_dump);
    return rc;
  }
  if (!quality && !timing) quality = timing = true;
  std::printf("parzen rules: %s\n\n",
              tune::g_parzen_rules == tune::ParzenRules::kOptuna5 ? "optuna5" : "optuna3");
  if (quality) tune::Quality(first_seed, seeds, trials);
  if (tune::g_dump) std::fclose(tune::g_dump);
  if (timing) tune::Timing(sizes, reps, only);
  return 0;
}
