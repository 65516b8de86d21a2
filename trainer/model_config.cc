#include "trainer/model_config.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_integer.h"
#include "trainer/config_keys.h"

namespace tune {
namespace {

using nlohmann::json;

template <typename T>
Status Field(const json& j, const char* name, bool required, T* out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (required) return Status::InvalidArgument(std::string("config.json: missing field '") + name + "'");
    return Status::Ok();
  }
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    std::optional<T> v = JsonInteger<T>(*it);
    if (!v) {
      return Status::InvalidArgument(std::string("config.json: field '") + name + "' must be an integer, got " +
                                     it->dump());
    }
    *out = *v;
    return Status::Ok();
  }
  try {
    *out = it->get<T>();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("config.json: field '") + name + "' has the wrong type: " + e.what());
  }
  return Status::Ok();
}

}  // namespace

bool HasQkvBias(const ModelConfig& c) {
  if (c.model_type == "qwen2") return true;
  return (c.model_type == "llama" || c.model_type == "qwen3") && c.attention_bias;
}

bool HasOutputBias(const ModelConfig& c) {
  return (c.model_type == "llama" || c.model_type == "qwen3") && c.attention_bias;
}

bool HasQkNorm(const ModelConfig& c) { return c.model_type == "qwen3"; }

namespace {

// Sliding-window attention as transformers 5 configures it per model type.
Status ParseSlidingWindow(const json& j, ModelConfig* c) {
  const bool qwen = c->model_type == "qwen2" || c->model_type == "qwen3";
  if (!qwen && c->model_type != "mistral") return Status::Ok();
  // Both MistralConfig and Qwen*Config default sliding_window to 4096 when
  // the key is absent; null means none.
  int64_t window = 4096;
  auto it = j.find("sliding_window");
  if (it != j.end()) {
    if (it->is_null()) {
      window = 0;
    } else if (!it->is_number_integer() || it->get<int64_t>() <= 0) {
      return Status::InvalidArgument("config.json: sliding_window must be a positive integer or null");
    } else {
      window = it->get<int64_t>();
    }
  }
  c->layer_sliding.assign(static_cast<size_t>(c->num_hidden_layers), false);
  if (!qwen) {  // Mistral: the window (if any) on every layer
    c->sliding_window = window;
    if (window > 0) c->layer_sliding.assign(c->layer_sliding.size(), true);
    return Status::Ok();
  }
  bool use = false;
  TUNE_RETURN_IF_ERROR(Field(j, "use_sliding_window", false, &use));
  if (!use) window = 0;  // Qwen: sliding_window = sliding_window if use_sliding_window else None
  auto lt = j.find("layer_types");
  if (lt != j.end() && !lt->is_null()) {
    if (!lt->is_array() || static_cast<int64_t>(lt->size()) != c->num_hidden_layers) {
      return Status::InvalidArgument("config.json: layer_types must be a list with one entry per layer (" +
                                     std::to_string(c->num_hidden_layers) + ")");
    }
    for (size_t i = 0; i < lt->size(); ++i) {
      const json& t = (*lt)[i];
      if (t == "full_attention") continue;
      if (t != "sliding_attention") {
        return Status::InvalidArgument("config.json: layer_types[" + std::to_string(i) + "] is " + t.dump() +
                                       " (expected \"full_attention\" or \"sliding_attention\")");
      }
      if (window == 0) {
        return Status::InvalidArgument("config.json: layer_types[" + std::to_string(i) +
                                       "] is sliding_attention but there is no window "
                                       "(use_sliding_window is false or sliding_window is null)");
      }
      c->layer_sliding[i] = true;
    }
  } else if (window > 0) {
    int64_t max_window_layers = 28;
    TUNE_RETURN_IF_ERROR(Field(j, "max_window_layers", false, &max_window_layers));
    for (int64_t i = max_window_layers < 0 ? 0 : max_window_layers; i < c->num_hidden_layers; ++i) {
      c->layer_sliding[static_cast<size_t>(i)] = true;
    }
  }
  c->sliding_window = 0;
  for (bool s : c->layer_sliding) {
    if (s) c->sliding_window = window;
  }
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> ParseModelConfig(const std::string& json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("config.json: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument("config.json: expected a JSON object");
  ModelConfig c;
  TUNE_RETURN_IF_ERROR(Field(j, "model_type", true, &c.model_type));
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2" && c.model_type != "qwen3") {
    return Status::InvalidArgument("config.json: model_type '" + c.model_type +
                                   "' is not supported (expected llama, mistral, qwen2 or qwen3)");
  }
  TUNE_RETURN_IF_ERROR(CheckConfigKeys(j, c.model_type));
  TUNE_RETURN_IF_ERROR(Field(j, "vocab_size", true, &c.vocab_size));
  TUNE_RETURN_IF_ERROR(Field(j, "hidden_size", true, &c.hidden_size));
  TUNE_RETURN_IF_ERROR(Field(j, "intermediate_size", true, &c.intermediate_size));
  TUNE_RETURN_IF_ERROR(Field(j, "num_hidden_layers", true, &c.num_hidden_layers));
  TUNE_RETURN_IF_ERROR(Field(j, "num_attention_heads", true, &c.num_attention_heads));
  c.num_key_value_heads = c.num_attention_heads;
  TUNE_RETURN_IF_ERROR(Field(j, "num_key_value_heads", false, &c.num_key_value_heads));
  // Qwen3Config's head_dim defaults to 128; the others derive it.
  if (c.model_type == "qwen3") c.head_dim = 128;
  TUNE_RETURN_IF_ERROR(Field(j, "head_dim", false, &c.head_dim));
  // transformers' per-type defaults (they only matter for RoPE scaling).
  c.max_position_embeddings = c.model_type == "llama" ? 2048 : c.model_type == "mistral" ? 131072 : 32768;
  TUNE_RETURN_IF_ERROR(Field(j, "max_position_embeddings", false, &c.max_position_embeddings));
  TUNE_RETURN_IF_ERROR(Field(j, "rms_norm_eps", false, &c.rms_norm_eps));
  TUNE_RETURN_IF_ERROR(Field(j, "initializer_range", false, &c.initializer_range));
  TUNE_RETURN_IF_ERROR(Field(j, "tie_word_embeddings", false, &c.tie_word_embeddings));
  if (c.model_type == "llama" || c.model_type == "qwen3") {
    TUNE_RETURN_IF_ERROR(Field(j, "attention_bias", false, &c.attention_bias));
  }
  if (c.model_type == "llama") TUNE_RETURN_IF_ERROR(Field(j, "mlp_bias", false, &c.mlp_bias));
  // bos/eos may be an int or a list (Llama 3); keep the first.
  for (auto [name, out] : {std::pair{"bos_token_id", &c.bos_token_id}, std::pair{"eos_token_id", &c.eos_token_id}}) {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) continue;
    if (it->is_number_integer()) *out = it->get<int64_t>();
    else if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) *out = (*it)[0].get<int64_t>();
  }
  if (c.head_dim == 0 && c.num_attention_heads > 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_hidden_layers <= 0 ||
      c.num_attention_heads <= 0 || c.num_key_value_heads <= 0 || c.head_dim <= 0 ||
      c.max_position_embeddings <= 0) {
    return Status::InvalidArgument("config.json: sizes must be positive");
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return Status::InvalidArgument("config.json: num_attention_heads must be a multiple of num_key_value_heads");
  }
  if (c.head_dim % 2 != 0) return Status::InvalidArgument("config.json: head_dim must be even for RoPE");
  TUNE_ASSIGN_OR_RETURN(c.rope, ParseRopeConfig(j, c.max_position_embeddings));
  TUNE_RETURN_IF_ERROR(ParseSlidingWindow(j, &c));
  return c;
}

Result<ModelConfig> LoadModelConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read model config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = ParseModelConfig(ss.str());
  if (!r.ok()) {
    // "config.json: why" -> "<path>: why", one sentence naming the file.
    std::string why = r.status().message();
    const std::string own = "config.json: ";
    if (why.rfind(own, 0) == 0) why = why.substr(own.size());
    return Status(r.status().code(), path + ": " + why);
  }
  return r;
}

std::string ModelConfigToJson(const ModelConfig& c) {
  json j;
  const char* arch = c.model_type == "qwen2"   ? "Qwen2ForCausalLM"
                     : c.model_type == "qwen3" ? "Qwen3ForCausalLM"
                     : c.model_type == "mistral" ? "MistralForCausalLM"
                                                 : "LlamaForCausalLM";
  j["architectures"] = {arch};
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  WriteRopeConfig(c.rope, &j);
  j["initializer_range"] = c.initializer_range;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["hidden_act"] = "silu";
  if (c.model_type == "llama" || c.model_type == "qwen3") j["attention_bias"] = c.attention_bias;
  if (c.model_type == "llama") j["mlp_bias"] = c.mlp_bias;
  if (c.model_type == "mistral") {
    j["sliding_window"] = c.sliding_window > 0 ? json(c.sliding_window) : json(nullptr);
  } else if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    j["use_sliding_window"] = c.sliding_window > 0;
    j["sliding_window"] = c.sliding_window > 0 ? json(c.sliding_window) : json(nullptr);
    json types = json::array();
    for (bool s : c.layer_sliding) types.push_back(s ? "sliding_attention" : "full_attention");
    if (c.sliding_window > 0) j["layer_types"] = types;
  }
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_id >= 0) j["eos_token_id"] = c.eos_token_id;
  j["torch_dtype"] = "float32";
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}

}  // namespace tune
