#include "search/grid.h"

#include <catch2/catch.hpp>

namespace tune {
namespace {

ParamValue S(const char* s) { return ParamValue(std::string(s)); }
ParamValue I(int64_t v) { return ParamValue(v); }

TEST_CASE("GridPoints: cross product of grid parameters, first name slowest", "[grid]") {
  SearchSpace space;
  space["b_opt"] = CategoricalDistribution{{S("adam"), S("sgd")}, true};
  space["a_r"] = CategoricalDistribution{{I(4), I(8), I(16)}, true};
  space["lr"] = FloatDistribution{1e-4, 1e-2, true, std::nullopt};       // not a grid axis
  space["c"] = CategoricalDistribution{{S("x"), S("y")}};    // a plain choice
  auto points = GridPoints(space, /*all_discrete=*/false);
  REQUIRE(points.ok());
  REQUIRE(points->size() == 6);
  // a_r varies slowest (first by name), b_opt fastest.
  CHECK((*points)[0] == ParamMap{{"a_r", I(4)}, {"b_opt", S("adam")}});
  CHECK((*points)[1] == ParamMap{{"a_r", I(4)}, {"b_opt", S("sgd")}});
  CHECK((*points)[2] == ParamMap{{"a_r", I(8)}, {"b_opt", S("adam")}});
  CHECK((*points)[5] == ParamMap{{"a_r", I(16)}, {"b_opt", S("sgd")}});
}

TEST_CASE("GridPoints over every discrete parameter", "[grid]") {
  SearchSpace space;
  space["n"] = IntDistribution{1, 3};
  space["q"] = FloatDistribution{0, 1, false, 0.5};
  auto points = GridPoints(space, true);
  REQUIRE(points.ok());
  REQUIRE(points->size() == 9);
  CHECK(std::get<int64_t>((*points)[8].at("n")) == 3);
  CHECK(std::get<double>((*points)[8].at("q")) == 1.0);

  space["lr"] = FloatDistribution{0, 1, false, std::nullopt};
  auto bad = GridPoints(space, true);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().IsInvalidArgument());
  CHECK(bad.status().message().find("lr") != std::string::npos);
}

TEST_CASE("GridPoints: empty grid is one empty point and size limit enforced", "[grid]") {
  SearchSpace space;
  space["x"] = FloatDistribution{0, 1, false, std::nullopt};
  auto one = GridPoints(space, false);
  REQUIRE(one.ok());
  REQUIRE(one->size() == 1);
  CHECK(one->front().empty());
  SearchSpace big;
  big["a"] = IntDistribution{0, 999};
  big["b"] = IntDistribution{0, 999};
  auto too_big = GridPoints(big, true, 100'000);
  CHECK_FALSE(too_big.ok());
}

}  // namespace
}  // namespace tune
