// asha_bench: what early stopping saves, in process, on synthetic learning
// curves (no processes, no database).
//
//   asha_bench [--seeds N] [--trials N] [--grace-period N] [--brackets N]
//              [--tpe-only [--tpe-pruner asha|median] | --rung-ranks]
//
// A trial with parameters x, y in [0, 1] reports, at steps t = 1..81,
//   loss(t) = final + a * exp(-t / tau) + noise,   noise ~ N(0, 0.02^2)
// with final = 0.2 + 0.5 x + 0.4 (y - 0.4)^2 and
//   crossing: a = 2, tau = 2 + 40 (1 - x)  (fast starters end worse)
//   parallel: a = 1, tau = 10              (curves never cross, but for noise)
// The noise and the configurations come from a counter-based hash of
// (seed, trial number, step), so bench/asha_optuna.py evaluates exactly the
// same curves.
//
// Trials run one at a time (as Optuna's study.optimize with n_jobs=1), and
// for ASHA and the median rule also 4 at a time, at different speeds
// (asynchronous: a trial started later may reach a rung first).
// Tables (markdown, for bench/RESULTS.md):
//   1. 60 trials per seed: steps consumed and best final loss (the last
//      value of the best trial that ran to max_t) for FIFO, ASHA (rf 3,
//      grace 1, max_t 81) and the median rule (grace 1, min_samples 3).
//   2. Equal budget: ASHA spends the steps FIFO spends on 20 full trials
//      (1620); per seed, which one finds the better best final loss.
//   3. TPE: FIFO with TPE (60 trials) vs ASHA with TPE (or, with
//      --tpe-pruner median, the median rule): the steps it needs until a
//      completed trial is at least as good as FIFO's best.
//   4. Cost of one scheduler decision.
//   5. (--rung-ranks) What a rung can see: over 10,000 random
//      configurations, how well the loss at step t (the milestones of
//      grace periods 1 and 2, and a few more) ranks them
//      by their true final loss, and how many of the best 10% a rung that
//      keeps its best third (reduction_factor 3) would keep.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schedulers/asha_scheduler.h"
#include "schedulers/fifo_scheduler.h"
#include "schedulers/median_stopping_rule.h"
#include "search/sampler.h"
#include "search/tpe_sampler.h"

namespace tune {
namespace {

constexpr int64_t kMaxT = 81;
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------
// Curves (mirrored in asha_optuna.py)

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in (0, 1), from (seed, trial, stream).
double Uniform(uint64_t seed, uint64_t trial, uint64_t stream) {
  const uint64_t h = Mix(Mix(Mix(seed) ^ trial) ^ stream);
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
}

double Noise(uint64_t seed, int trial, int64_t t) {
  const double u1 = Uniform(seed, trial, 1000 + 2 * t);
  const double u2 = Uniform(seed, trial, 1001 + 2 * t);
  return 0.02 * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

enum class Family { kCrossing, kParallel };

double FinalLoss(double x, double y) { return 0.2 + 0.5 * x + 0.4 * (y - 0.4) * (y - 0.4); }

double Loss(Family f, uint64_t seed, int trial, double x, double y, int64_t t) {
  const double a = f == Family::kCrossing ? 2.0 : 1.0;
  const double tau = f == Family::kCrossing ? 2 + 40 * (1 - x) : 10.0;
  return FinalLoss(x, y) + a * std::exp(-static_cast<double>(t) / tau) + Noise(seed, trial, t);
}

// ---------------------------------------------------------------------------
// One experiment

enum class Kind { kFifo, kAsha, kMedian };

// ASHA's grace_period and brackets (--grace-period, --brackets); Ray's
// defaults, 1 and 1, unless asked otherwise.
int64_t g_asha_grace_period = 1;
int g_asha_brackets = 1;

std::unique_ptr<Scheduler> MakeScheduler(Kind kind, uint64_t seed) {
  if (kind == Kind::kAsha) {
    AshaOptions o;
    o.max_t = kMaxT;
    o.grace_period = g_asha_grace_period;
    o.reduction_factor = 3;
    o.brackets = g_asha_brackets;
    o.seed = seed;
    return std::make_unique<AshaScheduler>(o);
  }
  if (kind == Kind::kMedian) {
    MedianOptions o;
    o.grace_period = 1;
    o.min_samples_required = 3;
    return std::make_unique<MedianStoppingRule>(o);
  }
  return std::make_unique<FifoScheduler>();
}

// A trial that ran to max_t: when it ended and what it found.
struct Completion {
  int64_t steps = 0;  // steps consumed by the whole run when it ended
  double observed = 0;  // its last reported loss
  double truth = 0;     // its noise-free final loss
};

struct RunResult {
  int64_t steps = 0;
  int trials = 0, completed = 0, pruned = 0;
  std::vector<Completion> completions;  // in order
  double decision_ns = 0;               // mean wall time of OnTrialResult

  // The trial a user would pick after `budget` steps (best observed final
  // among trials completed by then); nullopt if none.
  std::optional<Completion> PickAt(int64_t budget) const {
    std::optional<Completion> best;
    for (const Completion& c : completions) {
      if (c.steps > budget) break;
      if (!best || c.observed < best->observed) best = c;
    }
    return best;
  }
  // The first budget at which the pick's true final is <= `truth` (-1: never).
  int64_t StepsToReach(double truth) const {
    std::optional<Completion> best;
    for (const Completion& c : completions) {
      if (!best || c.observed < best->observed) best = c;
      if (best->truth <= truth) return c.steps;
    }
    return -1;
  }
};

struct RunConfig {
  Family family = Family::kCrossing;
  uint64_t seed = 0;
  Kind kind = Kind::kFifo;
  bool tpe = false;  // else hashed uniform configurations
  int max_trials = 60;
  int workers = 1;
  int64_t step_budget = std::numeric_limits<int64_t>::max();
};

// Runs trials on `workers` slots, each slot advancing its trial one step per
// round (workers = 1: one trial after the other), until max_trials or the
// step budget (the trials running when it is spent are cut and count for
// nothing).
RunResult Run(const RunConfig& c) {
  std::unique_ptr<Scheduler> scheduler = MakeScheduler(c.kind, c.seed);
  FloatDistribution unit;  // [0, 1]
  const SearchSpace space = {{"x", unit}, {"y", unit}};
  TpeSamplerOptions tpe_options;
  tpe_options.seed = c.seed;
  TpeSampler tpe(tpe_options);
  History history;  // finished trials, by number
  RunResult r;
  double decision_total_ns = 0;
  int64_t decisions = 0;

  struct Slot {
    Trial trial;
    double x = 0, y = 0;
    int64_t next_step = 1;
  };
  std::vector<Slot> slots;  // running trials
  int next_number = 0;
  auto start_trial = [&]() {
    if (next_number >= c.max_trials || r.steps >= c.step_budget) return false;
    Slot s;
    Trial& t = s.trial;
    t.id = next_number + 1;
    t.number = next_number;
    t.state = TrialState::kRunning;
    if (c.tpe) {
      History seen = history;  // finished and running, by number
      for (const Slot& o : slots) seen.push_back(o.trial);
      std::sort(seen.begin(), seen.end(),
                [](const Trial& a, const Trial& b) { return a.number < b.number; });
      tpe.Reseed(TrialSeed(c.seed, t.number));
      t.params = SampleTrial(tpe, space, seen);
    } else {
      t.params = {{"x", Uniform(c.seed, t.number, 1)}, {"y", Uniform(c.seed, t.number, 2)}};
    }
    s.x = std::get<double>(t.params.at("x"));
    s.y = std::get<double>(t.params.at("y"));
    scheduler->OnTrialAdd(t);
    slots.push_back(std::move(s));
    ++next_number;
    return true;
  };
  auto finish = [&](Slot& s, TrialState state) {
    Trial& t = s.trial;
    t.state = state;
    scheduler->OnTrialComplete(t);
    ++r.trials;
    if (state == TrialState::kPruned) ++r.pruned;
    if (state == TrialState::kCompleted) {
      ++r.completed;
      r.completions.push_back({r.steps, *t.value, FinalLoss(s.x, s.y)});
    }
    auto at = std::upper_bound(history.begin(), history.end(), t.number,
                               [](int n, const Trial& o) { return n < o.number; });
    history.insert(at, t);
    tpe.AfterTrial(t);
  };

  while (static_cast<int>(slots.size()) < c.workers && start_trial()) {
  }
  for (uint64_t round = 0; !slots.empty(); ++round) {
    for (size_t i = 0; i < slots.size();) {
      Slot& s = slots[i];
      // With several workers, trials run at different speeds: each one
      // takes a step in a round with probability 0.3 + 0.7 u (u fixed per
      // trial), so later trials may overtake earlier ones.
      if (c.workers > 1 && Uniform(c.seed, s.trial.number, 1u << 20 | round) >=
                               0.3 + 0.7 * Uniform(c.seed, s.trial.number, 3)) {
        ++i;
        continue;
      }
      std::optional<TrialState> end;
      if (r.steps >= c.step_budget) {
        end = TrialState::kStopped;
      } else {
        const int64_t step = s.next_step++;
        const double loss = Loss(c.family, c.seed, s.trial.number, s.x, s.y, step);
        ++r.steps;
        s.trial.intermediate[step] = loss;
        s.trial.value = loss;
        const auto start = std::chrono::steady_clock::now();
        const Decision d = scheduler->OnTrialResult(s.trial, step, loss);
        decision_total_ns += std::chrono::duration<double, std::nano>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
        ++decisions;
        if (d.action == Action::kStop) {
          end = d.rung ? TrialState::kPruned : TrialState::kCompleted;  // no rung: max_t
        } else if (step == kMaxT) {
          end = TrialState::kCompleted;
        }
      }
      if (!end) {
        ++i;
        continue;
      }
      finish(s, *end);
      slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(i));
      start_trial();  // appended: it takes its first step in this round
    }
  }
  r.decision_ns = decisions ? decision_total_ns / decisions : 0;
  return r;
}

// ---------------------------------------------------------------------------
// Reporting

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char* FamilyName(Family f) { return f == Family::kCrossing ? "crossing" : "parallel"; }

void FixedTrialTable(Family f, int seeds, int trials) {
  std::printf("\n### %s curves: %d trials, max_t %lld, seeds 0..%d (medians over seeds)\n\n",
              FamilyName(f), trials, static_cast<long long>(kMaxT), seeds - 1);
  std::printf("| scheduler | steps | steps / FIFO | best final (observed) | its true final | "
              "pruned |\n|---|---|---|---|---|---|\n");
  const Kind kinds[] = {Kind::kFifo, Kind::kAsha, Kind::kMedian, Kind::kAsha, Kind::kMedian};
  const int workers[] = {1, 1, 1, 4, 4};
  const char* names[] = {"FIFO", "ASHA", "median", "ASHA, 4 workers", "median, 4 workers"};
  double fifo_steps = 0;
  for (int k = 0; k < 5; ++k) {
    std::vector<double> steps, best, truth, pruned;
    for (int s = 0; s < seeds; ++s) {
      RunConfig c;
      c.family = f;
      c.seed = s;
      c.kind = kinds[k];
      c.workers = workers[k];
      c.max_trials = trials;
      const RunResult r = Run(c);
      const auto pick = r.PickAt(r.steps);
      steps.push_back(static_cast<double>(r.steps));
      best.push_back(pick ? pick->observed : kInf);
      truth.push_back(pick ? pick->truth : kInf);
      pruned.push_back(r.pruned);
    }
    if (k == 0) fifo_steps = Median(steps);
    std::printf("| %s | %.0f | %.3fx | %.4f | %.4f | %.0f |\n", names[k], Median(steps),
                Median(steps) / fifo_steps, Median(best), Median(truth), Median(pruned));
  }
}

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f", v);
  return std::isinf(v) ? "-" : buf;
}

void EqualBudgetTable(Family f, int seeds) {
  const int64_t budget = 20 * kMaxT;
  std::printf("\n### %s curves: equal budget of %lld steps (FIFO: 20 full trials)\n\n",
              FamilyName(f), static_cast<long long>(budget));
  std::printf("| seed | FIFO best (true) | ASHA trials started | ASHA best (true) | better |\n"
              "|---|---|---|---|---|\n");
  int asha_wins = 0, ties = 0;
  for (int s = 0; s < seeds; ++s) {
    RunConfig c;
    c.family = f;
    c.seed = s;
    c.max_trials = 1000;
    c.step_budget = budget;
    c.kind = Kind::kFifo;
    const RunResult fifo = Run(c);
    c.kind = Kind::kAsha;
    const RunResult asha = Run(c);
    const auto fp = fifo.PickAt(budget), ap = asha.PickAt(budget);
    const double ft = fp ? fp->truth : kInf, at = ap ? ap->truth : kInf;
    asha_wins += at < ft;
    ties += at == ft;
    std::printf("| %d | %s (%s) | %d | %s (%s) | %s |\n", s, Fmt(fp ? fp->observed : kInf).c_str(),
                Fmt(ft).c_str(), asha.trials, Fmt(ap ? ap->observed : kInf).c_str(),
                Fmt(at).c_str(), at < ft ? "ASHA" : at > ft ? "FIFO" : "same trial");
  }
  std::printf("\nASHA's pick is better on %d of %d seeds (%d the same configuration).\n",
              asha_wins, seeds, ties);
}

// `pruner` is kAsha or kMedian (--tpe-pruner).
void TpeTable(Family f, int seeds, int trials, Kind pruner) {
  const char* name = pruner == Kind::kMedian ? "median" : "ASHA";
  std::printf("\n### %s curves: TPE, FIFO (%d trials) vs %s\n\n", FamilyName(f), trials, name);
  std::printf("| seed | FIFO+TPE steps | FIFO+TPE pick: observed (true) | %s+TPE steps until its "
              "pick is as good | fraction | %s+TPE pick at 40%% of FIFO's steps (true) |\n"
              "|---|---|---|---|---|---|\n", name, name);
  std::vector<double> fractions;
  int within = 0, good_at_40 = 0;
  for (int s = 0; s < seeds; ++s) {
    RunConfig c;
    c.family = f;
    c.seed = s;
    c.tpe = true;
    c.kind = Kind::kFifo;
    c.max_trials = trials;
    const RunResult fifo = Run(c);
    const Completion fp = *fifo.PickAt(fifo.steps);
    c.kind = pruner;
    c.max_trials = 100000;
    c.step_budget = 2 * fifo.steps;  // look no further than twice FIFO's spend
    const RunResult asha = Run(c);
    const int64_t reach = asha.StepsToReach(fp.truth);
    const double fraction = reach < 0 ? kInf : static_cast<double>(reach) / fifo.steps;
    const auto at40 = asha.PickAt(static_cast<int64_t>(0.4 * static_cast<double>(fifo.steps)));
    fractions.push_back(fraction);
    within += fraction <= 0.4;
    good_at_40 += at40 && at40->truth <= fp.truth;
    std::printf("| %d | %lld | %.4f (%.4f) | %s | %s | %s (%s) |\n", s,
                static_cast<long long>(fifo.steps), fp.observed, fp.truth,
                reach < 0 ? "not within 2x" : std::to_string(reach).c_str(),
                Fmt(fraction).c_str(), Fmt(at40 ? at40->observed : kInf).c_str(),
                Fmt(at40 ? at40->truth : kInf).c_str());
  }
  std::printf("\nMedian fraction %s; %s+TPE's pick is at least as good as FIFO+TPE's within "
              "40%% of FIFO's steps on %d of %d seeds (and still at exactly 40%% on %d).\n",
              Fmt(Median(fractions)).c_str(), name, within, seeds, good_at_40);
}

void DecisionCost() {
  RunConfig c;
  c.kind = Kind::kAsha;
  c.max_trials = 2000;
  const RunResult asha = Run(c);
  c.kind = Kind::kMedian;
  c.max_trials = 300;
  const RunResult median = Run(c);
  std::printf("\n### Decision cost\n\nASHA: %.0f ns per OnTrialResult (2000 trials, %lld reports); "
              "median rule: %.0f ns (300 trials, %lld reports).\n",
              asha.decision_ns, static_cast<long long>(asha.steps), median.decision_ns,
              static_cast<long long>(median.steps));
}

// Spearman's rank correlation of a and b (no ties: the values are continuous).
double Spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> order(v.size());
    for (size_t i = 0; i < v.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
    std::vector<double> r(v.size());
    for (size_t k = 0; k < order.size(); ++k) r[order[k]] = static_cast<double>(k);
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size()), mean = (n - 1) / 2;
  double cov = 0, var = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    var += (ra[i] - mean) * (ra[i] - mean);
  }
  return cov / var;
}

void RungRankTable(Family f) {
  constexpr int kConfigs = 10000;
  constexpr uint64_t kSeed = 424242;
  std::vector<double> truth(kConfigs);
  for (int i = 0; i < kConfigs; ++i) truth[i] = FinalLoss(Uniform(kSeed, i, 1), Uniform(kSeed, i, 2));
  std::vector<double> sorted = truth;
  std::sort(sorted.begin(), sorted.end());
  const double best_decile = sorted[kConfigs / 10 - 1];
  std::printf("\n### What each milestone sees: %s curves (%d random configurations)\n\n"
              "| milestone t | Spearman(loss at t, true final) | best 10%% kept by a top-third cut at t |\n"
              "|---|---|---|\n",
              f == Family::kCrossing ? "crossing" : "parallel", kConfigs);
  for (int64_t t : {1, 2, 3, 6, 9, 18, 27, 54, 72, 81}) {
    std::vector<double> at(kConfigs);
    for (int i = 0; i < kConfigs; ++i)
      at[i] = Loss(f, kSeed, i, Uniform(kSeed, i, 1), Uniform(kSeed, i, 2), t);
    std::vector<double> cut = at;
    std::nth_element(cut.begin(), cut.begin() + kConfigs / 3, cut.end());
    const double keep_below = cut[kConfigs / 3];
    int best = 0, kept = 0;
    for (int i = 0; i < kConfigs; ++i) {
      if (truth[i] > best_decile) continue;
      ++best;
      if (at[i] < keep_below) ++kept;
    }
    std::printf("| %lld | %+.3f | %.3f |\n", static_cast<long long>(t), Spearman(at, truth),
                static_cast<double>(kept) / best);
  }
}

}  // namespace
}  // namespace tune

int main(int argc, char** argv) {
  int seeds = 10, trials = 60;
  bool tpe_only = false, rung_ranks = false;
  tune::Kind tpe_pruner = tune::Kind::kAsha;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--tpe-only")) tpe_only = true;
    else if (!std::strcmp(argv[i], "--rung-ranks")) rung_ranks = true;
    else if (has_value && !std::strcmp(argv[i], "--tpe-pruner") && !std::strcmp(argv[i + 1], "median")) {
      tpe_pruner = tune::Kind::kMedian;
      ++i;
    } else if (has_value && !std::strcmp(argv[i], "--tpe-pruner") && !std::strcmp(argv[i + 1], "asha")) {
      ++i;
    }
    else if (has_value && !std::strcmp(argv[i], "--seeds")) seeds = std::atoi(argv[++i]);
    else if (has_value && !std::strcmp(argv[i], "--trials")) trials = std::atoi(argv[++i]);
    else if (has_value && !std::strcmp(argv[i], "--grace-period")) tune::g_asha_grace_period = std::atoll(argv[++i]);
    else if (has_value && !std::strcmp(argv[i], "--brackets")) tune::g_asha_brackets = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: asha_bench [--seeds N] [--trials N] [--grace-period N] [--brackets N] [--tpe-only [--tpe-pruner asha|median] | --rung-ranks]\n");
      return 2;
    }
  }
  std::printf("ASHA grace_period %lld, brackets %d, reduction_factor 3, max_t 81\n",
              static_cast<long long>(tune::g_asha_grace_period), tune::g_asha_brackets);
  using tune::Family;
  if (rung_ranks) {
    for (Family f : {Family::kCrossing, Family::kParallel}) tune::RungRankTable(f);
    return 0;
  }
  if (tpe_only) {
    for (Family f : {Family::kCrossing, Family::kParallel}) tune::TpeTable(f, seeds, trials, tpe_pruner);
    return 0;
  }
  for (Family f : {Family::kCrossing, Family::kParallel}) tune::FixedTrialTable(f, seeds, trials);
  for (Family f : {Family::kCrossing, Family::kParallel}) tune::EqualBudgetTable(f, seeds);
  for (Family f : {Family::kCrossing, Family::kParallel}) tune::TpeTable(f, seeds, trials, tune::Kind::kAsha);
  tune::DecisionCost();
  return 0;
}
