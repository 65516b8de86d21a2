// The GP sampler's coordinates (search/gp_space.h) and its scrambled Sobol
// candidates (search/sobol.h).
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "search/gp_space.h"
#include "search/sobol.h"
#include "tests/search/gp_test_space.h"
#include "tests/search/sampler_test_util.h"

namespace tune {
namespace {

using testing::Num;

TEST_CASE("scrambled Sobol points are a stratified net, reproducible per seed", "[gp]") {
  const int dim = 12, n = 256;
  std::vector<double> a = ScrambledSobol(dim, n, 7);
  CHECK(a == ScrambledSobol(dim, n, 7));
  CHECK(a != ScrambledSobol(dim, n, 8));
  for (int j = 0; j < dim; ++j) {
    // Each 1-D projection of 2^m points of a (t, m, s)-net in base 2 puts one
    // point in each interval [k/n, (k+1)/n); scrambling keeps that.
    std::set<int> cells;
    for (int i = 0; i < n; ++i) {
      double v = a[i * dim + j];
      REQUIRE(v >= 0.0);
      REQUIRE(v < 1.0);
      cells.insert(static_cast<int>(v * n));
    }
    CHECK(cells.size() == static_cast<size_t>(n));
  }
  // 2-D projections of the first dimensions: each of the 16 x 16 cells holds
  // exactly one of 256 points (the first two Sobol dimensions form a (0, m, 2)-net).
  std::set<int> cells2;
  for (int i = 0; i < n; ++i) cells2.insert(static_cast<int>(a[i * dim] * 16) * 16 + static_cast<int>(a[i * dim + 1] * 16));
  CHECK(cells2.size() == 256u);
}

TEST_CASE("coordinates: log space, ints widened by half a step, choices as indices", "[gp]") {
  const SearchSpace s = testing::GpTestSpace();
  GpSpace space(s);
  REQUIRE(space.dim() == 5);
  CHECK(space.continuous_indices() == std::vector<int>{0});
  CHECK(space.discrete_indices() == std::vector<int>{1, 2, 3, 4});
  CHECK(space.is_categorical() == std::vector<char>{0, 0, 1, 0, 0});
  ParamMap p = {{"a_lr", 1e-3}, {"b_int", int64_t{1}}, {"c_choice", std::string("z")}, {"d_q", 0.5},
                {"e_logint", int64_t{1}}};
  auto x = space.Normalize(p);
  REQUIRE(x);
  CHECK((*x)[0] == Approx(0.5));
  CHECK((*x)[1] == Approx(0.125));  // (1 - 0.5) / (4.5 - 0.5)
  CHECK((*x)[2] == 2.0);
  CHECK((*x)[3] == Approx(0.5));    // (0.5 + 0.125) / 1.25
  CHECK((*x)[4] == Approx((std::log(1.0) - std::log(0.5)) / (std::log(1024.5) - std::log(0.5))));
  ParamMap back = space.Unnormalize(x->data());
  CHECK(Num(back.at("a_lr")) == Approx(1e-3));
  back.erase("a_lr");
  ParamMap rest = p;
  rest.erase("a_lr");
  CHECK(back == rest);
  CHECK(space.DiscreteChoices(1).size() == 4u);
  CHECK(space.DiscreteChoices(2) == std::vector<double>{0, 1, 2});
  // Rounding goes to the nearest value; every coordinate maps back inside.
  CHECK(space.Round(1, 0.3) == Approx(0.375));  // 0.3 -> 1.7 -> 2
  CHECK(space.Round(2, 0.99) == 2.0);
  std::vector<double> corner = {1.2, 1.0, 2.0, 1.0, 1.0};
  ParamMap q = space.Unnormalize(corner.data());
  CHECK(Num(q.at("a_lr")) == Approx(1e-2));
  CHECK(std::get<int64_t>(q.at("b_int")) == 4);
  CHECK(std::get<int64_t>(q.at("e_logint")) == 1024);
  CHECK(Num(q.at("d_q")) == 1.0);
  // Missing or outside: no coordinates.
  p.erase("b_int");
  CHECK(!space.Normalize(p));
  // Sobol candidates lie on the discrete values.
  std::vector<double> c = space.Sample(64, 3);
  for (int i = 0; i < 64; ++i) {
    for (int j : {1, 3, 4}) CHECK(space.Round(j, c[i * 5 + j]) == c[i * 5 + j]);
    double k = c[i * 5 + 2];  // a choice's index
    CHECK((k == 0.0 || k == 1.0 || k == 2.0));
  }
}

}  // namespace
}  // namespace tune
