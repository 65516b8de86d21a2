#include "trainer/lora_config.h"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_integer.h"

namespace tune {

double LoraConfig::Scaling() const {
  return use_rslora ? alpha / std::sqrt(static_cast<double>(r)) : alpha / static_cast<double>(r);
}

Status LoraConfig::Validate() const {
  static const std::set<std::string> kKnown = {"q_proj", "k_proj", "v_proj", "o_proj",
                                               "gate_proj", "up_proj", "down_proj"};
  if (r <= 0) return Status::InvalidArgument("--lora-r must be positive, got " + std::to_string(r));
  if (!(dropout >= 0.0 && dropout < 1.0)) {
    return Status::InvalidArgument("--lora-dropout must be in [0, 1), got " + std::to_string(dropout));
  }
  if (target_modules.empty()) return Status::InvalidArgument("--target-modules is empty");
  for (const auto& m : target_modules) {
    if (!kKnown.count(m)) {
      return Status::InvalidArgument("--target-modules: unknown module '" + m +
                                     "' (expected q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)");
    }
  }
  return Status::Ok();
}

std::vector<std::string> SplitModuleList(const std::string& csv) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : csv + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur.push_back(c);
    }
  }
  return out;
}

std::string AdapterConfigJson(const LoraConfig& c, const std::string& base_model) {
  nlohmann::json j;
  j["peft_type"] = "LORA";
  j["task_type"] = "CAUSAL_LM";
  j["base_model_name_or_path"] = base_model;
  j["r"] = c.r;
  j["lora_alpha"] = c.alpha;
  j["lora_dropout"] = c.dropout;
  j["target_modules"] = c.target_modules;
  j["use_rslora"] = c.use_rslora;
  j["bias"] = "none";
  j["fan_in_fan_out"] = false;
  j["inference_mode"] = true;
  j["init_lora_weights"] = true;
  j["modules_to_save"] = nullptr;
  j["layers_to_transform"] = nullptr;
  j["layers_pattern"] = nullptr;
  j["rank_pattern"] = nlohmann::json::object();
  j["alpha_pattern"] = nlohmann::json::object();
  j["revision"] = nullptr;
  return j.dump(2) + "\n";
}

Result<LoraConfig> ParseAdapterConfig(const std::string& json_text) {
  LoraConfig c;
  try {
    auto j = nlohmann::json::parse(json_text);
    std::optional<int64_t> r = JsonInteger<int64_t>(j.at("r"));
    if (!r) return Status::InvalidArgument("adapter_config.json: \"r\" must be an integer, got " + j.at("r").dump());
    c.r = *r;
    c.alpha = j.at("lora_alpha").get<double>();
    c.dropout = j.value("lora_dropout", 0.0);
    c.use_rslora = j.value("use_rslora", false);
    c.target_modules = j.at("target_modules").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("adapter_config.json: ") + e.what());
  }
  TUNE_RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace tune
