// Training checkpoints: <output>/checkpoint-<step>/ holding the trainable
// weights, the optimizer state (AdamW moments and step counts), the step and
// the CPU RNG state, so a resumed run continues exactly where the saved one
// was (same data order, same dropout masks).
//
// Written atomically (a .tmp folder renamed into place); only the newest
// `keep` checkpoints are kept. Call from rank 0 only. Not thread-safe.
#pragma once

#include <map>
#include <string>

#include <torch/torch.h>

#include "core/status.h"
#include "trainer/safetensors.h"

namespace tune {

struct CheckpointContents {
  int64_t step = 0;
  TensorMap weights;  // as saved (e.g. PEFT adapter keys)
};

// `weights_file` names the weights inside the folder (adapter_model.safetensors
// for LoRA, model.safetensors for pretraining); `extra_files` maps file names
// to text (e.g. adapter_config.json, so PEFT can load any checkpoint);
// `rng_state` is every rank's (GatherRngStates), written as
// rng_state.safetensors.
Status SaveCheckpoint(const std::string& output, int64_t step, const TensorMap& weights,
                      const std::string& weights_file, torch::optim::Optimizer& optimizer,
                      const TensorMap& rng_state, const std::map<std::string, std::string>& extra_files,
                      int64_t keep);

// Restores the optimizer state (onto `device`, where the parameters are)
// and rank `rank`'s RNG state from `dir` and returns the step and weights
// (the caller copies them into its parameters). A checkpoint written by
// fewer ranks has no RNG state for this rank: its generators stay as
// seeded. Non-OK: NotFound (no checkpoint there) or InvalidArgument
// (incomplete or mismatched, e.g. a different number of parameters).
Result<CheckpointContents> LoadCheckpoint(const std::string& dir, const std::string& weights_file,
                                          torch::optim::Optimizer& optimizer,
                                          torch::Device device = torch::Device(torch::kCPU), int rank = 0);

// The newest complete checkpoint-<step> folder in `output`, or "" if none.
std::string LatestCheckpoint(const std::string& output);

}  // namespace tune
