// A frozen linear weight held in 4 bits (trainer/quant_4bit.h), as
// bitsandbytes' Linear4bit holds it for QLoRA (docs/trainer-models.md,
// "QLoRA"). The forward dequantizes the weight to the input's dtype (the
// compute dtype, bnb_4bit_compute_dtype), multiplies, and drops it; the
// backward dequantizes it again for the input's gradient (as bitsandbytes'
// MatMul4Bit.backward), so no full-precision copy outlives one projection.
// The weight gets no gradient. The codes and scales are buffers, so
// Module::to(device) moves them and they keep their dtypes.
#pragma once

#include <torch/torch.h>

#include "trainer/quant_4bit.h"

namespace tune {

class Frozen4bitWeightImpl : public torch::nn::Module {
 public:
  // Quantizes `weight` [out, in] (any float dtype, any device).
  Frozen4bitWeightImpl(const torch::Tensor& weight, QuantType type, bool double_quant);

  // x [..., in] -> x W^T + bias [..., out], in x's dtype. `bias` may be
  // undefined; it gets no gradient either.
  torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& bias);
  // W [out, in] in `dtype`, on the buffers' device.
  torch::Tensor Dequantize(torch::ScalarType dtype) const;
  // The quantized state (its tensors are the buffers, wherever they are now).
  Quantized4bit state() const;
  int64_t bytes() const { return state().bytes(); }

 private:
  QuantType type_;
  int64_t blocksize_, nested_blocksize_;
  bool nested_;
  std::vector<int64_t> shape_;
  torch::Tensor packed_, absmax_, nested_absmax_, offset_;
};
TORCH_MODULE(Frozen4bitWeight);

}  // namespace tune
