// MedianStoppingRule unit tests.
#include <catch2/catch.hpp>
#include <cmath>

#include "schedulers/median_stopping_rule.h"

namespace tune {
namespace {

Trial MakeTrial(int number) {
  Trial t;
  t.id = 700 + number;
  t.number = number;
  return t;
}

MedianOptions Options(bool maximize, double grace = 2, int min_samples = 2) {
  MedianOptions o;
  o.grace_period = grace;
  o.min_samples_required = min_samples;
  o.maximize = maximize;
  return o;
}

// Three trials with running averages 3, 2 and 1 over steps 2..4, fed worst
// first so that none of them is stopped.
void FeedReference(MedianStoppingRule& rule, double sign) {
  for (int n = 0; n < 3; ++n) {
    Trial t = MakeTrial(n);
    rule.OnTrialAdd(t);
    for (int s = 1; s <= 4; ++s) {
      REQUIRE(rule.OnTrialResult(t, s, sign * (3 - n)).action == Action::kContinue);
    }
  }
}

TEST_CASE("Stops a trial whose best is worse than the median of running averages",
          "[median]") {
  for (bool maximize : {false, true}) {
    const double sign = maximize ? -1 : 1;  // min: larger is worse
    MedianStoppingRule rule(Options(maximize));
    FeedReference(rule, sign);
    Trial bad = MakeTrial(10), good = MakeTrial(11), tie = MakeTrial(12);
    CHECK(rule.OnTrialResult(bad, 1, sign * 0.5).action == Action::kContinue);  // grace
    // best so far is 0.5 (from before the grace period): better than 2.
    CHECK(rule.OnTrialResult(bad, 2, sign * 9).action == Action::kContinue);
    // A best equal to the median (2 of {1, 2, 3}) continues: only strictly
    // worse stops.
    CHECK(rule.OnTrialResult(tie, 3, sign * 2).action == Action::kContinue);
    Trial worse = MakeTrial(13);
    const Decision d = rule.OnTrialResult(worse, 3, sign * 2.5);  // median of {1,2,2,3}
    CHECK(d.action == Action::kStop);
    CHECK(d.rung == 3);
    CHECK(d.reason.find("median") != std::string::npos);
    CHECK(rule.OnTrialResult(good, 3, sign * 1.5).action == Action::kContinue);
  }
}

TEST_CASE("Too few other trials beyond the step: continue", "[median]") {
  MedianStoppingRule rule(Options(false, 1, 3));
  Trial a = MakeTrial(0), b = MakeTrial(1), c = MakeTrial(2);
  rule.OnTrialResult(a, 5, 1.0);
  rule.OnTrialResult(b, 5, 1.0);
  CHECK(rule.OnTrialResult(c, 5, 100.0).action == Action::kContinue);  // 2 < 3 samples
  Trial d = MakeTrial(3);
  // Only trials whose latest report is at step >= 6 count: none.
  CHECK(rule.OnTrialResult(d, 6, 100.0).action == Action::kContinue);
  Trial e = MakeTrial(4);
  CHECK(rule.OnTrialResult(e, 5, 100.0).action == Action::kStop);  // a, b, c, d at >= 5
}

TEST_CASE("Soft stop pauses, then lets the trial run unchecked", "[median]") {
  MedianOptions o = Options(false);
  o.hard_stop = false;
  MedianStoppingRule rule(o);
  FeedReference(rule, 1);
  Trial t = MakeTrial(9);
  CHECK(rule.OnTrialResult(t, 3, 50).action == Action::kPause);
  CHECK(rule.OnTrialResult(t, 4, 60).action == Action::kContinue);
}

TEST_CASE("Completion counts the last report once more, as Ray does", "[median]") {
  // Trial 0 reports 0 at step 2 and 3 at step 3: running average at 3 is 1.5;
  // after completion its last report counts twice: (0 + 3 + 3) / 3 = 2.
  MedianStoppingRule rule(Options(false, 2, 1));
  Trial a = MakeTrial(0), b = MakeTrial(1);
  rule.OnTrialResult(a, 2, 0);
  rule.OnTrialResult(a, 3, 3);
  MedianStoppingRule without(Options(false, 2, 1));
  without.OnTrialResult(a, 2, 0);
  without.OnTrialResult(a, 3, 3);
  a.intermediate = {{2, 0}, {3, 3}};
  rule.OnTrialComplete(a);
  // b's best 1.8 is worse than 1.5 but better than 2.
  CHECK(without.OnTrialResult(b, 3, 1.8).action == Action::kStop);
  CHECK(rule.OnTrialResult(b, 3, 1.8).action == Action::kContinue);
}

TEST_CASE("A stopped trial's stopping report counts twice at once", "[median]") {
  MedianStoppingRule rule(Options(false, /*grace=*/1, /*min_samples=*/1));
  Trial r = MakeTrial(0), s = MakeTrial(1);
  for (int t = 1; t <= 4; ++t) REQUIRE(rule.OnTrialResult(r, t, 1).action == Action::kContinue);
  REQUIRE(rule.OnTrialResult(s, 5, 1.5).action == Action::kContinue);  // nobody beyond 5
  REQUIRE(rule.OnTrialResult(r, 5, 1).action == Action::kContinue);
  REQUIRE(rule.OnTrialResult(r, 6, 1).action == Action::kContinue);
  REQUIRE(rule.OnTrialResult(s, 6, 3).action == Action::kStop);  // best 1.5 > median 1
  // s's running average at 6 is now (1.5 + 3 + 3) / 3 = 2.5 (Ray appends the
  // stopping result again), so the median of {1, 2.5} is 1.75; without the
  // repeat it would be 1.625 and a best of 1.7 would stop.
  CHECK(rule.OnTrialResult(MakeTrial(2), 6, 1.7).action == Action::kContinue);
  CHECK(rule.OnTrialResult(MakeTrial(3), 6, 1.8).action == Action::kStop);
  s.intermediate = {{5, 1.5}, {6, 3}};
  rule.OnTrialComplete(s);  // no-op: already counted
  CHECK(rule.OnTrialResult(MakeTrial(4), 6, 1.7).action == Action::kContinue);
}

TEST_CASE("Median options are validated", "[median]") {
  CHECK(ValidateMedianOptions(Options(false)).ok());
  CHECK(ValidateMedianOptions(Options(false, -1)).IsInvalidArgument());
  CHECK(ValidateMedianOptions(Options(false, 1, 0)).message().find("min_samples_required") !=
        std::string::npos);
}

}  // namespace
}  // namespace tune
