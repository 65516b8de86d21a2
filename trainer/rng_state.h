// Random-number-generator state of lora_train's ranks, so that a resumed run
// draws the same LoRA dropout masks as an uninterrupted one (the role of the
// rng_state*.pth files of Hugging Face's Trainer).
//
// A rank's state is a TensorMap of uint8 CPU tensors: "cpu" (the default CPU
// generator) and, when the rank trains on a GPU, "cuda" (the default CUDA
// generator of that GPU: dropout on a GPU draws from it). A CPU run never
// touches CUDA, so with a CPU-only libtorch all of this is CPU-only.
//
// In a checkpoint (rng_state.safetensors) rank 0's entries keep their names
// and rank r > 0's are "rank<r>.cpu", "rank<r>.cuda": every rank of a
// data-parallel run has its own dropout stream, and each gets its own back.
// Not thread-safe beyond the generators' own mutexes.
#pragma once

#include <torch/torch.h>

#include "core/status.h"
#include "trainer/distributed.h"
#include "trainer/safetensors.h"

namespace tune {

// The state of the default generator that random ops on `device` draw from
// (the CPU's, or that GPU's), and setting it back.
torch::Tensor GeneratorState(const torch::Device& device);
void SetGeneratorState(const torch::Device& device, const torch::Tensor& state);

// This rank's state: {"cpu"} or, training on a GPU, {"cpu", "cuda"}.
TensorMap CaptureRngState(const torch::Device& device);

// Sets the generators from a state of CaptureRngState. A "cuda" entry is
// only used when `device` is a GPU; a GPU run resumed from a CPU
// checkpoint (no "cuda") keeps its seeded CUDA generator. InvalidArgument
// when "cpu" is missing or a state does not fit its generator.
Status RestoreRngState(const TensorMap& state, const torch::Device& device);

// Collective: every rank passes its own state; rank 0 gets all of them, as
// a checkpoint stores them (see above), the other ranks get an empty map.
// With one rank it returns `mine` unchanged.
Result<TensorMap> GatherRngStates(Distributed& dist, const TensorMap& mine);

// Rank `rank`'s entries of a checkpoint's map, under their own names
// ("cpu", "cuda"); empty when the checkpoint has none for that rank (it was
// written by fewer ranks).
TensorMap RankRngState(const TensorMap& all, int rank);

}  // namespace tune
