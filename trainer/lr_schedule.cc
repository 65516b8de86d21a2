#include "trainer/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace tune {

Result<ScheduleKind> ParseScheduleKind(const std::string& name) {
  if (name == "constant") return ScheduleKind::kConstant;
  if (name == "linear") return ScheduleKind::kLinear;
  if (name == "cosine") return ScheduleKind::kCosine;
  return Status::InvalidArgument("--schedule must be cosine, linear or constant, got '" + name + "'");
}

double LearningRate(ScheduleKind kind, double base_lr, int64_t step, int64_t warmup_steps, int64_t total_steps) {
  if (step < warmup_steps) {
    return base_lr * static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
  }
  if (kind == ScheduleKind::kConstant) return base_lr;
  const double progress = static_cast<double>(step - warmup_steps) /
                          static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  if (kind == ScheduleKind::kLinear) return base_lr * std::max(0.0, 1.0 - progress);
  return base_lr * std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * progress)));
}

}  // namespace tune
