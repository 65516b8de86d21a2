// The model, LoRA and AdamW against Hugging Face transformers + PEFT
// (fixtures from golden/make_golden.py): logits, loss, adapter gradients and
// one optimizer step, for a tiny Llama (untied head) and a tiny Qwen2 (q/k/v
// biases, tied embeddings, sharded safetensors), both with GQA.
#include <catch2/catch.hpp>

#include <string>

#include "tests/trainer/test_util.h"
#include "trainer/model.h"
#include "trainer/safetensors.h"

namespace tune {
namespace {

constexpr double kRtol = 1e-4;

void CheckArch(const std::string& arch) {
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
  loss.backward();

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

}  // namespace
}  // namespace tune
