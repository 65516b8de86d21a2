#include "trainer/model_config.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

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
  try {
    *out = it->get<T>();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("config.json: field '") + name + "' has the wrong type: " + e.what());
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
  if (c.model_type != "llama" && c.model_type != "qwen2") {
    return Status::InvalidArgument("config.json: model_type '" + c.model_type +
                                   "' is not supported (expected 'llama' or 'qwen2')");
  }
  TUNE_RETURN_IF_ERROR(Field(j, "vocab_size", true, &c.vocab_size));
  TUNE_RETURN_IF_ERROR(Field(j, "hidden_size", true, &c.hidden_size));
  TUNE_RETURN_IF_ERROR(Field(j, "intermediate_size", true, &c.intermediate_size));
  TUNE_RETURN_IF_ERROR(Field(j, "num_hidden_layers", true, &c.num_hidden_layers));
  TUNE_RETURN_IF_ERROR(Field(j, "num_attention_heads", true, &c.num_attention_heads));
  c.num_key_value_heads = c.num_attention_heads;
  TUNE_RETURN_IF_ERROR(Field(j, "num_key_value_heads", false, &c.num_key_value_heads));
  TUNE_RETURN_IF_ERROR(Field(j, "head_dim", false, &c.head_dim));
  TUNE_RETURN_IF_ERROR(Field(j, "max_position_embeddings", false, &c.max_position_embeddings));
  TUNE_RETURN_IF_ERROR(Field(j, "rms_norm_eps", false, &c.rms_norm_eps));
  TUNE_RETURN_IF_ERROR(Field(j, "rope_theta", false, &c.rope_theta));
  TUNE_RETURN_IF_ERROR(Field(j, "initializer_range", false, &c.initializer_range));
  TUNE_RETURN_IF_ERROR(Field(j, "tie_word_embeddings", false, &c.tie_word_embeddings));
  TUNE_RETURN_IF_ERROR(Field(j, "attention_bias", false, &c.attention_bias));
  if (c.model_type == "qwen2") c.attention_bias = true;
  // bos/eos may be an int or a list (Llama 3); keep the first.
  for (auto [name, out] : {std::pair{"bos_token_id", &c.bos_token_id}, std::pair{"eos_token_id", &c.eos_token_id}}) {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) continue;
    if (it->is_number_integer()) *out = it->get<int64_t>();
    else if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) *out = (*it)[0].get<int64_t>();
  }
  auto rs = j.find("rope_scaling");
  if (rs != j.end() && !rs->is_null()) {
    return Status::InvalidArgument("config.json: rope_scaling is not supported (only plain RoPE)");
  }
  if (c.head_dim == 0 && c.num_attention_heads > 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_hidden_layers <= 0 ||
      c.num_attention_heads <= 0 || c.num_key_value_heads <= 0 || c.head_dim <= 0) {
    return Status::InvalidArgument("config.json: sizes must be positive");
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return Status::InvalidArgument("config.json: num_attention_heads must be a multiple of num_key_value_heads");
  }
  if (c.head_dim % 2 != 0) return Status::InvalidArgument("config.json: head_dim must be even for RoPE");
  return c;
}

Result<ModelConfig> LoadModelConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read model config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = ParseModelConfig(ss.str());
  if (!r.ok()) return Status(r.status().code(), path + ": " + r.status().message());
  return r;
}

std::string ModelConfigToJson(const ModelConfig& c) {
  json j;
  j["architectures"] = {c.model_type == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  if (c.head_dim != c.hidden_size / c.num_attention_heads) j["head_dim"] = c.head_dim;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["initializer_range"] = c.initializer_range;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["hidden_act"] = "silu";
  if (c.model_type == "llama") j["attention_bias"] = c.attention_bias;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_id >= 0) j["eos_token_id"] = c.eos_token_id;
  j["torch_dtype"] = "float32";
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}

}  // namespace tune
