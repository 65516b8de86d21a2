// Gradient checkpointing (activation recomputation, Chen et al. 2016,
// "Training Deep Nets with Sublinear Memory Cost"): a decoder layer runs
// forward without keeping its intermediate activations; the backward pass
// runs it again from its saved input and differentiates that. Memory for
// activations drops from every op of every layer to one tensor per layer,
// for about one more forward pass of compute. The RNG state (LoRA dropout)
// is replayed, so the gradients equal those without checkpointing.
//
// Only trainer translation units include this header (libtorch).
#pragma once

#include <vector>

#include <torch/torch.h>

#include "trainer/model.h"

namespace tune {

// layer->forward(x, cos, sin, mask), recomputed in the backward pass. The
// gradients flow to x and to the layer's parameters that require grad
// (their .grad accumulates as usual). Use while training with grad enabled.
torch::Tensor CheckpointedLayer(DecoderLayerImpl* layer, const torch::Tensor& x, const torch::Tensor& cos,
                                const torch::Tensor& sin, const torch::Tensor& mask);

}  // namespace tune
