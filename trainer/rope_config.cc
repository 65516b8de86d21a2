#include "trainer/rope_config.h"

#include <set>

#include <nlohmann/json.hpp>

namespace tune {
namespace {

using nlohmann::json;

Status Bad(const std::string& what) { return Status::InvalidArgument("config.json: " + what); }

// Every key transformers' RopeParameters knows. A key outside this set is
// refused; a known key that the type does not use is ignored, as transformers
// ignores it (with a warning).
const std::set<std::string>& KnownRopeKeys() {
  static const std::set<std::string> keys = {
      "rope_type", "type", "rope_theta", "factor", "original_max_position_embeddings", "low_freq_factor",
      "high_freq_factor", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
      "truncate", "partial_rotary_factor", "short_factor", "long_factor"};
  return keys;
}

Status Number(const json& dict, const std::string& where, const char* key, bool required, double* out) {
  auto it = dict.find(key);
  if (it == dict.end()) {
    if (required) return Bad(where + " has no '" + key + "', which its rope_type requires");
    return Status::Ok();
  }
  if (it->is_null()) return Status::Ok();
  if (!it->is_number()) return Bad(where + "." + key + " must be a number");
  *out = it->get<double>();
  return Status::Ok();
}

}  // namespace

Result<RopeConfig> ParseRopeConfig(const json& config, int64_t max_position_embeddings) {
  RopeConfig rope;
  // The dict: rope_scaling (4.x) when set, else rope_parameters (5.x).
  json dict = json::object();
  std::string where = "rope_parameters";
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    if (!it->is_object()) return Bad(std::string(key) + " must be an object or null");
    if (it->empty()) continue;
    dict = *it;
    where = key;
  }
  auto top_theta = config.find("rope_theta");
  if (top_theta != config.end() && !top_theta->is_null()) {
    if (!top_theta->is_number()) return Bad("rope_theta must be a number");
    rope.theta = top_theta->get<double>();
  }
  for (auto& [key, value] : dict.items()) {
    if (!KnownRopeKeys().count(key)) {
      if (value.is_object()) return Bad(where + " is nested per layer type ('" + key + "'), which is not supported");
      return Bad(where + "." + key + " is not a RoPE parameter lora_train knows; it may change the model's math");
    }
  }
  if (dict.contains("rope_type") && !dict["rope_type"].is_null()) {
    if (!dict["rope_type"].is_string()) return Bad(where + ".rope_type must be a string");
    rope.type = dict["rope_type"].get<std::string>();
  } else if (dict.contains("type") && !dict["type"].is_null()) {
    if (!dict["type"].is_string()) return Bad(where + ".type must be a string");
    rope.type = dict["type"].get<std::string>();
  }
  TUNE_RETURN_IF_ERROR(Number(dict, where, "rope_theta", false, &rope.theta));
  double partial = 1.0;
  TUNE_RETURN_IF_ERROR(Number(dict, where, "partial_rotary_factor", false, &partial));
  if (partial != 1.0) return Bad(where + ".partial_rotary_factor must be 1.0 (partial RoPE is not supported)");
  if (!(rope.theta > 0.0)) return Bad(where + ": rope_theta must be positive");

  const std::string& t = rope.type;
  if (t == "default") return rope;
  if (t != "linear" && t != "dynamic" && t != "llama3" && t != "yarn") {
    return Bad(where + ".rope_type '" + t +
               "' is not supported (expected default, linear, dynamic, llama3 or yarn)");
  }
  // factor: required by every scaled type; yarn alone accepts null (derived).
  auto f = dict.find("factor");
  if (f == dict.end()) return Bad(where + " has no 'factor', which rope_type '" + t + "' requires");
  const bool factor_null = f->is_null();
  if (factor_null && t != "yarn") return Bad(where + ".factor must be a number for rope_type '" + t + "'");
  TUNE_RETURN_IF_ERROR(Number(dict, where, "factor", true, &rope.factor));
  if (t == "llama3" || t == "yarn") {
    rope.original_max_position_embeddings = max_position_embeddings;
    auto top = config.find("original_max_position_embeddings");
    auto in_dict = dict.find("original_max_position_embeddings");
    const json* src = nullptr;
    if (top != config.end() && !top->is_null()) src = &*top;
    else if (in_dict != dict.end() && !in_dict->is_null()) src = &*in_dict;
    if (src) {
      if (!src->is_number_integer() || src->get<int64_t>() <= 0) {
        return Bad("original_max_position_embeddings must be a positive integer");
      }
      rope.original_max_position_embeddings = src->get<int64_t>();
    }
  }
  if (t == "llama3") {
    TUNE_RETURN_IF_ERROR(Number(dict, where, "low_freq_factor", true, &rope.low_freq_factor));
    TUNE_RETURN_IF_ERROR(Number(dict, where, "high_freq_factor", true, &rope.high_freq_factor));
    if (!(rope.high_freq_factor > rope.low_freq_factor)) {
      return Bad(where + ".high_freq_factor must be greater than low_freq_factor");
    }
  }
  if (t == "yarn") {
    if (factor_null) {
      rope.factor = static_cast<double>(max_position_embeddings) /
                    static_cast<double>(rope.original_max_position_embeddings);
    }
    TUNE_RETURN_IF_ERROR(Number(dict, where, "attention_factor", false, &rope.attention_factor));
    // transformers: `get("beta_fast") or 32`: absent, null and 0 all mean the default.
    double v = 0.0;
    TUNE_RETURN_IF_ERROR(Number(dict, where, "beta_fast", false, &v));
    rope.beta_fast = v != 0.0 ? v : 32.0;
    v = 0.0;
    TUNE_RETURN_IF_ERROR(Number(dict, where, "beta_slow", false, &v));
    rope.beta_slow = v != 0.0 ? v : 1.0;
    TUNE_RETURN_IF_ERROR(Number(dict, where, "mscale", false, &rope.mscale));
    TUNE_RETURN_IF_ERROR(Number(dict, where, "mscale_all_dim", false, &rope.mscale_all_dim));
    auto tr = dict.find("truncate");
    if (tr != dict.end() && !tr->is_null()) {
      if (!tr->is_boolean()) return Bad(where + ".truncate must be true or false");
      rope.truncate = tr->get<bool>();
    }
  }
  if (!(rope.factor > 0.0)) return Bad(where + ".factor must be positive");
  return rope;
}

void WriteRopeConfig(const RopeConfig& rope, json* config) {
  (*config)["rope_theta"] = rope.theta;
  if (rope.type == "default") {
    (*config)["rope_scaling"] = nullptr;
    return;
  }
  json s = {{"rope_type", rope.type}, {"factor", rope.factor}};
  if (rope.type == "llama3" || rope.type == "yarn") {
    s["original_max_position_embeddings"] = rope.original_max_position_embeddings;
  }
  if (rope.type == "llama3") {
    s["low_freq_factor"] = rope.low_freq_factor;
    s["high_freq_factor"] = rope.high_freq_factor;
  }
  if (rope.type == "yarn") {
    if (rope.attention_factor >= 0.0) s["attention_factor"] = rope.attention_factor;
    s["beta_fast"] = rope.beta_fast;
    s["beta_slow"] = rope.beta_slow;
    if (rope.mscale != 0.0) s["mscale"] = rope.mscale;
    if (rope.mscale_all_dim != 0.0) s["mscale_all_dim"] = rope.mscale_all_dim;
    s["truncate"] = rope.truncate;
  }
  (*config)["rope_scaling"] = s;
}

}  // namespace tune
