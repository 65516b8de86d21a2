// What `tune validate` says about the machine a local experiment runs on
// (TrialBackend::Capacity): the GPUs it found and how many trials fit at once.
#pragma once

#include <string>

#include "spec/experiment_spec.h"
#include "trial_runner/trial_backend.h"

namespace tune {

// Two lines for `tune validate`, each starting with two spaces and ending in
// '\n':
//   "  GPUs        2 (0, 1), detected with nvidia-smi"   (or "from backend.gpus",
//                  or "none detected (nvidia-smi is missing or lists none)")
//   "  capacity    4 trials at once: each takes 1 worker(s) x 1 CPU slot(s)
//                  and 1 GPU(s) of 16 CPU slots and 4 GPUs;
//                  max_concurrent_trials 8 (4 run, the rest wait)"
std::string DescribeCapacity(const ExperimentSpec& spec, const BackendCapacity& capacity);

// The shape of one attempt of `spec` (workers, CPU and GPUs per worker), as
// TrialBackend::Capacity takes it.
LaunchSpec AttemptShape(const ExperimentSpec& spec);

}  // namespace tune
