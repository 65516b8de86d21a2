// 4-bit quantization against bitsandbytes 0.50.2 on the CPU (fixture from
// golden/make_quant_golden.py): the code tables, and for weights of a
// trained model's scale with outliers (float32, bfloat16, float16; a partial
// block and an odd count; a partial 256-block of scales) the packed codes,
// the scales, the double-quantization state and the dequantized weights,
// all bit for bit, for NF4 and FP4 with and without double quantization.
#include <catch2/catch.hpp>

#include <string>

#include "tests/trainer/test_util.h"
#include "trainer/quant_4bit.h"
#include "trainer/quant_linear.h"
#include "trainer/safetensors.h"

namespace tune {
namespace {

// Same dtype, shape and bits (so -0 differs from +0 and NaN equals NaN).
bool BitEqual(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  auto as_int = [](const torch::Tensor& t) {
    switch (t.element_size()) {
      case 1: return t.contiguous().view(torch::kUInt8);
      case 2: return t.contiguous().view(torch::kInt16);
      default: return t.contiguous().view(torch::kInt32);
    }
  };
  return torch::equal(as_int(a), as_int(b));
}

int64_t Mismatches(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes()) return -1;
  return a.to(torch::kFloat64).ne(b.to(torch::kFloat64)).sum().item<int64_t>();
}

TensorMap& Golden() {
  static TensorMap g = [] {
    auto r = ReadSafetensors(testing::GoldenDir() + "/quant/quant_golden.safetensors");
    REQUIRE(r.ok());
    return *r;
  }();
  return g;
}

torch::Tensor Table(const float* v, int64_t n) {
  return torch::from_blob(const_cast<float*>(v), {n}, torch::kFloat32).clone();
}

const char* kCases[] = {"f32_32x128", "f32_264x64", "bf16_64x128", "f16_64x64", "f32_5x13"};

struct Variant {
  const char* name;
  QuantType type;
  bool nested;
};
const Variant kVariants[] = {{"nf4", QuantType::kNf4, false},
                             {"fp4", QuantType::kFp4, false},
                             {"nf4_dq", QuantType::kNf4, true},
                             {"fp4_dq", QuantType::kFp4, true}};

TEST_CASE("the NF4, FP4 and 8-bit dynamic code tables are bitsandbytes'", "[trainer][quant]") {
  TensorMap& g = Golden();
  CHECK(BitEqual(Table(CodeTable4bit(QuantType::kNf4).data(), 16), g["nf4_code"]));
  CHECK(BitEqual(Table(CodeTable4bit(QuantType::kFp4).data(), 16), g["fp4_code"]));
  CHECK(BitEqual(Table(DynamicMap8bit().data(), 256), g["dynamic_map"]));
}

TEST_CASE("quantize_4bit / dequantize_4bit are bitsandbytes', bit for bit", "[trainer][quant]") {
  torch::set_num_threads(1);
  TensorMap& g = Golden();
  for (const char* c : kCases) {
    const torch::Tensor w = g[std::string(c) + "/weight"];
    for (const Variant& v : kVariants) {
      const std::string key = std::string(c) + "/" + v.name;
      INFO(key);
      Quantized4bit q = Quantize4bit(w, v.type, v.nested);
      CHECK(q.shape == w.sizes().vec());
      INFO("packed codes that differ: " << Mismatches(q.packed, g[key + "/packed"]));
      CHECK(BitEqual(q.packed, g[key + "/packed"]));
      INFO("absmax that differ: " << Mismatches(q.absmax, g[key + "/absmax"]));
      CHECK(BitEqual(q.absmax, g[key + "/absmax"]));
      CHECK(q.nested == v.nested);
      if (v.nested) {
        CHECK(BitEqual(q.nested_absmax, g[key + "/nested_absmax"]));
        CHECK(BitEqual(q.offset, g[key + "/offset"]));
      }
      const torch::Tensor want = g[key + "/dequant"];
      INFO("dequantized values that differ: " << Mismatches(Dequantize4bit(q, w.scalar_type()), want));
      CHECK(BitEqual(Dequantize4bit(q, w.scalar_type()), want));
      CHECK(BitEqual(Dequantize4bitTorchOps(q, w.scalar_type()), want));
      const std::string f32 = g.count(key + "/dequant_f32") ? key + "/dequant_f32" : key + "/dequant";
      CHECK(BitEqual(Dequantize4bit(q, torch::kFloat32), g[f32]));
      // bitsandbytes' own state, dequantized here: the same weight.
      Quantized4bit theirs = q;
      theirs.packed = g[key + "/packed"];
      theirs.absmax = g[key + "/absmax"];
      if (v.nested) {
        theirs.nested_absmax = g[key + "/nested_absmax"];
        theirs.offset = g[key + "/offset"];
      }
      CHECK(BitEqual(Dequantize4bit(theirs, w.scalar_type()), want));
    }
  }
}

TEST_CASE("the fixture would catch a wrong nibble order or a missing offset", "[trainer][quant]") {
  TensorMap& g = Golden();
  const torch::Tensor w = g["f32_32x128/weight"];
  Quantized4bit q = Quantize4bit(w, QuantType::kNf4, true);
  Quantized4bit swapped = q;
  swapped.packed = (q.packed.bitwise_and(15) * 16).bitwise_or(q.packed.floor_divide(16)).to(torch::kUInt8);
  CHECK_FALSE(BitEqual(Dequantize4bit(swapped, torch::kFloat32), g["f32_32x128/nf4_dq/dequant"]));
  Quantized4bit no_offset = q;
  no_offset.offset = torch::zeros({}, torch::kFloat32);
  CHECK_FALSE(BitEqual(Dequantize4bit(no_offset, torch::kFloat32), g["f32_32x128/nf4_dq/dequant"]));
  // Double quantization costs a little precision: the weights differ, slightly.
  const torch::Tensor plain = g["f32_32x128/nf4/dequant"];
  const torch::Tensor nested = g["f32_32x128/nf4_dq/dequant"];
  CHECK_FALSE(BitEqual(plain, nested));
  CHECK(testing::MaxRelDiff(nested, plain) < 0.02);
}

TEST_CASE("a 4-bit linear: y = x W^T + b with W dequantized, gradients to x only", "[trainer][quant]") {
  torch::manual_seed(3);
  const torch::Tensor w = torch::randn({48, 128}) * 0.02;
  const torch::Tensor bias = torch::randn({48});
  Frozen4bitWeight q(w, QuantType::kNf4, true);
  const torch::Tensor deq = q->Dequantize(torch::kFloat32);
  CHECK(deq.sizes() == w.sizes());
  CHECK(testing::MaxRelDiff(deq, w) < 0.2);  // 4 bits: close, not equal
  torch::Tensor x = torch::randn({2, 5, 128}).requires_grad_(true);
  torch::Tensor y = q->Linear(x, bias);
  CHECK(torch::equal(y, torch::nn::functional::linear(x.detach(), deq, bias)));
  torch::Tensor up = torch::randn({2, 5, 48});
  (y * up).sum().backward();
  CHECK(torch::allclose(x.grad(), torch::matmul(up, deq), 1e-5, 1e-6));
  // 4 bits per weight + one float32 scale per 64, the scales in 8 bits.
  const double ratio = static_cast<double>(q->bytes()) / (w.numel() * 4);
  CHECK(ratio > 0.125);
  CHECK(ratio < 0.135);
  // bfloat16 compute: W rounded once from code * scale.
  torch::Tensor yb = q->Linear(x.detach().to(torch::kBFloat16), bias.to(torch::kBFloat16));
  CHECK(yb.scalar_type() == torch::kBFloat16);
  CHECK(torch::equal(q->Dequantize(torch::kBFloat16), deq.to(torch::kBFloat16)));
}

}  // namespace
}  // namespace tune
