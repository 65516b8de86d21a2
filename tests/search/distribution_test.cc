// distribution.cc and grid.cc: internal representation, cardinality, grid order.
#include "search/distribution.h"

#include <catch2/catch.hpp>

namespace tune {
namespace {

TEST_CASE("ToInternal and FromInternal round-trip every domain", "[distribution]") {
  FloatDistribution u{0.5, 2.0, false, std::nullopt};
  CHECK(*ToInternal(u, ParamValue(1.25)) == 1.25);
  CHECK(std::get<double>(FromInternal(u, 1.25)) == 1.25);
  CHECK_FALSE(ToInternal(u, ParamValue(2.5)).has_value());
  CHECK_FALSE(ToInternal(u, ParamValue(int64_t{1})).has_value());  // wrong type

  FloatDistribution q{0.0, 1.0, false, 0.25};
  CHECK(std::get<double>(FromInternal(q, 0.3)) == 0.25);
  CHECK(std::get<double>(FromInternal(q, 0.99)) == 1.0);
  CHECK(Contains(q, ParamValue(0.75)));
  CHECK_FALSE(Contains(q, ParamValue(0.7)));

  IntDistribution i{2, 10, false, 4};  // 2, 6, 10
  CHECK(std::get<int64_t>(FromInternal(i, 5.0)) == 6);
  CHECK(std::get<int64_t>(FromInternal(i, 11.9)) == 10);
  CHECK(*ToInternal(i, ParamValue(int64_t{6})) == 6.0);
  CHECK_FALSE(Contains(i, ParamValue(int64_t{4})));

  CategoricalDistribution c{{ParamValue(std::string("adam")), ParamValue(int64_t{3}),
                             ParamValue(true)}};
  CHECK(*ToInternal(c, ParamValue(int64_t{3})) == 1.0);
  CHECK(*ToInternal(c, ParamValue(true)) == 2.0);
  CHECK(std::get<std::string>(FromInternal(c, 0.0)) == "adam");
  CHECK_FALSE(ToInternal(c, ParamValue(std::string("sgd"))).has_value());
  for (int k = 0; k < 3; ++k) CHECK(*ToInternal(c, FromInternal(c, k)) == k);
}

TEST_CASE("Cardinality and NthValue enumerate discrete domains in order", "[distribution]") {
  CHECK_FALSE(Cardinality(FloatDistribution{0, 1, false, std::nullopt}).has_value());
  CHECK_FALSE(Cardinality(FloatDistribution{1e-3, 1, true, std::nullopt}).has_value());
  FloatDistribution q{0.0, 1.0, false, 0.1};
  REQUIRE(*Cardinality(q) == 11);
  CHECK(std::get<double>(NthValue(q, 10)) == Approx(1.0));
  IntDistribution i{1, 8};
  REQUIRE(*Cardinality(i) == 8);
  IntDistribution s{0, 9, false, 4};  // 0, 4, 8: never above high
  REQUIRE(*Cardinality(s) == 3);
  CHECK(std::get<int64_t>(NthValue(s, 2)) == 8);
  CategoricalDistribution c{{ParamValue(1.5), ParamValue(std::string("x"))}};
  CHECK(*Cardinality(c) == 2);
  for (const Distribution& d : {Distribution(q), Distribution(i), Distribution(s), Distribution(c)}) {
    int64_t n = *Cardinality(d);
    for (int64_t k = 0; k < n; ++k) {
      CHECK(Contains(d, NthValue(d, k)));
      if (k > 0 && !std::holds_alternative<CategoricalDistribution>(d))
        CHECK(*ToInternal(d, NthValue(d, k)) > *ToInternal(d, NthValue(d, k - 1)));
    }
  }
}

TEST_CASE("Describe names the parameter type", "[distribution]") {
  CHECK(Describe(FloatDistribution{1e-5, 1e-2, true, std::nullopt}).rfind("loguniform(", 0) == 0);
  CHECK(Describe(FloatDistribution{0, 1, false, 0.5}).rfind("quniform(", 0) == 0);
  CHECK(Describe(IntDistribution{1, 8}) == "int[1, 8]");
  CHECK(Describe(CategoricalDistribution{{ParamValue(std::string("a"))}, true}).rfind("grid[", 0) == 0);
}

}  // namespace
}  // namespace tune
