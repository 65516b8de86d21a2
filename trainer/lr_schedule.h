// Learning-rate schedules with linear warmup, as transformers'
// get_{constant,linear,cosine}_schedule_with_warmup. Torch-free, pure.
#pragma once

#include <string>

#include "core/status.h"

namespace tune {

enum class ScheduleKind { kConstant, kLinear, kCosine };

Result<ScheduleKind> ParseScheduleKind(const std::string& name);  // "constant" | "linear" | "cosine"

// The learning rate for optimizer step `step` (0-based: the rate used by the
// step-th update). Warmup: base_lr * step / warmup_steps for step <
// warmup_steps; then constant, linear decay to 0 at total_steps, or a half
// cosine to 0 at total_steps.
double LearningRate(ScheduleKind kind, double base_lr, int64_t step, int64_t warmup_steps, int64_t total_steps);

}  // namespace tune
