// tpe_bench: search quality and sampling cost of RandomSampler, TpeSampler
// (univariate, multivariate, and as constructed by default) on the suite of
// bench/tpe_suite.h; timing on the mixed 6-D LoRA space of issue 3 (or
// another suite problem: --timing-function).
// bench/tpe_optuna.py runs Optuna's TPE on the same functions,
// bench/tpe_vs_optuna.sh both; results are recorded in bench/RESULTS.md.
//
//   tpe_bench [quality] [timing] [--seeds N] [--first-seed S] [--dump FILE] [--trials N] [--sizes 100,1000,10000] [--reps N]
//             [--only tpe|tpe-multivariate|default] [--parzen-rules optuna5|optuna3]
//             [--functions branin,...] [--modes random,tpe,tpe-multivariate,default] [--inflight K]
//             [--n-ei-candidates N] [--n-ei-candidates-numerical N] [--n-startup-trials N] [--gamma F]
//             [--prior-weight W] [--independent-choices true|false] [--timing-function F]
//   tpe_bench probe --history H.jsonl --seeds N [--only tpe-multivariate] --dump P.jsonl
//   tpe_bench quality --seeds 1 --first-seed S --history-out H.jsonl --history-at N   (a history of tune's own)
//
// Quality: simple regret (best value found minus the optimum) after 25, 50
// and 100 trials, median and quartiles over the seeds; with --inflight K,
// K trials run at once (each new trial sees the K - 1 others running).
// Timing: CPU time of this thread per suggestion (SampleTrial over the whole
// space) with a history of n completed random trials; each suggestion then
// completes and joins the history (n grows by the number timed).
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

#include "bench/tpe_suite.h"
#include "search/random_sampler.h"
#include "search/tpe_sampler.h"

namespace tune {
namespace {

double Num(const ParamValue& v) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  return static_cast<double>(std::get<int64_t>(v));
}

// --parzen-rules (alias --bandwidths): which Optuna release's estimator
// TpeSampler follows (ParzenRules); the sampler's default is optuna5.
ParzenRules g_parzen_rules = ParzenRules::kOptuna5;

// Overrides of TpeSamplerOptions for every TPE mode (--n-ei-candidates,
// --n-ei-candidates-numerical, --n-startup-trials, --gamma, --prior-weight,
// --independent-choices); unset: the sampler's defaults.
std::optional<int> g_n_ei_candidates, g_n_ei_candidates_numerical, g_n_startup_trials;
std::optional<double> g_gamma, g_prior_weight;
std::optional<bool> g_independent_choices;

// kind: "random", "univariate" (alias "tpe"), "multivariate" (alias
// "tpe-multivariate") or "default" (TpeSamplerOptions as constructed, i.e.
// what `tune` runs when the experiment sets nothing). univariate and
// multivariate are Optuna's TPESampler settings of that mode (n_ei_candidates
// for every space, no independent_choices) unless flags say otherwise.
std::unique_ptr<Sampler> MakeSampler(const std::string& kind, uint64_t seed) {
  if (kind == "random") return std::make_unique<RandomSampler>(seed);
  TpeSamplerOptions o;
  o.seed = seed;
  if (kind == "tpe" || kind == "univariate") o.multivariate = false;
  else if (kind == "tpe-multivariate" || kind == "multivariate") o.multivariate = true;
  else if (kind != "default") std::abort();
  if (kind != "default") {  // Optuna's settings
    o.n_ei_candidates_numerical = 0;
    o.independent_choices = false;
  }
  o.parzen_rules = g_parzen_rules;
  if (g_n_ei_candidates) o.n_ei_candidates = *g_n_ei_candidates;
  if (g_n_ei_candidates_numerical) o.n_ei_candidates_numerical = *g_n_ei_candidates_numerical;
  if (g_n_startup_trials) o.n_startup_trials = *g_n_startup_trials;
  if (g_gamma) o.gamma = *g_gamma;
  if (g_independent_choices) o.independent_choices = *g_independent_choices;
  if (g_prior_weight) o.prior_weight = *g_prior_weight;
  return std::make_unique<TpeSampler>(o);
}

// The dump's name of a kind (tpe_optuna.py writes the same names).
std::string ModeName(const std::string& kind) {
  if (kind == "tpe") return "univariate";
  if (kind == "tpe-multivariate") return "multivariate";
  return kind;
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
int g_history_seed = 0;  // the first seed

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

// One run: `trials` suggestions with up to `inflight` trials running at
// once (the oldest finishes before a new one starts once `inflight` are
// running, so inflight 1 is sequential); running trials stay in the history
// without a value, as the tuner shows them to the sampler. Returns the best
// value after each trial is finished, in order of finishing.
std::vector<double> Run(const SuiteProblem& problem, const std::string& kind, int seed, int trials, int inflight) {
  auto sampler = MakeSampler(kind, seed);
  History history;
  history.reserve(trials);
  std::vector<double> best_after;
  double best = INFINITY;
  size_t oldest_running = 0;
  auto finish_oldest = [&] {
    Trial& t = history[oldest_running++];
    t.value = problem.f(t.params);
    t.state = TrialState::kCompleted;
    best = std::min(best, *t.value);
    best_after.push_back(best);
  };
  for (int i = 0; i < trials; ++i) {
    if (static_cast<int>(history.size() - oldest_running) >= inflight) finish_oldest();
    sampler->Reseed(TrialSeed(seed, i));
    Trial t;
    t.number = i;
    t.id = i + 1;  // storage ids start at 1; id 0 means "no id" (never cached)
    t.state = TrialState::kRunning;
    t.params = SampleTrial(*sampler, problem.space, history);
    history.push_back(std::move(t));
    if (inflight == 1) finish_oldest();
    if (!g_history_out.empty() && seed == g_history_seed && ModeName(kind) == "multivariate" &&
        problem.name == "mixed6" && i + 1 == g_history_at)
      WriteHistory(history);
  }
  while (oldest_running < history.size()) finish_oldest();
  return best_after;
}

void Quality(int first_seed, int seeds, int trials, const std::vector<std::string>& functions,
             const std::vector<std::string>& kinds, int inflight) {
  const std::vector<int> checkpoints = {25, 50, 100};
  std::printf("| function | sampler | regret@25 median [q1, q3] | regret@50 median [q1, q3] | regret@100 median [q1, q3] |\n");
  std::printf("|---|---|---|---|---|\n");
  const std::vector<SuiteProblem> suite = TpeSuite();
  for (const std::string& fname : functions) {
    const SuiteProblem& problem = *FindSuiteProblem(suite, fname);
    for (const std::string& kind : kinds) {
      std::vector<std::vector<double>> regret(checkpoints.size());
      for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
        const std::vector<double> best_after = Run(problem, kind, seed, trials, inflight);
        for (size_t c = 0; c < checkpoints.size(); ++c)
          if (checkpoints[c] <= trials) regret[c].push_back(best_after[checkpoints[c] - 1] - problem.optimum);
        if (g_dump) {
          std::string at;  // the earlier checkpoints this run reached
          for (size_t c = 0; c < checkpoints.size(); ++c)
            if (checkpoints[c] < trials)
              at += ", \"regret_" + std::to_string(checkpoints[c]) + "\": " +
                    nlohmann::json(regret[c].back()).dump();
          std::fprintf(g_dump,
                       "{\"function\": \"%s\", \"mode\": \"%s\", \"inflight\": %d, \"seed\": %d, "
                       "\"trials\": %d, \"regret\": %.17g%s}\n",
                       problem.name.c_str(), ModeName(kind).c_str(), inflight, seed, trials,
                       best_after.back() - problem.optimum, at.c_str());
        }
      }
      std::printf("| %s | %s%s |", problem.name.c_str(), kind.c_str(),
                  inflight > 1 ? (", " + std::to_string(inflight) + " in flight").c_str() : "");
      for (const auto& r : regret) {
        if (r.empty()) { std::printf(" - |"); continue; }
        std::printf(" %.4g [%.4g, %.4g] |", Quantile(r, 0.5), Quantile(r, 0.25), Quantile(r, 0.75));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}

void Timing(const std::vector<int>& sizes, int reps_override, const std::string& only, const std::string& function) {
  const std::vector<SuiteProblem> suite = TpeSuite();
  const SuiteProblem& problem = *FindSuiteProblem(suite, function);
  std::printf("| sampler | history | ms per suggestion | suggestions timed |\n|---|---|---|---|\n");
  for (const std::string kind : {"tpe", "tpe-multivariate", "default"}) {
    if (only.empty() ? kind == "default" : kind != only) continue;  // default: with --only default
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
  const std::vector<SuiteProblem> suite = TpeSuite();
  const SuiteProblem& problem = *FindSuiteProblem(suite, "mixed6");
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
  std::vector<std::string> functions, kinds = {"random", "tpe", "tpe-multivariate"};
  int inflight = 1;
  std::string timing_function = "mixed6";
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    for (size_t pos = 0; pos < s.size();) {
      size_t end = s.find(',', pos);
      if (end == std::string::npos) end = s.size();
      if (end > pos) out.push_back(s.substr(pos, end - pos));
      pos = end + 1;
    }
    return out;
  };
  for (const tune::SuiteProblem& p : tune::TpeSuite()) functions.push_back(p.name);
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
    else if (a == "--functions" && i + 1 < argc) {
      functions = split(argv[++i]);
      const auto suite = tune::TpeSuite();
      for (const std::string& f : functions)
        if (!tune::FindSuiteProblem(suite, f)) {
          std::fprintf(stderr, "--functions: no problem '%s' in the suite (bench/tpe_suite.h)\n", f.c_str());
          return 2;
        }
    }
    else if (a == "--modes" && i + 1 < argc) {
      kinds = split(argv[++i]);
      for (const std::string& k : kinds)
        if (k != "random" && k != "tpe" && k != "univariate" && k != "tpe-multivariate" && k != "multivariate" &&
            k != "default") {
          std::fprintf(stderr, "--modes: expected random, univariate, multivariate or default, got '%s'\n", k.c_str());
          return 2;
        }
    }
    else if (a == "--inflight" && i + 1 < argc) {
      inflight = std::atoi(argv[++i]);
      if (inflight < 1) {
        std::fprintf(stderr, "--inflight: expected an integer >= 1\n");
        return 2;
      }
    }
    else if (a == "--n-ei-candidates" && i + 1 < argc) tune::g_n_ei_candidates = std::atoi(argv[++i]);
    else if (a == "--timing-function" && i + 1 < argc) {
      timing_function = argv[++i];
      if (!tune::FindSuiteProblem(tune::TpeSuite(), timing_function)) {
        std::fprintf(stderr, "--timing-function: no problem '%s' in the suite (bench/tpe_suite.h)\n", timing_function.c_str());
        return 2;
      }
    }
    else if (a == "--n-ei-candidates-numerical" && i + 1 < argc) tune::g_n_ei_candidates_numerical = std::atoi(argv[++i]);
    else if (a == "--n-startup-trials" && i + 1 < argc) tune::g_n_startup_trials = std::atoi(argv[++i]);
    else if (a == "--independent-choices" && i + 1 < argc) tune::g_independent_choices = std::string(argv[++i]) == "true";
    else if (a == "--gamma" && i + 1 < argc) tune::g_gamma = std::atof(argv[++i]);
    else if (a == "--prior-weight" && i + 1 < argc) tune::g_prior_weight = std::atof(argv[++i]);
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
      std::fprintf(stderr, "usage: tpe_bench [quality] [timing] [probe --history FILE] [--history-out FILE --history-at N] [--seeds N] [--first-seed S] [--dump FILE] [--trials N] [--functions a,b] [--modes random,univariate,multivariate,default] [--inflight K] [--n-ei-candidates N] [--n-ei-candidates-numerical N] [--n-startup-trials N] [--gamma F] [--prior-weight W] [--independent-choices true|false] [--sizes a,b,c] [--reps N] [--only KIND] [--timing-function F] [--parzen-rules optuna5|optuna3]\n");
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
  tune::g_history_seed = first_seed;
  if (quality) tune::Quality(first_seed, seeds, trials, functions, kinds, inflight);
  if (tune::g_dump) std::fclose(tune::g_dump);
  if (timing) tune::Timing(sizes, reps, only, timing_function);
  return 0;
}
