// AshaScheduler unit tests: milestones, cutoffs, min/max symmetry, max_t,
// skipped milestones, bracket draws, replay.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <random>

#include "schedulers/asha_scheduler.h"

namespace tune {
namespace {

Trial MakeTrial(int number) {
  Trial t;
  t.id = 500 + number;
  t.number = number;
  t.state = TrialState::kRunning;
  return t;
}

AshaOptions Options(bool maximize) {
  AshaOptions o;
  o.max_t = 81;
  o.grace_period = 1;
  o.reduction_factor = 3;
  o.brackets = 1;
  o.maximize = maximize;
  return o;
}

TEST_CASE("Milestones are grace_period * rf^(k+s) per bracket", "[asha]") {
  AshaOptions o = Options(false);
  o.brackets = 3;
  AshaScheduler asha(o);
  CHECK(asha.Milestones(0) == std::vector<double>{1, 3, 9, 27, 81});
  CHECK(asha.Milestones(1) == std::vector<double>{3, 9, 27, 81});
  CHECK(asha.Milestones(2) == std::vector<double>{9, 27, 81});
  o.grace_period = 20;
  o.max_t = 200;
  o.brackets = 1;
  CHECK(AshaScheduler(o).Milestones(0) == std::vector<double>{20, 60, 180});
}

TEST_CASE("Bracket probabilities are Ray's softmax over rung counts", "[asha]") {
  AshaOptions o = Options(false);
  o.brackets = 3;
  AshaScheduler asha(o);
  const auto p = asha.BracketProbabilities();
  const double z = 1 + std::exp(-1.0) + std::exp(-2.0);
  REQUIRE(p.size() == 3);
  CHECK(p[0] == Approx(1 / z));
  CHECK(p[1] == Approx(std::exp(-1.0) / z));
  CHECK(p[2] == Approx(std::exp(-2.0) / z));
  // Seeded draws follow these probabilities (deterministic for the seed).
  std::vector<int> counts(3);
  for (int n = 0; n < 6000; ++n) {
    Trial t = MakeTrial(n);
    asha.OnTrialAdd(t);
    counts[*asha.BracketOf(t.id)]++;
  }
  for (int s = 0; s < 3; ++s) CHECK(counts[s] / 6000.0 == Approx(p[s]).margin(0.03));
  // The draw depends on (seed, number) only: order of adds does not matter.
  AshaScheduler again(o);
  for (int n = 5999; n >= 0; --n) again.OnTrialAdd(MakeTrial(n));
  for (int n = 0; n < 6000; ++n) CHECK(again.BracketOf(500 + n) == asha.BracketOf(500 + n));
}

TEST_CASE("Cutoff is the (1-1/rf) percentile and an empty rung passes", "[asha]") {
  AshaScheduler asha(Options(/*maximize=*/true));
  Trial a = MakeTrial(0), b = MakeTrial(1), c = MakeTrial(2), d = MakeTrial(3);
  for (Trial* t : {&a, &b, &c, &d}) asha.OnTrialAdd(*t);
  CHECK(asha.OnTrialResult(a, 1, 2.0).action == Action::kContinue);  // empty rung
  CHECK(asha.OnTrialResult(b, 1, 4.0).action == Action::kContinue);  // 4 >= 2
  // Cutoff of {2, 4} at 66.67%: 2 + 2 * 2/3.
  REQUIRE(asha.Cutoff(0, 1).has_value());
  CHECK(*asha.Cutoff(0, 1) == Approx(2 + 2.0 * 2 / 3));
  const Decision stop = asha.OnTrialResult(c, 1, 3.0);  // 3 < 3.333
  CHECK(stop.action == Action::kStop);
  REQUIRE(stop.rung.has_value());
  CHECK(*stop.rung == 1);
  CHECK(stop.reason.find("rung 1") != std::string::npos);
  // The stopped trial's reward was recorded: cutoff of {2, 3, 4} is 3.333.
  CHECK(*asha.Cutoff(0, 1) == Approx(3 + 1.0 / 3));
  CHECK(asha.OnTrialResult(d, 1, 3.5).action == Action::kContinue);
  // A report between milestones changes nothing.
  CHECK(asha.OnTrialResult(d, 2, 0.0).action == Action::kContinue);
}

TEST_CASE("Min mode is max mode with the sign flipped", "[asha]") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 1);
  AshaScheduler lo(Options(false)), hi(Options(true));
  std::vector<Trial> trials;
  for (int n = 0; n < 20; ++n) {
    trials.push_back(MakeTrial(n));
    lo.OnTrialAdd(trials.back());
    hi.OnTrialAdd(trials.back());
  }
  int stops = 0;
  std::vector<bool> alive(20, true);
  for (int step = 1; step <= 81; ++step) {
    for (int n = 0; n < 20; ++n) {
      if (!alive[n]) continue;
      const double v = n * 0.1 + noise(rng);
      const Decision a = lo.OnTrialResult(trials[n], step, v);
      const Decision b = hi.OnTrialResult(trials[n], step, -v);
      REQUIRE(a.action == b.action);
      REQUIRE(a.rung == b.rung);
      if (a.action == Action::kStop) {
        alive[n] = false;
        ++stops;
        lo.OnTrialComplete(trials[n]);
        hi.OnTrialComplete(trials[n]);
      }
    }
  }
  CHECK(stops == 20);  // every trial is pruned or reaches max_t
}

TEST_CASE("A report at max_t stops without a rung (budget used up)", "[asha]") {
  AshaScheduler asha(Options(false));
  Trial t = MakeTrial(0);
  asha.OnTrialAdd(t);
  CHECK(asha.OnTrialResult(t, 80, 1.0).action == Action::kContinue);
  const Decision d = asha.OnTrialResult(t, 81, 1.0);
  CHECK(d.action == Action::kStop);
  CHECK_FALSE(d.rung.has_value());
  CHECK(d.reason.find("max_t") != std::string::npos);

  AshaOptions o = Options(false);
  o.stop_last_trials = false;
  AshaScheduler open(o);
  open.OnTrialAdd(t);
  CHECK(open.OnTrialResult(t, 100, 1.0).action == Action::kContinue);
}

TEST_CASE("Skipped milestones: the highest unrecorded one is checked, lower ones later",
          "[asha]") {
  AshaScheduler asha(Options(false));
  Trial a = MakeTrial(0), b = MakeTrial(1);
  asha.OnTrialAdd(a);
  asha.OnTrialAdd(b);
  // a reports every step: recorded at 1, 3, 9 with value 1.0.
  for (int s = 1; s <= 9; ++s) asha.OnTrialResult(a, s, 1.0);
  // b reports every 7 steps (min mode: larger loss is worse).
  CHECK(asha.OnTrialResult(b, 7, 0.5).action == Action::kContinue);  // rung 3
  const Decision d = asha.OnTrialResult(b, 14, 2.0);                 // rung 9: 2 > 1
  CHECK(d.action == Action::kStop);
  CHECK(d.rung == 9);
  // Ray's controller calls on_trial_complete(last_result) right after the
  // STOP, recording the stopping report at the next free rung (1): rung 1
  // holds {-1, -2} (sign-flipped) at once.
  CHECK(*asha.Cutoff(0, 1) == Approx(-2.0 + 1.0 * 2 / 3).epsilon(1e-12));
  // Reports after the stop change nothing and repeat the stop.
  const double before = *asha.Cutoff(0, 1);
  CHECK(asha.OnTrialResult(b, 21, 0.1).action == Action::kStop);
  CHECK(*asha.Cutoff(0, 1) == before);
  // The process's exit, whenever the tuner sees it, changes nothing either.
  b.intermediate = {{7, 0.5}, {14, 2.0}, {21, 0.1}};
  asha.OnTrialComplete(b);
  CHECK(*asha.Cutoff(0, 1) == before);
  CHECK(*asha.Cutoff(0, 9) == Approx(-2.0 + 1.0 * 2 / 3));  // {-1, -2}
}

TEST_CASE("A trial that ends on its own is recorded once more on completion", "[asha]") {
  AshaScheduler asha(Options(false));
  Trial a = MakeTrial(0), b = MakeTrial(1);
  asha.OnTrialAdd(a);
  asha.OnTrialAdd(b);
  asha.OnTrialResult(a, 1, 1.0);
  // b's program ends at step 5 after skipping step 1: its last report (5, 3.0)
  // goes to rung 3 when reported and to rung 1 on completion.
  CHECK(asha.OnTrialResult(b, 5, 3.0).action == Action::kContinue);  // empty rung 3
  CHECK(*asha.Cutoff(0, 1) == -1.0);
  b.intermediate = {{5, 3.0}};
  asha.OnTrialComplete(b);
  CHECK(*asha.Cutoff(0, 1) == Approx(-3.0 + 2.0 * 2 / 3));
  asha.OnTrialComplete(b);  // idempotent
  CHECK(*asha.Cutoff(0, 1) == Approx(-3.0 + 2.0 * 2 / 3));
}

TEST_CASE("NaN rewards never stop and are ignored by cutoffs", "[asha]") {
  AshaScheduler asha(Options(true));
  Trial a = MakeTrial(0), b = MakeTrial(1), c = MakeTrial(2);
  for (Trial* t : {&a, &b, &c}) asha.OnTrialAdd(*t);
  CHECK(asha.OnTrialResult(a, 1, std::nan("")).action == Action::kContinue);
  CHECK(asha.OnTrialResult(b, 1, std::nan("")).action == Action::kContinue);
  CHECK(std::isnan(*asha.Cutoff(0, 1)));
  CHECK(asha.OnTrialResult(c, 1, -100).action == Action::kContinue);  // NaN cutoff
  CHECK(*asha.Cutoff(0, 1) == -100);
}

TEST_CASE("Invalid options are rejected with the field name", "[asha]") {
  AshaOptions o = Options(false);
  CHECK(ValidateAshaOptions(o).ok());
  o.grace_period = 100;
  CHECK(ValidateAshaOptions(o).message().find("grace_period") != std::string::npos);
  o = Options(false);
  o.reduction_factor = 1;
  CHECK(ValidateAshaOptions(o).message().find("reduction_factor") != std::string::npos);
  o = Options(false);
  o.brackets = 0;
  CHECK(ValidateAshaOptions(o).IsInvalidArgument());
  o = Options(false);
  o.max_t = 0;
  CHECK(ValidateAshaOptions(o).IsInvalidArgument());
}

}  // namespace
}  // namespace tune
