// RopeConfig: the rotary position embedding of a Hugging Face config.json, in
// either format: transformers 4.x (top-level rope_theta, rope_scaling) or
// 5.x (rope_parameters holding rope_theta and the scaling). Torch-free; the
// tables themselves are trainer/rope.h.
//
// Resolution follows transformers 5's RotaryEmbeddingConfigMixin
// (convert_rope_params_to_dict + standardize_rope_params):
//   - rope_scaling, when set, wins over rope_parameters;
//   - rope_theta: the one inside that dict, else the top-level key, else 10000;
//   - rope_type: "rope_type", else the old "type", else "default";
//   - original_max_position_embeddings (llama3, yarn): a top-level key wins,
//     then the dict's, then max_position_embeddings.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace tune {

struct RopeConfig {
  // "default", "linear", "dynamic" (NTK-aware, depends on the sequence
  // length), "llama3" or "yarn".
  std::string type = "default";
  double theta = 10000.0;
  double factor = 1.0;                            // linear, dynamic, llama3, yarn
  int64_t original_max_position_embeddings = 0;   // llama3, yarn
  double low_freq_factor = 1.0;                   // llama3
  double high_freq_factor = 4.0;                  // llama3
  // yarn. attention_factor < 0: derived from factor (and mscale/mscale_all_dim).
  double attention_factor = -1.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 0.0;
  double mscale_all_dim = 0.0;
  bool truncate = true;
};

// Reads the RoPE of a parsed config.json object. `max_position_embeddings` is
// the model's (already defaulted). Non-OK (InvalidArgument) names the key: an
// unsupported rope_type, a missing required parameter, a parameter that the
// type does not know, a nested per-layer-type dict, or a wrong type.
Result<RopeConfig> ParseRopeConfig(const nlohmann::json& config, int64_t max_position_embeddings);

// The rope_theta / rope_scaling pair (transformers 4.x keys, which 5.x also
// reads) that ParseRopeConfig reads back as `rope`; rope_scaling is null for
// the default type.
void WriteRopeConfig(const RopeConfig& rope, nlohmann::json* config);

}  // namespace tune
