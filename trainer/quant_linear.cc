#include "trainer/quant_linear.h"

namespace tune {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// y = x W^T + b with W dequantized in the forward and again in the backward
// (bitsandbytes' MatMul4Bit: F.linear(A, dequantize_4bit(B).to(A.dtype), bias)
// forward, grad_A = grad_out @ dequantize_4bit(B).to(grad_out.dtype)
// backward). `weight` travels as an integer, as the layer in
// trainer/checkpointing.cc: the module outlives the graph.
struct Dequant4bitLinear : torch::autograd::Function<Dequant4bitLinear> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor bias, int64_t weight) {
    ctx->saved_data["weight"] = weight;
    const auto* w = reinterpret_cast<const Frozen4bitWeightImpl*>(weight);
    torch::NoGradGuard no_grad;
    return torch::nn::functional::linear(x, w->Dequantize(x.scalar_type()),
                                         bias.numel() ? bias : torch::Tensor());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto* w = reinterpret_cast<const Frozen4bitWeightImpl*>(ctx->saved_data["weight"].toInt());
    const torch::Tensor& g = grad_out[0];
    torch::Tensor gx = torch::matmul(g, w->Dequantize(g.scalar_type()));
    return {gx, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

Frozen4bitWeightImpl::Frozen4bitWeightImpl(const torch::Tensor& weight, QuantType type, bool double_quant) {
  Quantized4bit q = Quantize4bit(weight, type, double_quant);
  type_ = q.type;
  blocksize_ = q.blocksize;
  nested_blocksize_ = q.nested_blocksize;
  nested_ = q.nested;
  shape_ = q.shape;
  const torch::Device device = weight.device();
  packed_ = register_buffer("packed", q.packed.to(device));
  absmax_ = register_buffer("absmax", q.absmax.to(device));
  if (nested_) {
    nested_absmax_ = register_buffer("nested_absmax", q.nested_absmax.to(device));
    offset_ = register_buffer("offset", q.offset.to(device));
  }
}

Quantized4bit Frozen4bitWeightImpl::state() const {
  Quantized4bit q;
  q.type = type_;
  q.blocksize = blocksize_;
  q.nested_blocksize = nested_blocksize_;
  q.nested = nested_;
  q.shape = shape_;
  // Buffers() returns the tensors Module::to() updated in place.
  q.packed = packed_;
  q.absmax = absmax_;
  q.nested_absmax = nested_absmax_;
  q.offset = offset_;
  return q;
}

torch::Tensor Frozen4bitWeightImpl::Dequantize(torch::ScalarType dtype) const { return Dequantize4bit(state(), dtype); }

torch::Tensor Frozen4bitWeightImpl::Linear(const torch::Tensor& x, const torch::Tensor& bias) {
  // Autograd wants every tensor argument defined: no bias is an empty one.
  torch::Tensor b = bias.defined() ? bias.detach() : torch::empty({0}, x.options());
  return Dequant4bitLinear::apply(x, b, reinterpret_cast<int64_t>(this));
}

}  // namespace tune
