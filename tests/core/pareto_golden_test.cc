// core/pareto.h against Optuna 5.0.0's own results
// (golden/pareto_golden_optuna5.json, made by golden/make_pareto_golden.py):
// non-dominated ranks with penalties and n_below, the Pareto front, crowding
// distance and the order elite selection keeps, hypervolume and HSSP, on
// random small cases full of ties.
#include <catch2/catch.hpp>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/pareto.h"

namespace tune {
namespace {

nlohmann::json Golden() {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/tests/core/golden/pareto_golden_optuna5.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::vector<Losses> Points(const nlohmann::json& j) { return j.get<std::vector<Losses>>(); }

double Number(const nlohmann::json& j) {
  if (j.is_string()) {
    return j.get<std::string>() == "inf" ? std::numeric_limits<double>::infinity()
                                         : -std::numeric_limits<double>::infinity();
  }
  return j.get<double>();
}

TEST_CASE("pareto.h matches Optuna 5.0.0 on random cases", "[core][pareto][golden]") {
  const nlohmann::json golden = Golden();
  REQUIRE(golden["cases"].size() >= 100);
  int index = 0;
  for (const auto& c : golden["cases"]) {
    INFO("case " << index++);
    std::vector<Losses> points = Points(c["points"]);
    CHECK(NonDominatedRanks(points, c["violations"].get<std::vector<double>>(), c["n_below"].get<int>()) ==
          c["ranks"].get<std::vector<int>>());
    CHECK(ParetoFront(points) == c["front"].get<std::vector<size_t>>());
    if (!c.contains("crowding")) continue;
    std::vector<double> distance = CrowdingDistance(points);
    for (size_t i = 0; i < distance.size(); ++i) {
      double want = Number(c["crowding"][i]);
      if (std::isinf(want)) CHECK(distance[i] == want);
      else CHECK(distance[i] == Approx(want).margin(1e-12));
    }
    CHECK(CrowdingDistanceSort(points) == c["crowding_order"].get<std::vector<size_t>>());
    Losses reference = c["reference"].get<Losses>();
    CHECK(Hypervolume(Points(c["hv_points"]), reference) == Approx(c["hypervolume"].get<double>()).epsilon(1e-12));
    CHECK(SolveHssp(Points(c["hssp_points"]), c["hssp_size"].get<size_t>(), reference) ==
          c["hssp"].get<std::vector<size_t>>());
  }
}

}  // namespace
}  // namespace tune
