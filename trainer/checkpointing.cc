#include "trainer/checkpointing.h"


#include "trainer/rng_state.h"

namespace tune {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  // `layer` travels as an integer: autograd passes non-tensor arguments
  // through untouched (and asks no gradient for them).
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor cos, torch::Tensor sin,
                               torch::Tensor mask, at::TensorList params, int64_t layer) {
    ctx->save_for_backward({x, cos, sin, mask});
    ctx->saved_data["layer"] = layer;
    ctx->saved_data["rng"] = GeneratorState(x.device());
    ctx->saved_data["params"] = static_cast<int64_t>(params.size());
    torch::NoGradGuard no_grad;
    return reinterpret_cast<DecoderLayerImpl*>(layer)->forward(x, cos, sin, mask);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    variable_list saved = ctx->get_saved_variables();
    auto* layer = reinterpret_cast<DecoderLayerImpl*>(ctx->saved_data["layer"].toInt());
    const int64_t n_params = ctx->saved_data["params"].toInt();
    torch::Tensor x = saved[0].detach().requires_grad_(true);
    const torch::Device device = x.device();
    // Replay the forward's random draws, then put the generator back.
    const torch::Tensor now = GeneratorState(device);
    SetGeneratorState(device, ctx->saved_data["rng"].toTensor());
    torch::Tensor y;
    {
      torch::AutoGradMode enable(true);
      y = layer->forward(x, saved[1], saved[2], saved[3]);
    }
    SetGeneratorState(device, now);
    variable_list inputs{x};
    std::vector<torch::Tensor> trainable;
    for (auto& p : layer->parameters()) {
      if (p.requires_grad()) trainable.push_back(p);
    }
    TORCH_CHECK(static_cast<int64_t>(trainable.size()) == n_params, "checkpointed layer: parameters changed");
    inputs.insert(inputs.end(), trainable.begin(), trainable.end());
    variable_list grads = torch::autograd::grad({y}, inputs, {grad_out[0]}, /*retain_graph=*/false,
                                                /*create_graph=*/false, /*allow_unused=*/true);
    // One gradient per forward argument: x, cos, sin, mask, each of params, layer.
    variable_list out{grads[0], torch::Tensor(), torch::Tensor(), torch::Tensor()};
    for (int64_t i = 0; i < n_params; ++i) out.push_back(grads[1 + i]);
    out.push_back(torch::Tensor());
    return out;
  }
};

}  // namespace

torch::Tensor CheckpointedLayer(DecoderLayerImpl* layer, const torch::Tensor& x, const torch::Tensor& cos,
                                const torch::Tensor& sin, const torch::Tensor& mask) {
  std::vector<torch::Tensor> params;
  for (auto& p : layer->parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  return CheckpointFunction::apply(x, cos, sin, mask, at::TensorList(params), reinterpret_cast<int64_t>(layer));
}

}  // namespace tune
