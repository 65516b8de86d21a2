// Golden parity: our schedulers replay the event sequences recorded from Ray
// Tune (golden/make_golden.py) and must decide exactly as Ray did.
#include <catch2/catch.hpp>
#include <cmath>

#include "tests/schedulers/golden_fixture.h"

namespace tune {
namespace {

using testing::GoldenValue;
using testing::LoadGolden;

// Compares every decision of a replay with the fixture's; returns how many
// result events were checked.
int ExpectSameDecisions(const nlohmann::json& c, const testing::Replayed& replayed) {
  size_t i = 0;
  for (const auto& e : c["events"]) {
    if (e["op"] != "result") continue;
    REQUIRE(i < replayed.decisions.size());
    const Decision& d = replayed.decisions[i++];
    INFO(c["name"].get<std::string>() << " trial " << e["trial"] << " t=" << e["t"]
                                      << " value=" << e["value"] << " reason=" << d.reason);
    REQUIRE(std::string(testing::ActionName(d.action)) == e["action"].get<std::string>());
    if (c["scheduler"] == "asha" && e["action"] == "STOP") {
      if (e["rung"].is_null()) {
        CHECK_FALSE(d.rung.has_value());  // stopped at max_t, not pruned
      } else {
        REQUIRE(d.rung.has_value());
        CHECK(*d.rung == static_cast<int64_t>(std::ceil(e["rung"].get<double>())));
        CHECK_FALSE(d.reason.empty());
      }
    }
    if (c["scheduler"] == "median" && e["action"] != "CONTINUE") {
      REQUIRE(d.rung.has_value());
      CHECK(*d.rung == e["t"].get<int64_t>());
    }
  }
  CHECK(i == replayed.decisions.size());
  return static_cast<int>(i);
}

TEST_CASE("ASHA decides as Ray's AsyncHyperBandScheduler on recorded sequences",
          "[asha][golden]") {
  const nlohmann::json golden = LoadGolden("scheduler_decisions.json");
  int cases = 0, stops = 0;
  for (const auto& c : golden["cases"]) {
    if (c["scheduler"] != "asha") continue;
    SECTION(c["name"].get<std::string>()) {
      AshaScheduler asha(testing::GoldenAshaOptions(c, /*inject_brackets=*/true));
      // Same rungs as Ray's brackets.
      REQUIRE(asha.num_brackets() == static_cast<int>(c["milestones"].size()));
      for (int s = 0; s < asha.num_brackets(); ++s) {
        CHECK(asha.Milestones(s) == c["milestones"][s].get<std::vector<double>>());
      }
      const auto replayed = testing::ReplayGolden(c, asha);
      CHECK(ExpectSameDecisions(c, replayed) > 0);
      // Same rung contents at the end: every cutoff bit for bit.
      for (const auto& fc : c["final_cutoffs"]) {
        auto cutoff = asha.Cutoff(fc["bracket"], fc["milestone"]);
        INFO("bracket " << fc["bracket"] << " milestone " << fc["milestone"]);
        if (fc["cutoff"].is_null()) {
          CHECK((!cutoff.has_value() || std::isnan(*cutoff)));
        } else {
          REQUIRE(cutoff.has_value());
          CHECK(*cutoff == fc["cutoff"].get<double>());
        }
      }
      for (const Decision& d : replayed.decisions) stops += d.action == Action::kStop;
    }
    ++cases;
  }
  CHECK(cases >= 8);
}

TEST_CASE("Median rule decides as Ray's MedianStoppingRule on recorded sequences",
          "[median][golden]") {
  const nlohmann::json golden = LoadGolden("scheduler_decisions.json");
  int cases = 0;
  for (const auto& c : golden["cases"]) {
    if (c["scheduler"] != "median") continue;
    SECTION(c["name"].get<std::string>()) {
      MedianStoppingRule rule(testing::GoldenMedianOptions(c));
      CHECK(ExpectSameDecisions(c, testing::ReplayGolden(c, rule)) > 0);
    }
    ++cases;
  }
  CHECK(cases >= 5);
}

TEST_CASE("Replaying the same events, adds first as on --resume, decides the same",
          "[asha][median][golden][replay]") {
  const nlohmann::json golden = LoadGolden("scheduler_decisions.json");
  for (const auto& c : golden["cases"]) {
    SECTION(c["name"].get<std::string>()) {
      if (c["scheduler"] == "asha") {
        // Seeded bracket draws (no injection): two schedulers fed the same
        // events, one with all adds up front, decide identically.
        AshaOptions opt = testing::GoldenAshaOptions(c, /*inject_brackets=*/false);
        opt.seed = 42;
        AshaScheduler live(opt), resumed(opt);
        const auto a = testing::ReplayGolden(c, live);
        const auto b = testing::ReplayGolden(c, resumed, /*adds_first=*/true);
        REQUIRE(a.decisions.size() == b.decisions.size());
        for (size_t i = 0; i < a.decisions.size(); ++i) {
          CHECK(a.decisions[i].action == b.decisions[i].action);
          CHECK(a.decisions[i].rung == b.decisions[i].rung);
          CHECK(a.decisions[i].reason == b.decisions[i].reason);
        }
        // With Ray's brackets injected, the adds-first replay matches Ray too.
        AshaScheduler injected(testing::GoldenAshaOptions(c, true));
        ExpectSameDecisions(c, testing::ReplayGolden(c, injected, /*adds_first=*/true));
      } else {
        MedianStoppingRule rule(testing::GoldenMedianOptions(c));
        ExpectSameDecisions(c, testing::ReplayGolden(c, rule, /*adds_first=*/true));
      }
    }
  }
}

TEST_CASE("Rung counts agree with Ray's np.log arithmetic over many configurations",
          "[asha][golden]") {
  const nlohmann::json golden = LoadGolden("asha_rungs.json");
  int rows = 0;
  for (const auto& row : golden["rows"]) {
    AshaOptions opt;
    opt.max_t = row[0];
    opt.grace_period = row[1];
    opt.reduction_factor = row[2];
    opt.brackets = 5;
    AshaScheduler asha(opt);
    for (int s = 0; s < 5; ++s) {
      INFO("max_t " << row[0] << " grace " << row[1] << " rf " << row[2] << " bracket " << s);
      const int expected = std::max(0, row[3][s].get<int>());
      REQUIRE(static_cast<int>(asha.Milestones(s).size()) == expected);
    }
    ++rows;
  }
  CHECK(rows > 1000);
}

}  // namespace
}  // namespace tune
