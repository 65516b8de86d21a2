// RotaryEmbedding: the cos/sin tables of RoPE for every rope type of
// trainer/rope_config.h, computed with the formulas and float32 arithmetic of
// transformers' modeling_rope_utils (default, linear, dynamic NTK, llama3,
// yarn with its attention factor).
//
// The dynamic type depends on the sequence length and, as in transformers'
// dynamic_rope_update, on the longest length seen so far: a forward longer
// than max_position_embeddings recomputes the frequencies for that length and
// keeps them until a forward shorter than max_position_embeddings restores
// the original ones. Not thread-safe (one model owns one).
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "trainer/model_config.h"

namespace tune {

// inv_freq [head_dim / 2] (float32) and the factor that scales cos and sin,
// for a forward whose positions are 0 .. seq_len - 1 (seq_len only matters to
// the dynamic type; <= 0 means max_position_embeddings, as at init).
struct RopeFrequencies {
  torch::Tensor inv_freq;
  double attention_scaling = 1.0;
};
RopeFrequencies ComputeRopeFrequencies(const ModelConfig& config, int64_t seq_len);

class RotaryEmbedding {
 public:
  explicit RotaryEmbedding(const ModelConfig& config);
  // cos, sin: [T, head_dim] on `device`, for positions 0 .. T - 1.
  void Tables(int64_t T, const torch::Device& device, torch::Tensor* cos, torch::Tensor* sin);
  // The frequencies the last Tables() call used.
  const RopeFrequencies& frequencies() const { return freq_; }

 private:
  ModelConfig config_;
  RopeFrequencies freq_;
  int64_t max_seq_len_cached_;  // dynamic: the length freq_ was made for
  torch::Tensor cos_, sin_;     // cache of the tables for freq_, >= T rows
};

}  // namespace tune
