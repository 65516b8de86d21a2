// NanPercentile, Mean and Median against values NumPy computed
// (golden/numpy_stats.json): equal to the last bit.
#include <catch2/catch.hpp>
#include <cmath>

#include "schedulers/numpy_stats.h"
#include "tests/schedulers/golden_fixture.h"

namespace tune {
namespace {

TEST_CASE("NumPy statistics agree bit for bit", "[numpy_stats][golden]") {
  const nlohmann::json golden = testing::LoadGolden("numpy_stats.json");
  int checked = 0;
  for (const auto& row : golden["rows"]) {
    const auto values = row["values"].get<std::vector<double>>();
    std::vector<double> with_nan;
    for (const auto& v : row["with_nan"]) with_nan.push_back(testing::GoldenValue(v));
    INFO("n = " << values.size());
    if (!values.empty()) {
      CHECK(internal::Mean(values) == row["mean"].get<double>());
      CHECK(internal::Median(values) == row["median"].get<double>());
    } else {
      CHECK(std::isnan(internal::Mean(values)));
    }
    for (const auto& p : row["percentiles"]) {
      const double rf = p[0];
      const double got = internal::NanPercentile(with_nan, (1 - 1 / rf) * 100);
      INFO("rf " << rf);
      if (p[1].is_null()) {
        CHECK(std::isnan(got));
      } else {
        CHECK(got == p[1].get<double>());
      }
      ++checked;
    }
  }
  CHECK(checked > 500);
}

TEST_CASE("NanPercentile interpolates linearly and ignores NaN", "[numpy_stats]") {
  const double nan = std::nan("");
  CHECK(internal::NanPercentile({1, 2, 3, 4, 5}, 50) == 3);
  CHECK(internal::NanPercentile({4, 1, nan, 2}, 50) == 2);  // {1,2,4}
  CHECK(internal::NanPercentile({0, 10}, 75) == 7.5);
  CHECK(internal::NanPercentile({7}, 66.6) == 7);
  CHECK(std::isnan(internal::NanPercentile({nan, nan}, 50)));
  CHECK(std::isnan(internal::NanPercentile({}, 50)));
}

}  // namespace
}  // namespace tune
