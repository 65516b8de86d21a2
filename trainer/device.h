// Where lora_train computes and in which precision: the --device, --dtype
// and --backend flags resolved against the GPUs this process can see.
//
//   --device auto | cpu | cuda | cuda:N
//       auto: a GPU when one is visible, else the CPU. Without an index the
//       rank takes GPU LOCAL_RANK mod the visible count (torchrun's rule).
//   --dtype fp32 | bf16 | fp16
//       the frozen base weights and the forward pass; LoRA weights, their
//       gradients and the AdamW state stay fp32 (as PEFT keeps them over a
//       bf16 base); logits go to fp32 before the loss. fp16 needs loss
//       scaling, which lora_train does not do: refused.
//   --backend auto | gloo | nccl
//       auto: NCCL on a GPU, Gloo on the CPU, and Gloo when this host runs
//       more ranks than it has GPUs (NCCL needs a GPU per rank; Gloo then
//       reduces in CPU memory).
// Every refusal is one sentence that says why (no GPU visible, a CPU-only
// libtorch build, no bf16 on this GPU, NCCL without a GPU).
#pragma once

#include <string>

#include <torch/torch.h>

#include "core/status.h"
#include "trainer/model.h"

namespace tune {

struct Placement {
  torch::Device device{torch::kCPU};
  torch::ScalarType dtype = torch::kFloat32;  // frozen base + forward
  std::string backend = "gloo";               // gloo | nccl
  std::string Describe() const;               // "cuda:0, bf16, NCCL": prose, no '='
};

// Resolves the three flags. `local_rank` is LOCAL_RANK, `local_world_size`
// the ranks on this host (LocalRank(), LocalWorldSize()). InvalidArgument,
// one sentence, for every combination that cannot run.
Result<Placement> ResolvePlacement(const std::string& device, const std::string& dtype, const std::string& backend,
                                   int local_rank, int local_world_size = 1);

// LOCAL_RANK from the environment (0 when unset or not a number).
int LocalRank();
// LOCAL_WORLD_SIZE, else WORLD_SIZE, from the environment (1 when unset).
int LocalWorldSize();

// True when this binary's libtorch has CUDA (and NCCL) compiled in.
bool BuiltWithCuda();
// GPUs this process can see (0 without CUDA, a driver or a visible GPU).
int VisibleGpuCount();

// Moves `model` to placement.device and its frozen base weights (every
// parameter that is not a LoRA weight) to placement.dtype. LoRA weights stay
// fp32. Call after ApplyLora and before building the optimizer.
void PlaceModel(CausalLm& model, const Placement& placement);

// The device of the model's parameters.
torch::Device ModelDevice(CausalLm& model);

}  // namespace tune
