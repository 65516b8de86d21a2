// What `tune validate` says about the machine a local experiment runs on:
// the GPUs it found and how many trials fit at once.
#pragma once

#include <string>

#include "trial_runner/local_backend.h"
#include "tuner/experiment_spec.h"

namespace tune {

// Two lines for `tune validate`, each starting with two spaces and ending in
// '\n':
//   "  GPUs        2 (0, 1), detected with nvidia-smi"   (or "from backend.gpus",
//                  or "none detected (nvidia-smi is missing or lists none)")
//   "  capacity    4 trials at once: each takes 1 worker(s) x 1 CPU slot(s)
//                  and 1 GPU(s) of 16 CPU slots and 4 GPUs;
//                  max_concurrent_trials 8 (4 run, the rest wait)"
std::string DescribeLocalCapacity(const ExperimentSpec& spec, const LocalBackend& backend);

}  // namespace tune
