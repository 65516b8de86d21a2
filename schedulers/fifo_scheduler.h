// FifoScheduler: no early stopping; every trial runs to its end.
#pragma once

#include "schedulers/scheduler.h"

namespace tune {

class FifoScheduler : public Scheduler {
 public:
  Decision OnTrialResult(const Trial&, int64_t, double) override { return Decision::Continue(); }
};

}  // namespace tune
