#include "trainer/rope.h"

#include <algorithm>
#include <cmath>

namespace tune {
namespace {

// 1 / base^(2i / dim), i < dim / 2: `base` as a double or a float32 0-dim
// tensor (dynamic), like `base ** (arange(0, dim, 2).float() / dim)`.
torch::Tensor DefaultInvFreq(const torch::Tensor& base, int64_t dim) {
  torch::Tensor exponent = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dim);
  return 1.0 / torch::pow(base, exponent);
}

torch::Tensor DefaultInvFreq(double base, int64_t dim) {
  torch::Tensor exponent = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dim);
  return 1.0 / torch::pow(base, exponent);
}

// modeling_rope_utils._compute_llama3_parameters.
torch::Tensor Llama3InvFreq(const RopeConfig& r, int64_t dim) {
  torch::Tensor inv_freq = DefaultInvFreq(r.theta, dim);
  const double old_context_len = static_cast<double>(r.original_max_position_embeddings);
  const double low_freq_wavelen = old_context_len / r.low_freq_factor;
  const double high_freq_wavelen = old_context_len / r.high_freq_factor;
  torch::Tensor wavelen = 2 * M_PI / inv_freq;
  torch::Tensor inv_freq_llama = torch::where(wavelen > low_freq_wavelen, inv_freq / r.factor, inv_freq);
  torch::Tensor smooth_factor =
      (old_context_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
  torch::Tensor smoothed = (1 - smooth_factor) * inv_freq_llama / r.factor + smooth_factor * inv_freq_llama;
  torch::Tensor is_medium = (wavelen < high_freq_wavelen).logical_not() * (wavelen > low_freq_wavelen).logical_not();
  return torch::where(is_medium, smoothed, inv_freq_llama);
}

// modeling_rope_utils._compute_yarn_parameters.
RopeFrequencies Yarn(const RopeConfig& r, int64_t dim) {
  auto get_mscale = [](double scale, double mscale) {
    return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
  };
  RopeFrequencies out;
  if (r.attention_factor >= 0.0) {
    out.attention_scaling = r.attention_factor;
  } else if (r.mscale != 0.0 && r.mscale_all_dim != 0.0) {
    out.attention_scaling = get_mscale(r.factor, r.mscale) / get_mscale(r.factor, r.mscale_all_dim);
  } else {
    out.attention_scaling = get_mscale(r.factor, 1.0);
  }
  const double base = r.theta;
  const double orig = static_cast<double>(r.original_max_position_embeddings);
  auto correction_dim = [&](double num_rotations) {
    return (dim * std::log(orig / (num_rotations * 2 * M_PI))) / (2 * std::log(base));
  };
  double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
  if (r.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // transformers: "prevent singularity"
  torch::Tensor pos_freqs =
      torch::pow(base, torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dim));
  torch::Tensor extrapolation = 1.0 / pos_freqs;
  torch::Tensor interpolation = 1.0 / (r.factor * pos_freqs);
  torch::Tensor ramp = torch::clamp((torch::arange(dim / 2, torch::kFloat32) - low) / (high - low), 0, 1);
  torch::Tensor extrapolation_factor = 1 - ramp;
  out.inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
  return out;
}

}  // namespace

RopeFrequencies ComputeRopeFrequencies(const ModelConfig& c, int64_t seq_len) {
  const RopeConfig& r = c.rope;
  const int64_t dim = c.head_dim;
  torch::NoGradGuard no_grad;
  RopeFrequencies out;
  if (r.type == "linear") {
    out.inv_freq = DefaultInvFreq(r.theta, dim) / r.factor;
  } else if (r.type == "dynamic") {
    // base * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2)),
    // seq_len an int64 0-dim tensor as in the forward pass, so in float32.
    const int64_t max_pos = c.max_position_embeddings;
    const double exponent = static_cast<double>(dim) / static_cast<double>(dim - 2);
    if (seq_len <= max_pos) {  // at init: a Python int, so in double
      const double m = static_cast<double>(max_pos);
      out.inv_freq = DefaultInvFreq(r.theta * std::pow((r.factor * m / m) - (r.factor - 1), exponent), dim);
      return out;
    }
    torch::Tensor len = torch::tensor(seq_len, torch::kInt64);
    torch::Tensor base = r.theta * torch::pow((r.factor * len / static_cast<double>(max_pos)) - (r.factor - 1), exponent);
    out.inv_freq = DefaultInvFreq(base, dim);
  } else if (r.type == "llama3") {
    out.inv_freq = Llama3InvFreq(r, dim);
  } else if (r.type == "yarn") {
    out = Yarn(r, dim);
  } else {
    out.inv_freq = DefaultInvFreq(r.theta, dim);
  }
  return out;
}

RotaryEmbedding::RotaryEmbedding(const ModelConfig& config)
    : config_(config), freq_(ComputeRopeFrequencies(config, 0)),
      max_seq_len_cached_(config.max_position_embeddings) {}

void RotaryEmbedding::Tables(int64_t T, const torch::Device& device, torch::Tensor* cos, torch::Tensor* sin) {
  if (config_.rope.type == "dynamic") {
    // transformers' dynamic_frequency_update, with seq_len = max(position) + 1.
    const int64_t original = config_.max_position_embeddings;
    bool changed = false;
    if (T > max_seq_len_cached_) {  // growth
      freq_ = ComputeRopeFrequencies(config_, T);
      max_seq_len_cached_ = T;
      changed = true;
    }
    if (T < original && max_seq_len_cached_ > original) {  // reset
      freq_ = ComputeRopeFrequencies(config_, 0);
      max_seq_len_cached_ = original;
      changed = true;
    }
    if (changed) cos_ = torch::Tensor();
  }
  if (!cos_.defined() || cos_.size(0) < T || cos_.device() != device) {
    torch::NoGradGuard no_grad;
    const int64_t L = std::max<int64_t>(T, 64);
    torch::Tensor t = torch::arange(L, torch::kInt64).to(torch::kFloat32);
    torch::Tensor freqs = torch::outer(t, freq_.inv_freq);
    torch::Tensor emb = torch::cat({freqs, freqs}, -1);  // [L, head_dim]
    cos_ = (emb.cos() * freq_.attention_scaling).to(device);
    sin_ = (emb.sin() * freq_.attention_scaling).to(device);
  }
  *cos = cos_.slice(0, 0, T);
  *sin = sin_.slice(0, 0, T);
}

}  // namespace tune
