// LoraConfig: the LoRA hyperparameters, with PEFT's meaning and names.
// Torch-free.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tune {

struct LoraConfig {
  int64_t r = 8;
  double alpha = 16.0;
  double dropout = 0.05;
  std::vector<std::string> target_modules = {"q_proj", "v_proj"};
  bool use_rslora = false;  // scaling alpha / sqrt(r) instead of alpha / r

  double Scaling() const;
  // OK when r > 0, 0 <= dropout < 1 and every target is one of
  // q_proj k_proj v_proj o_proj gate_proj up_proj down_proj.
  Status Validate() const;
};

// "q_proj,v_proj" -> {"q_proj", "v_proj"} (blanks dropped).
std::vector<std::string> SplitModuleList(const std::string& csv);

// adapter_config.json as PEFT (LoraConfig, task CAUSAL_LM) reads it.
std::string AdapterConfigJson(const LoraConfig& config, const std::string& base_model);
// Reads back r, lora_alpha, lora_dropout, target_modules, use_rslora.
Result<LoraConfig> ParseAdapterConfig(const std::string& json_text);

}  // namespace tune
