// 4-bit blockwise quantization of frozen weights, bit for bit as
// bitsandbytes 0.50 does it (QLoRA; docs/trainer-models.md, "QLoRA"):
// the NF4 and FP4 code tables, blocks of 64 values scaled by their absmax,
// two codes per byte (the first value in the high nibble), and optionally
// double quantization of the absmax values (their mean subtracted, then
// 8-bit blockwise with bitsandbytes' signed dynamic map in blocks of 256).
//
// The bitsandbytes functions followed are named at each function in
// quant_4bit.cc. Only trainer translation units include this header.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/status.h"

namespace tune {

enum class QuantType { kNf4, kFp4 };

// "nf4" | "fp4"; anything else is InvalidArgument naming the value.
Result<QuantType> ParseQuantType(const std::string& name);
const char* QuantTypeName(QuantType type);

// lora_train --quantize nf4|fp4 [--double-quant]: the frozen base's form.
struct BaseQuantization {
  bool on = false;
  QuantType type = QuantType::kNf4;
  bool double_quant = false;
};
// `quantize` "" or "none": off (then --double-quant is refused).
Result<BaseQuantization> ParseBaseQuantization(const std::string& quantize, bool double_quant);

// bitsandbytes' get_4bit_type(): the 16 values a 4-bit code stands for,
// indexed by the code (FP4 in bit-pattern order, so not sorted).
const std::array<float, 16>& CodeTable4bit(QuantType type);
// bitsandbytes' create_dynamic_map(signed=True, max_exponent_bits=7,
// total_bits=8): the sorted 256-value map of the 8-bit absmax codes.
const std::array<float, 256>& DynamicMap8bit();

// A weight in bitsandbytes' 4-bit layout (QuantState's fields).
struct Quantized4bit {
  QuantType type = QuantType::kNf4;
  int64_t blocksize = 64;
  std::vector<int64_t> shape;  // the original weight's shape
  torch::Tensor packed;        // uint8 [ceil(numel / 2)]: code of value 2i << 4 | code of value 2i + 1
  // Without double quantization: float32 [blocks], each block's absmax.
  // With it: uint8 [blocks], the 8-bit codes of absmax - offset.
  torch::Tensor absmax;
  bool nested = false;
  torch::Tensor nested_absmax;  // float32 [ceil(blocks / 256)]: absmax of each 256-block of absmax - offset
  torch::Tensor offset;         // float32 0-dim: the mean of the absmax values
  int64_t nested_blocksize = 256;

  int64_t numel() const;
  // Bytes held: codes + scales (+ nested scales and offset).
  int64_t bytes() const;
};

// Quantizes `weight` (float32, bfloat16 or float16, any device; read on the
// CPU) as bitsandbytes.functional.quantize_4bit(weight, blocksize=64,
// compress_statistics=double_quant, quant_type=...) on the CPU. The result
// lives on the CPU.
Quantized4bit Quantize4bit(const torch::Tensor& weight, QuantType type, bool double_quant,
                           int64_t blocksize = 64);

// The block scales as float32 on q's device: absmax, or, nested, the
// dequantized absmax codes plus the offset (bitsandbytes' dequantize_4bit).
torch::Tensor BlockScales(const Quantized4bit& q);

// bitsandbytes.functional.dequantize_4bit(): code[nibble] * scale in
// float32, rounded once to `dtype`; the original shape, on q's device.
torch::Tensor Dequantize4bit(const Quantized4bit& q, torch::ScalarType dtype);
// The same in torch ops, on any device (Dequantize4bit uses it off the CPU;
// the CPU uses a loop that never makes an index tensor).
torch::Tensor Dequantize4bitTorchOps(const Quantized4bit& q, torch::ScalarType dtype);

// bitsandbytes.functional.quantize_blockwise() with the dynamic map on the
// CPU (the 8-bit step of double quantization): codes [n] uint8 and absmax
// [ceil(n / blocksize)] float32. `values` is float32.
void QuantizeBlockwise8bit(const torch::Tensor& values, int64_t blocksize, torch::Tensor* codes,
                           torch::Tensor* absmax);
// Its inverse: map[code] * absmax of the block, float32.
torch::Tensor DequantizeBlockwise8bit(const torch::Tensor& codes, const torch::Tensor& absmax, int64_t blocksize);

}  // namespace tune
