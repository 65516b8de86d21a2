// The model, LoRA and AdamW against Hugging Face transformers + PEFT
// (fixtures from golden/make_golden.py): logits, loss, adapter gradients and
// one optimizer step, for a tiny Llama (untied head) and a tiny Qwen2 (q/k/v
// biases, tied embeddings, sharded safetensors), both with GQA and saved by
// transformers 4.x, and one tiny model per feature saved by transformers 5
// (rope_parameters, RoPE scaling types, biases, sliding windows, Qwen3). For
// each feature the test also shows that the golden catches its absence: the
// same weights with the feature switched off give other logits.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "tests/trainer/test_util.h"
#include "trainer/model.h"
#include "trainer/safetensors.h"

namespace tune {
namespace {

constexpr double kRtol = 1e-4;

// Switches a feature off in a config (nullptr: nothing to switch off).
using FeatureOff = std::function<void(ModelConfig*)>;

void CheckArch(const std::string& arch, const FeatureOff& feature_off = nullptr) {
  torch::set_num_threads(1);
  const std::string dir = testing::GoldenDir() + "/" + arch;
  auto golden = ReadSafetensors(dir + "/golden.safetensors");
  REQUIRE(golden.ok());
  TensorMap& g = *golden;
  auto lm = LoadPretrained(dir);
  REQUIRE(lm.ok());
  CausalLm model = *lm;
  model->eval();
  {
    torch::NoGradGuard no_grad;
    torch::Tensor logits = model->forward(g["input_ids"]);
    INFO(arch << " logits max rel diff " << testing::MaxRelDiff(logits, g["logits"]));
    CHECK(testing::CloseRel(logits, g["logits"], kRtol));
    if (feature_off) {
      ModelConfig off = model->config();
      feature_off(&off);
      CausalLm without(off);
      auto weights = ReadModelWeights(dir);
      REQUIRE(weights.ok());
      REQUIRE(without->LoadBase(*weights).ok());
      const double moved = testing::MaxRelDiff(without->forward(g["input_ids"]), g["logits"]);
      INFO(arch << " logits with the feature off: max rel diff " << moved);
      CHECK(moved > 100 * kRtol);
    }
  }

  LoraConfig lora;
  lora.r = 4;
  lora.alpha = 8;
  lora.dropout = 0.0;
  lora.target_modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  REQUIRE(model->ApplyLora(lora).ok());
  auto adapter = ReadSafetensors(dir + "/adapter_init/adapter_model.safetensors");
  REQUIRE(adapter.ok());
  REQUIRE(model->LoadAdapter(*adapter).ok());
  REQUIRE(model->AdapterState().size() == adapter->size());
  model->train();
  torch::Tensor logits = model->forward(g["input_ids"]);
  torch::Tensor loss = CausalLmImpl::Loss(logits, g["labels"]);
  INFO(arch << " lora logits max rel diff " << testing::MaxRelDiff(logits.detach(), g["lora_logits"]));
  CHECK(testing::CloseRel(logits.detach(), g["lora_logits"], kRtol));
  CHECK(loss.item<double>() == Approx(g["lora_loss"].item<double>()).epsilon(kRtol));
  // The gradients come from the training loop's loss: the head on the target
  // positions only (the golden's labels mask a prompt), summed, then divided
  // by the target count as the loop does.
  const int64_t targets = g["labels"].slice(1, 1).ne(-100).sum().item<int64_t>();
  REQUIRE(targets < g["labels"].size(0) * (g["labels"].size(1) - 1));
  torch::Tensor train_loss = model->TargetLossSum(g["input_ids"], g["labels"]) / static_cast<double>(targets);
  CHECK(train_loss.item<double>() == Approx(g["lora_loss"].item<double>()).epsilon(kRtol));
  train_loss.backward();

  std::vector<torch::Tensor> params = model->LoraParameters();
  torch::optim::AdamW opt(params, torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  // Gradients, by PEFT key.
  std::map<std::string, torch::Tensor> grads;
  for (auto& item : model->named_parameters()) {
    if (item.key().find("lora_") == std::string::npos) continue;
    grads["base_model.model." + item.key()] = item.value().grad();
  }
  REQUIRE(grads.size() == 28);
  for (const auto& [key, grad] : grads) {
    INFO(arch << " grad " << key << " max rel diff " << testing::MaxRelDiff(grad, g["grad/" + key]));
    REQUIRE(g.count("grad/" + key));
    CHECK(testing::CloseRel(grad, g["grad/" + key], kRtol));
  }
  opt.step();
  for (const auto& [key, value] : model->AdapterState()) {
    INFO(arch << " after one AdamW step " << key);
    CHECK(testing::CloseRel(value, g["step/" + key], kRtol));
  }
  // Base weights did not move.
  auto again = ReadModelWeights(dir);
  REQUIRE(again.ok());
  for (auto& [name, t] : model->BaseState()) CHECK(torch::equal(t, (*again)[name]));
}

TEST_CASE("Llama logits, loss, LoRA grads and AdamW step match transformers+PEFT", "[trainer][golden]") {
  CheckArch("llama");
}

TEST_CASE("Qwen2 logits, loss, LoRA grads and AdamW step match transformers+PEFT", "[trainer][golden]") {
  CheckArch("qwen2");
}

TEST_CASE("transformers 5 config format: rope_theta from rope_parameters", "[trainer][golden]") {
  CheckArch("llama_v5", [](ModelConfig* c) { c->rope.theta = 10000.0; });
}

TEST_CASE("Llama mlp_bias and attention_bias (o_proj too) match transformers", "[trainer][golden]") {
  CheckArch("llama_bias", [](ModelConfig* c) { c->mlp_bias = false; });
  CheckArch("llama_bias", [](ModelConfig* c) { c->attention_bias = false; });
}

TEST_CASE("RoPE scaling linear, dynamic, llama3 and yarn match transformers", "[trainer][golden]") {
  auto plain = [](ModelConfig* c) { c->rope.type = "default"; };
  CheckArch("llama_linear", plain);
  CheckArch("llama_dynamic", plain);
  CheckArch("llama3_rope", plain);
  CheckArch("qwen2_yarn", plain);
}

TEST_CASE("Sliding-window attention: Qwen2 (per layer) and Mistral match transformers", "[trainer][golden]") {
  auto full = [](ModelConfig* c) {
    c->sliding_window = 0;
    c->layer_sliding.assign(c->layer_sliding.size(), false);
  };
  CheckArch("qwen2_sliding", full);
  CheckArch("mistral_sliding", full);
}

TEST_CASE("Qwen3 (q_norm / k_norm, head_dim) matches transformers+PEFT", "[trainer][golden]") {
  CheckArch("qwen3", [](ModelConfig* c) { c->model_type = "llama"; });
}

}  // namespace
}  // namespace tune
