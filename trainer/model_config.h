// ModelConfig: the fields of a Hugging Face config.json that define a
// decoder-only Llama, Mistral, Qwen2 or Qwen3 model, read from either config
// format (transformers 4.x or 5.x). Every key is checked against the list in
// trainer/config_keys.h. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/rope_config.h"

#include "core/status.h"

namespace tune {

struct ModelConfig {
  std::string model_type = "llama";  // "llama", "mistral", "qwen2" or "qwen3"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;   // GQA; equals num_attention_heads when absent
  int64_t head_dim = 0;              // hidden_size / num_attention_heads when absent
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;                   // rope_theta / rope_scaling / rope_parameters
  double initializer_range = 0.02;
  bool tie_word_embeddings = false;
  bool attention_bias = false;       // llama, qwen3: q/k/v/o biases (qwen2: see HasQkvBias)
  bool mlp_bias = false;             // llama: gate/up/down biases
  // Sliding-window attention: 0 = none. layer_sliding[i]: layer i uses the
  // window (Mistral: every layer; Qwen: from layer_types or max_window_layers).
  int64_t sliding_window = 0;
  std::vector<bool> layer_sliding;
  int64_t bos_token_id = -1;         // -1: none
  int64_t eos_token_id = -1;
};

// Which projections have biases, and whether attention has Qwen3's per-head
// q_norm / k_norm, as transformers' model for config.model_type builds them.
bool HasQkvBias(const ModelConfig& c);
bool HasOutputBias(const ModelConfig& c);
bool HasQkNorm(const ModelConfig& c);

// Parses config.json text. Non-OK (InvalidArgument) names the missing or bad
// field or key; unknown keys, unsupported architectures and RoPE types are
// refused, not ignored (trainer/config_keys.h).
Result<ModelConfig> ParseModelConfig(const std::string& json_text);
// Reads and parses a file; NotFound when it cannot be read.
Result<ModelConfig> LoadModelConfig(const std::string& path);
// The config.json text that Hugging Face transformers reads back as the same
// model (architectures, model_type, every field above, torch_dtype float32).
std::string ModelConfigToJson(const ModelConfig& config);

}  // namespace tune
