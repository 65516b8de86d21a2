#include "trainer/quant_4bit.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <ATen/Parallel.h>

namespace tune {
namespace {

// bitsandbytes functional.py, get_4bit_type("nf4"): quantiles of N(0, 1)
// (create_normal_map(offset=0.9677083)), as float32.
constexpr std::array<float, 16> kNf4 = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,
    -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f,
    0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f,
    1.0f};

// get_4bit_type("fp4"): 1 sign, 2 exponent, 1 mantissa bit, in bit-pattern
// order, divided by the largest magnitude (12) in float32. Its list writes
// code 8 as the Python integer -0, which is 0: both zeros are +0.0.
std::array<float, 16> MakeFp4() {
  const float raw[16] = {0, 0.0625f, 8, 12, 4, 6, 2, 3, 0, -0.0625f, -8, -12, -4, -6, -2, -3};
  std::array<float, 16> out{};
  for (int i = 0; i < 16; ++i) out[i] = raw[i] / 12.0f;
  return out;
}

// create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8), sorted,
// as bitsandbytes computes it in float32 (written out from it).
#include "trainer/quant_dynamic_map.inc"

// The 16 codes sorted by value and the 15 midpoints between neighbours:
// backends/default/ops.py, _get_4bit_quantize_bounds() (argsort, then
// (sorted[i] + sorted[i + 1]) / 2 in float32). argsort keeps FP4's two
// zeros in code order (0, then 8), as a stable sort does.
struct Bounds4bit {
  std::array<uint8_t, 16> order{};
  std::array<float, 15> mid{};
};

Bounds4bit MakeBounds(QuantType type) {
  const auto& code = CodeTable4bit(type);
  Bounds4bit b;
  std::array<int, 16> idx{};
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int x, int y) { return code[x] < code[y]; });
  for (int i = 0; i < 16; ++i) b.order[i] = static_cast<uint8_t>(idx[i]);
  for (int i = 0; i < 15; ++i) b.mid[i] = (code[idx[i]] + code[idx[i + 1]]) / 2.0f;
  return b;
}

// torch.bucketize(v, mid, right=False): how many midpoints are below v.
inline uint8_t Bucket(const Bounds4bit& b, float v) {
  return static_cast<uint8_t>(std::lower_bound(b.mid.begin(), b.mid.end(), v) - b.mid.begin());
}

// The 8-bit lookup of csrc/cpu_ops.cpp (build_quantize_lut,
// norm_to_lut_index): [-1, 1] cut into 65536 bins, each mapped to the
// nearest entry of the map by its midpoints.
constexpr int kLutSize = 65536;

const std::vector<uint8_t>& DynamicLut() {
  static const std::vector<uint8_t> lut = [] {
    const auto& map = DynamicMap8bit();
    float mid[255];
    for (int i = 0; i < 255; ++i) mid[i] = 0.5f * (map[i] + map[i + 1]);
    std::vector<uint8_t> out(kLutSize);
    int code = 0;
    for (int i = 0; i < kLutSize; ++i) {
      const float val = -1.0f + (2.0f * static_cast<float>(i)) / static_cast<float>(kLutSize - 1);
      while (code < 255 && mid[code] < val) ++code;
      out[i] = static_cast<uint8_t>(code);
    }
    return out;
  }();
  return lut;
}

// norm_to_lut_index(): uint16((v + 1) * 0.5 * 65535 + 0.5) in float32.
// Whether the last multiply-add is fused or not gives the same index (no
// difference over 4M random values against the library).
inline uint16_t LutIndex(float v) {
  v = std::clamp(v, -1.0f, 1.0f);
  const float half = (v + 1.0f) * 0.5f;
  return static_cast<uint16_t>(half * static_cast<float>(kLutSize - 1) + 0.5f);
}

torch::Tensor MapTensor(const float* values, int64_t n, const torch::Device& device) {
  return torch::from_blob(const_cast<float*>(values), {n}, torch::kFloat32).clone().to(device);
}

}  // namespace

Result<QuantType> ParseQuantType(const std::string& name) {
  if (name == "nf4") return QuantType::kNf4;
  if (name == "fp4") return QuantType::kFp4;
  return Status::InvalidArgument("--quantize " + name + ": expected nf4 or fp4");
}

Result<BaseQuantization> ParseBaseQuantization(const std::string& quantize, bool double_quant) {
  BaseQuantization q;
  if (quantize.empty() || quantize == "none") {
    if (double_quant) return Status::InvalidArgument("--double-quant needs --quantize nf4 or fp4");
    return q;
  }
  TUNE_ASSIGN_OR_RETURN(q.type, ParseQuantType(quantize));
  q.on = true;
  q.double_quant = double_quant;
  return q;
}

const char* QuantTypeName(QuantType type) { return type == QuantType::kNf4 ? "nf4" : "fp4"; }

const std::array<float, 16>& CodeTable4bit(QuantType type) {
  static const std::array<float, 16> fp4 = MakeFp4();
  return type == QuantType::kNf4 ? kNf4 : fp4;
}

const std::array<float, 256>& DynamicMap8bit() { return kDynamicMap; }

int64_t Quantized4bit::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Quantized4bit::bytes() const {
  int64_t b = packed.numel() + absmax.numel() * static_cast<int64_t>(absmax.element_size());
  if (nested) b += nested_absmax.numel() * 4 + 4;
  return b;
}

// csrc/cpu_ops.cpp, quantize_cpu_impl() (bitsandbytes::quantize_blockwise on
// the CPU, float32): absmax per block, then the LUT code of x * (1 / absmax);
// a block of zeros gets code 0.
void QuantizeBlockwise8bit(const torch::Tensor& values, int64_t blocksize, torch::Tensor* codes,
                           torch::Tensor* absmax) {
  torch::Tensor a = values.detach().to(torch::kCPU, torch::kFloat32).contiguous().reshape({-1});
  const int64_t n = a.numel();
  const int64_t blocks = (n + blocksize - 1) / blocksize;
  *codes = torch::zeros({n}, torch::kUInt8);
  *absmax = torch::empty({blocks}, torch::kFloat32);
  const float* x = a.data_ptr<float>();
  uint8_t* out = codes->data_ptr<uint8_t>();
  float* am = absmax->data_ptr<float>();
  const std::vector<uint8_t>& lut = DynamicLut();
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t start = b * blocksize, end = std::min(start + blocksize, n);
    float m = 0.0f;
    for (int64_t i = start; i < end; ++i) m = std::max(m, std::fabs(x[i]));
    am[b] = m;
    if (m == 0.0f) continue;
    const float inv = 1.0f / m;
    for (int64_t i = start; i < end; ++i) out[i] = lut[LutIndex(x[i] * inv)];
  }
}

// csrc/cpu_ops.cpp, dequantizeBlockwise8bitCpu(): map[code] * absmax.
torch::Tensor DequantizeBlockwise8bit(const torch::Tensor& codes, const torch::Tensor& absmax, int64_t blocksize) {
  const int64_t n = codes.numel();
  const int64_t blocks = absmax.numel();
  torch::Tensor map = MapTensor(DynamicMap8bit().data(), 256, codes.device());
  torch::Tensor v = map.index_select(0, codes.reshape({-1}).to(torch::kLong));
  v = torch::constant_pad_nd(v, {0, blocks * blocksize - n});
  return (v.view({blocks, blocksize}) * absmax.view({blocks, 1})).reshape({-1}).slice(0, 0, n);
}

// functional.py quantize_4bit() -> backends/default/ops.py
// bitsandbytes::quantize_4bit (the kernel the CPU runs): per block of 64 the
// absmax; full blocks scale by x * (1 / absmax.clamp(min=1e-38)), a last
// partial block by x / max(absmax, 1e-38) (and stores that clamped absmax);
// clamp to [-1, 1]; bucketize against the midpoints; FP4 maps the sorted
// index back through argsort; an odd count is padded with a 0; two codes per
// byte, the first in the high nibble. compress_statistics: offset =
// absmax.mean(), then quantize_blockwise(absmax - offset, blocksize=256).
Quantized4bit Quantize4bit(const torch::Tensor& weight, QuantType type, bool double_quant, int64_t blocksize) {
  static const Bounds4bit kBounds[2] = {MakeBounds(QuantType::kNf4), MakeBounds(QuantType::kFp4)};
  const Bounds4bit& bounds = kBounds[type == QuantType::kNf4 ? 0 : 1];
  torch::Tensor a = weight.detach().to(torch::kCPU).to(torch::kFloat32).contiguous().reshape({-1});
  const int64_t n = a.numel();
  const int64_t blocks = (n + blocksize - 1) / blocksize;
  Quantized4bit q;
  q.type = type;
  q.blocksize = blocksize;
  q.shape = weight.sizes().vec();
  q.packed = torch::empty({(n + 1) / 2}, torch::kUInt8);
  torch::Tensor absmax = torch::empty({blocks}, torch::kFloat32);
  const float* x = a.data_ptr<float>();
  float* am = absmax.data_ptr<float>();
  uint8_t* packed = q.packed.data_ptr<uint8_t>();
  const uint8_t zero_code = bounds.order[Bucket(bounds, 0.0f)];
  at::parallel_for(0, blocks, 16, [&](int64_t lo, int64_t hi) {
    std::vector<uint8_t> codes(blocksize + 1);
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t start = b * blocksize, len = std::min(blocksize, n - start);
      float m = 0.0f;
      for (int64_t i = 0; i < len; ++i) m = std::max(m, std::fabs(x[start + i]));
      const float clamped = std::max(m, 1e-38f);
      const float inv = 1.0f / clamped;
      am[b] = len == blocksize ? m : clamped;
      for (int64_t i = 0; i < len; ++i) {
        const float s = len == blocksize ? x[start + i] * inv : x[start + i] / clamped;
        codes[i] = bounds.order[Bucket(bounds, std::clamp(s, -1.0f, 1.0f))];
      }
      codes[len] = zero_code;  // the pad of an odd count (blocksize is even)
      for (int64_t i = 0; i < len; i += 2) packed[(start + i) / 2] = static_cast<uint8_t>(codes[i] << 4 | codes[i + 1]);
    }
  });
  if (!double_quant) {
    q.absmax = absmax;
    return q;
  }
  q.nested = true;
  q.offset = absmax.mean();
  QuantizeBlockwise8bit(absmax - q.offset, q.nested_blocksize, &q.absmax, &q.nested_absmax);
  return q;
}

// functional.py dequantize_4bit(): nested absmax =
// dequantize_blockwise(absmax, state2) + offset, in float32.
torch::Tensor BlockScales(const Quantized4bit& q) {
  if (!q.nested) return q.absmax;
  return DequantizeBlockwise8bit(q.absmax, q.nested_absmax, q.nested_blocksize) + q.offset;
}

// backends/default/ops.py _dequantize_4bit_compute() and csrc/cpu_ops.cpp
// dequantizeBlockwise4bitCpu(): value = code[nibble] * scale in float32,
// the high nibble first, then one rounding to the output dtype.
torch::Tensor Dequantize4bitTorchOps(const Quantized4bit& q, torch::ScalarType dtype) {
  const int64_t n = q.numel();
  const auto& code = CodeTable4bit(q.type);
  float pairs[512];
  for (int b = 0; b < 256; ++b) {
    pairs[2 * b] = code[b >> 4];
    pairs[2 * b + 1] = code[b & 15];
  }
  torch::Tensor lut = MapTensor(pairs, 512, q.packed.device()).view({256, 2});
  torch::Tensor scales = BlockScales(q);
  const int64_t blocks = scales.numel();
  torch::Tensor v = lut.index_select(0, q.packed.to(torch::kLong)).reshape({-1});
  v = torch::constant_pad_nd(v, {0, blocks * q.blocksize - v.numel()});
  v = (v.view({blocks, q.blocksize}) * scales.view({blocks, 1})).reshape({-1}).slice(0, 0, n);
  return v.to(dtype).view(q.shape);
}

namespace {
template <typename T>
void DequantizeCpu(const Quantized4bit& q, const float* scales, T* out) {
  const int64_t n = q.numel(), bs = q.blocksize;
  const auto& code = CodeTable4bit(q.type);
  const uint8_t* p = q.packed.data_ptr<uint8_t>();
  at::parallel_for(0, (n + bs - 1) / bs, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float s = scales[b];
      const int64_t end = std::min(n, (b + 1) * bs);
      for (int64_t i = b * bs; i < end; ++i) {
        const uint8_t byte = p[i >> 1];
        const float v = code[(i & 1) ? (byte & 15) : (byte >> 4)] * s;
        out[i] = static_cast<T>(v);
      }
    }
  });
}
}  // namespace

torch::Tensor Dequantize4bit(const Quantized4bit& q, torch::ScalarType dtype) {
  if (!q.packed.is_cpu()) return Dequantize4bitTorchOps(q, dtype);
  torch::Tensor scales = BlockScales(q).contiguous();
  torch::Tensor out = torch::empty(q.shape, torch::TensorOptions().dtype(dtype));
  const float* s = scales.data_ptr<float>();
  switch (dtype) {
    case torch::kFloat32: DequantizeCpu(q, s, out.data_ptr<float>()); break;
    case torch::kBFloat16: DequantizeCpu(q, s, out.data_ptr<c10::BFloat16>()); break;
    case torch::kFloat16: DequantizeCpu(q, s, out.data_ptr<c10::Half>()); break;
    default: return Dequantize4bitTorchOps(q, dtype);
  }
  return out;
}

}  // namespace tune
