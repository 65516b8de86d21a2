// PbtScheduler (schedulers/pbt_scheduler.h): Ray's on_trial_result
// semantics, replay determinism, and the synch barrier fixes.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <random>

#include "schedulers/pbt_scheduler.h"

namespace tune {
namespace {

Trial MakeTrial(int number, double lr) {
  Trial t;
  t.id = 500 + number;
  t.number = number;
  t.params = {{"lr", lr}, {"batch", int64_t{32}}};
  return t;
}

PbtOptions Options(bool synch = false) {
  PbtOptions o;
  o.perturbation_interval = 10;
  o.max_t = 100;
  o.maximize = true;
  o.seed = 42;
  o.synch = synch;
  o.hyperparam_mutations = {{"lr", FloatDistribution{1e-4, 1.0, true, {}}}};
  return o;
}

TEST_CASE("ValidatePbtOptions names the field", "[pbt]") {
  CHECK(ValidatePbtOptions(Options()).ok());
  PbtOptions o = Options();
  o.quantile_fraction = 0.6;
  CHECK(ValidatePbtOptions(o).message().find("scheduler.quantile_fraction") != std::string::npos);
  o = Options();
  o.max_t = 0;
  CHECK(ValidatePbtOptions(o).message().find("scheduler.max_t") != std::string::npos);
  o = Options();
  o.perturbation_factors = {1.2, -1};
  CHECK(ValidatePbtOptions(o).message().find("scheduler.perturbation_factors") != std::string::npos);
  o = Options();
  o.hyperparam_mutations.clear();
  CHECK(ValidatePbtOptions(o).message().find("scheduler.hyperparam_mutations") != std::string::npos);
  o = Options();
  o.resample_probability = 1.5;
  CHECK(ValidatePbtOptions(o).message().find("scheduler.resample_probability") != std::string::npos);
}

TEST_CASE("A bottom trial at its interval exploits a donor from the top", "[pbt]") {
  PbtScheduler pbt(Options());
  std::vector<Trial> t;
  for (int n = 0; n < 4; ++n) {
    t.push_back(MakeTrial(n, 0.01 * (n + 1)));
    pbt.OnTrialAdd(t.back());
  }
  // Between checks: continue, whatever the objective.
  for (int n = 0; n < 4; ++n) CHECK(pbt.OnTrialResult(t[n], 5, n).action == Action::kContinue);
  // Best first: with one scored trial there are no quantiles yet; then
  // each newcomer is the worst of n = 2 and 3 (bottom of one trial).
  CHECK(pbt.OnTrialResult(t[3], 10, 3).action == Action::kContinue);
  for (int n = 2; n >= 1; --n) {
    Decision d = pbt.OnTrialResult(t[n], 10, n);
    CHECK(d.action == Action::kPause);
    REQUIRE(d.exploit);
    CHECK(d.exploit->donor == t[3].id);
  }
  // n = 4, q = 0.25: bottom {0}, top {3}.
  Decision d = pbt.OnTrialResult(t[0], 10, 0.0);
  CHECK(d.action == Action::kPause);
  REQUIRE(d.exploit);
  CHECK(d.exploit->donor == t[3].id);
  // The donor's parameters, explored: lr from 0.04, batch copied.
  const double lr = std::get<double>(d.exploit->params.at("lr"));
  CHECK((lr == Approx(0.048) || lr == Approx(0.032) || (lr >= 1e-4 && lr <= 1.0)));
  CHECK(d.exploit->params.at("batch") == ParamValue(int64_t{32}));
  CHECK(d.reason.find("exploit trial 3") != std::string::npos);
  // Only the trial at its interval is checked: trial 1 (now in the middle)
  // reports again before its next interval and continues.
  CHECK(pbt.OnTrialResult(t[1], 15, -5).action == Action::kContinue);

  // The tuner carries it out: the recipient takes the donor's
  // last_perturbation_time (10) and continues from step 10.
  Trial recipient = t[0];
  recipient.params = d.exploit->params;
  pbt.OnTrialExploited(recipient, t[3], 10);
  CHECK(pbt.CheckTimes(t[0].id) == std::make_pair(int64_t{10}, int64_t{10}));
  CHECK(pbt.OnTrialResult(recipient, 19, 0.0).action == Action::kContinue);
}

TEST_CASE("No check before burn_in_period, and max_t stops as completed", "[pbt]") {
  PbtOptions o = Options();
  o.burn_in_period = 30;
  PbtScheduler pbt(o);
  Trial good = MakeTrial(0, 0.1), bad = MakeTrial(1, 0.2);
  pbt.OnTrialAdd(good);
  pbt.OnTrialAdd(bad);
  for (int64_t step : {10, 20, 29}) {
    CHECK(pbt.OnTrialResult(good, step, 10).action == Action::kContinue);
    Decision d = pbt.OnTrialResult(bad, step, -10);
    CHECK(d.action == Action::kContinue);
    CHECK(!d.exploit);
  }
  CHECK(pbt.OnTrialResult(good, 30, 10).action == Action::kContinue);
  Decision d = pbt.OnTrialResult(bad, 30, -10);
  REQUIRE(d.exploit);
  CHECK(d.exploit->donor == good.id);
  Decision stop = pbt.OnTrialResult(good, 100, 10);
  CHECK(stop.action == Action::kStop);
  CHECK(!stop.rung);
  CHECK(stop.reason.find("max_t") != std::string::npos);
}

TEST_CASE("Asynchronous: a trial at its interval pauses while others wait", "[pbt]") {
  PbtScheduler pbt(Options());
  Trial a = MakeTrial(0, 0.1), b = MakeTrial(1, 0.2);
  pbt.OnTrialAdd(a);
  pbt.OnTrialAdd(b);
  pbt.SetWaitingTrials(3);
  CHECK(pbt.OnTrialResult(a, 5, 1).action == Action::kContinue);  // not at its interval
  Decision d = pbt.OnTrialResult(a, 10, 1);
  CHECK(d.action == Action::kPause);
  CHECK(!d.exploit);
  CHECK(d.reason.find("wait") != std::string::npos);
  pbt.SetWaitingTrials(0);
  CHECK(pbt.OnTrialResult(a, 20, 1).action == Action::kContinue);
  // b, worst, exploits a; the donor has no checkpoint: b gets what it would
  // have got without the exploit (pause, as trials wait).
  pbt.SetWaitingTrials(1);
  d = pbt.OnTrialResult(b, 10, 0);
  CHECK(d.action == Action::kPause);
  REQUIRE(d.exploit);
  CHECK(pbt.OnExploitSkipped(b) == Action::kPause);
  pbt.SetWaitingTrials(0);
  d = pbt.OnTrialResult(b, 20, 0);
  REQUIRE(d.exploit);
  CHECK(pbt.OnExploitSkipped(b) == Action::kContinue);
  CHECK(pbt.MayResume(a));
  CHECK(pbt.UsesCheckpoints());
}

// Feeds a fixed event sequence (reports, exploits carried out as decided,
// completions) and returns every decision, flattened to text.
std::vector<std::string> Run(PbtScheduler& pbt, int population, bool replay_exploits) {
  std::vector<Trial> t;
  for (int n = 0; n < population; ++n) {
    t.push_back(MakeTrial(n, 0.001 * (n + 1)));
    pbt.OnTrialAdd(t.back());
  }
  std::vector<std::string> out;
  for (int64_t step = 1; step <= 100; ++step) {
    for (int n = 0; n < population; ++n) {
      // Objective: better for lr near 0.01, plus the step.
      const double lr = std::get<double>(t[n].params.at("lr"));
      const double objective = step - 100 * std::abs(std::log10(lr) + 2) + 0.01 * ((n * 7 + step) % 5);
      pbt.SetWaitingTrials(n % 2);
      Decision d = pbt.OnTrialResult(t[n], step, objective);
      std::string line = std::to_string(step) + "/" + std::to_string(n) + ":" +
                         std::to_string(static_cast<int>(d.action));
      if (d.exploit) {
        line += " donor " + std::to_string(d.exploit->donor) + " " + ParamsToJson(d.exploit->params);
        if (replay_exploits) {
          t[n].params = d.exploit->params;
          const Trial& donor = t[static_cast<size_t>(d.exploit->donor - 500)];
          pbt.OnTrialExploited(t[n], donor, step);
        }
      }
      out.push_back(line);
    }
  }
  for (const Trial& x : t) pbt.OnTrialComplete(x);
  return out;
}

TEST_CASE("Replay: two schedulers fed the same events decide the same", "[pbt]") {
  PbtScheduler a(Options()), b(Options());
  std::vector<std::string> da = Run(a, 6, true), db = Run(b, 6, true);
  CHECK(da == db);
  int exploits = 0;
  for (const std::string& s : da) exploits += s.find("donor") != std::string::npos;
  CHECK(exploits > 5);
  // Another seed explores otherwise.
  PbtOptions o = Options();
  o.seed = 43;
  PbtScheduler c(o);
  CHECK(Run(c, 6, true) != da);
}

TEST_CASE("Synch: the population waits at the barrier and the last to arrive decides", "[pbt]") {
  PbtOptions o = Options(true);
  o.population = 4;
  PbtScheduler pbt(o);
  std::vector<Trial> t;
  for (int n = 0; n < 4; ++n) {
    t.push_back(MakeTrial(n, 0.01 * (n + 1)));
    pbt.OnTrialAdd(t.back());
  }
  for (int n = 0; n < 3; ++n) {
    Decision d = pbt.OnTrialResult(t[n], 10, n);
    CHECK(d.action == Action::kPause);
    CHECK(!d.exploit);
    CHECK(!pbt.MayResume(t[n]));
  }
  CHECK(pbt.TakeExploits().empty());
  // The last trial is the worst: it exploits in its own decision; the
  // population moves on to 20.
  Decision d = pbt.OnTrialResult(t[3], 10, -1);
  CHECK(d.action == Action::kPause);
  REQUIRE(d.exploit);
  CHECK(d.exploit->donor == t[2].id);
  CHECK(pbt.NextPerturbationSync() == 20);
  for (int n = 0; n < 4; ++n) CHECK(pbt.MayResume(t[n]));
  CHECK(pbt.TakeExploits().empty());

  // Next interval: the worst arrives first and waits; the last decides for
  // it through TakeExploits, once.
  CHECK(pbt.OnTrialResult(t[0], 20, -5).action == Action::kPause);
  CHECK(pbt.OnTrialResult(t[1], 20, 1).action == Action::kPause);
  CHECK(pbt.OnTrialResult(t[2], 20, 2).action == Action::kPause);
  d = pbt.OnTrialResult(t[3], 20, 3);
  CHECK(!d.exploit);
  auto taken = pbt.TakeExploits();
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].first == t[0].id);
  CHECK(taken[0].second.donor == t[3].id);
  CHECK(pbt.TakeExploits().empty());
  CHECK(pbt.OnExploitSkipped(t[0]) == Action::kPause);
}

TEST_CASE("Synch replay: a recorded exploit of a paused trial is not handed out again", "[pbt]") {
  PbtOptions o = Options(true);
  o.population = 3;
  PbtScheduler live(o), replay(o);
  Trial a = MakeTrial(0, 0.1), b = MakeTrial(1, 0.2), c = MakeTrial(2, 0.3);
  std::vector<std::pair<TrialId, Exploit>> taken;
  for (PbtScheduler* s : {&live, &replay}) {
    for (const Trial* x : {&a, &b, &c}) s->OnTrialAdd(*x);
    s->OnTrialResult(a, 10, -3);
    s->OnTrialResult(b, 10, 2);
    CHECK(!s->OnTrialResult(c, 10, 5).exploit);
  }
  taken = live.TakeExploits();
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].first == a.id);
  // The tuner carried it out and recorded it; --resume replays the record
  // right after c's report: the same exploit, and nothing left to take.
  Trial a2 = a;
  a2.params = taken[0].second.params;
  live.OnTrialExploited(a2, c, 10);
  replay.OnTrialExploited(a2, c, 10);
  CHECK(replay.TakeExploits().empty());
  CHECK(live.CheckTimes(a.id) == replay.CheckTimes(a.id));
  CHECK(live.NextPerturbationSync() == replay.NextPerturbationSync());
  // Both decide the same from there on.
  for (PbtScheduler* s : {&live, &replay}) {
    s->OnTrialResult(a2, 20, 9);
    s->OnTrialResult(b, 20, 1);
  }
  Decision x = live.OnTrialResult(c, 20, 4), y = replay.OnTrialResult(c, 20, 4);
  CHECK(x.action == y.action);
  CHECK(live.TakeExploits().size() == 1);
  auto again = replay.TakeExploits();
  REQUIRE(again.size() == 1);
  CHECK(again[0].first == b.id);
}

TEST_CASE("Synch: a failed or finished trial does not hang the barrier (ray#12122, ray#23424)", "[pbt]") {
  PbtOptions o = Options(true);
  o.population = 3;
  PbtScheduler pbt(o);
  Trial a = MakeTrial(0, 0.1), b = MakeTrial(1, 0.2), c = MakeTrial(2, 0.3);
  for (const Trial* x : {&a, &b, &c}) pbt.OnTrialAdd(*x);
  CHECK(pbt.OnTrialResult(a, 10, 1).action == Action::kPause);
  CHECK(pbt.OnTrialResult(b, 10, 2).action == Action::kPause);
  CHECK(!pbt.MayResume(a));
  CHECK(!pbt.MayResume(b));
  // c fails before the barrier: the two waiting trials are perturbed.
  pbt.OnTrialError(c);
  CHECK(pbt.MayResume(a));
  CHECK(pbt.MayResume(b));
  auto taken = pbt.TakeExploits();
  REQUIRE(taken.size() == 1);  // n = 2, q = 0.25: a exploits b
  CHECK(taken[0].first == a.id);
  CHECK(taken[0].second.donor == b.id);
  // c is retried: it counts again from its next report, and the barrier
  // waits for it at 20.
  CHECK(pbt.OnTrialResult(c, 5, 0).action == Action::kContinue);
  CHECK(pbt.OnTrialResult(a, 20, 1).action == Action::kPause);
  CHECK(pbt.OnTrialResult(b, 20, 2).action == Action::kPause);
  CHECK(!pbt.MayResume(a));
  // c finishes (stopped by the tuner): released again.
  pbt.OnTrialComplete(c);
  CHECK(pbt.MayResume(a));
  CHECK(pbt.NextPerturbationSync() == 30);

  // Trials not created yet hold the barrier.
  o.population = 5;
  PbtScheduler lazy(o);
  lazy.OnTrialAdd(a);
  lazy.OnTrialAdd(b);
  CHECK(lazy.OnTrialResult(a, 10, 1).action == Action::kPause);
  Decision d = lazy.OnTrialResult(b, 10, 2);
  CHECK(d.reason.find("waiting") != std::string::npos);
  CHECK(!lazy.MayResume(a));
}

// Ray's pbt_function example (python/ray/tune/examples/pbt_function.py):
// accuracy grows fastest with lr near 0.01 below accuracy 100 and near
// 0.001 above, so the best lr moves during training. Trials take one step
// each in turn; an exploit copies the donor's state (its checkpoint at its
// last step). Returns the population's best final accuracy.
double PbtFunctionToy(uint64_t seed, bool exploit) {
  PbtOptions o;
  o.perturbation_interval = 10;
  o.max_t = 300;
  o.maximize = true;
  o.seed = seed;
  o.resample_probability = 0.25;
  o.hyperparam_mutations = {{"lr", FloatDistribution{1e-4, 1e-1, true, {}}}};
  o.population = 8;
  PbtScheduler pbt(o);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1), log_lr(std::log(1e-4), std::log(1e-1));
  std::normal_distribution<double> noise(0, 1);
  std::vector<Trial> trials;
  std::vector<double> accuracy(8, 0.0);
  for (int n = 0; n < 8; ++n) {
    Trial t;
    t.id = 900 + n;
    t.number = n;
    t.params = {{"lr", std::exp(log_lr(rng))}};
    trials.push_back(t);
    pbt.OnTrialAdd(t);
  }
  for (int64_t step = 1; step <= o.max_t; ++step) {
    for (int n = 0; n < 8; ++n) {
      const double lr = std::get<double>(trials[n].params.at("lr"));
      const double optimal = accuracy[n] < 100 ? 0.01 : 0.001;
      const double q_err = std::max(lr, optimal) / std::min(lr, optimal);
      if (q_err < 3) accuracy[n] += unit(rng) / q_err;
      else if (lr > optimal) accuracy[n] -= (q_err - 3) * unit(rng);
      accuracy[n] = std::max(0.0, accuracy[n] + 2 * noise(rng));
      Decision d = pbt.OnTrialResult(trials[n], step, accuracy[n]);
      if (d.action == Action::kStop) continue;
      if (exploit && d.exploit) {
        const size_t donor = static_cast<size_t>(d.exploit->donor - 900);
        accuracy[n] = accuracy[donor];  // the donor's newest checkpoint
        trials[n].params = d.exploit->params;
        pbt.OnTrialExploited(trials[n], trials[donor], step);
      }
    }
  }
  return *std::max_element(accuracy.begin(), accuracy.end());
}

TEST_CASE("PBT beats the same population without exploits on Ray's pbt_function toy", "[pbt]") {
  std::vector<double> with, without;
  for (uint64_t seed = 1; seed <= 9; ++seed) {
    with.push_back(PbtFunctionToy(seed, true));
    without.push_back(PbtFunctionToy(seed, false));
  }
  std::sort(with.begin(), with.end());
  std::sort(without.begin(), without.end());
  INFO("median best accuracy with PBT " << with[4] << ", without " << without[4]);
  CHECK(with[4] > 1.2 * without[4]);
}

}  // namespace
}  // namespace tune
