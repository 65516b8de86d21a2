// ModelConfig: the fields of a Hugging Face config.json that define a
// decoder-only Llama or Qwen2 model. Torch-free.
#pragma once

#include <cstdint>
#include <string>

#include "tuner/core/status.h"

namespace tune {

struct ModelConfig {
  std::string model_type = "llama";  // "llama" or "qwen2"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;   // GQA; equals num_attention_heads when absent
  int64_t head_dim = 0;              // hidden_size / num_attention_heads when absent
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  double initializer_range = 0.02;
  bool tie_word_embeddings = false;
  bool attention_bias = false;       // q/k/v biases: always true for qwen2
  int64_t bos_token_id = -1;         // -1: none
  int64_t eos_token_id = -1;
};

// Parses config.json text. Non-OK (InvalidArgument) names the missing or bad
// field; unsupported architectures and rope_scaling are rejected, not ignored.
Result<ModelConfig> ParseModelConfig(const std::string& json_text);
// Reads and parses a file; NotFound when it cannot be read.
Result<ModelConfig> LoadModelConfig(const std::string& path);
// The config.json text that Hugging Face transformers reads back as the same
// model (architectures, model_type, every field above, torch_dtype float32).
std::string ModelConfigToJson(const ModelConfig& config);

}  // namespace tune
