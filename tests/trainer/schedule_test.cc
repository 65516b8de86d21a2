// Learning-rate schedules: transformers' warmup + constant/linear/cosine.
#include <catch2/catch.hpp>

#include "trainer/lr_schedule.h"

namespace tune {
namespace {

TEST_CASE("warmup then constant, linear and cosine decay", "[trainer][schedule]") {
  struct Case {
    ScheduleKind kind;
    int64_t step;
    double want;
  };
  // base 1.0, warmup 10, total 110: decay runs over steps 10..110.
  const Case cases[] = {
      {ScheduleKind::kCosine, 0, 0.0},    {ScheduleKind::kCosine, 5, 0.5},   {ScheduleKind::kCosine, 10, 1.0},
      {ScheduleKind::kCosine, 60, 0.5},   {ScheduleKind::kCosine, 35, 0.5 * (1 + std::cos(M_PI * 0.25))},
      {ScheduleKind::kCosine, 110, 0.0},  {ScheduleKind::kLinear, 5, 0.5},   {ScheduleKind::kLinear, 60, 0.5},
      {ScheduleKind::kLinear, 85, 0.25},  {ScheduleKind::kLinear, 110, 0.0}, {ScheduleKind::kConstant, 3, 0.3},
      {ScheduleKind::kConstant, 100, 1.0},
  };
  for (const auto& c : cases) {
    INFO("kind " << static_cast<int>(c.kind) << " step " << c.step);
    CHECK(LearningRate(c.kind, 1.0, c.step, 10, 110) == Approx(c.want).margin(1e-12));
  }
  // No warmup: the first step uses the full rate.
  CHECK(LearningRate(ScheduleKind::kCosine, 2e-4, 0, 0, 50) == Approx(2e-4));
  CHECK(ParseScheduleKind("cosine").ok());
  CHECK_FALSE(ParseScheduleKind("exponential").ok());
}

}  // namespace
}  // namespace tune
