// Gradient checkpointing (trainer/checkpointing.h): recomputing each layer in
// the backward pass gives the loss and LoRA gradients of the plain backward
// pass, LoRA dropout included (its random draws are replayed).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "tests/trainer/test_util.h"
#include "trainer/model.h"
#include "trainer/safetensors.h"

namespace tune {
namespace {

struct Pass {
  double loss = 0;
  std::map<std::string, torch::Tensor> grads;
};

Pass RunOnce(const std::string& arch, bool checkpointing, double dropout) {
  torch::set_num_threads(1);
  const std::string dir = testing::GoldenDir() + "/" + arch;
  auto golden = ReadSafetensors(dir + "/golden.safetensors");
  REQUIRE(golden.ok());
  auto lm = LoadPretrained(dir);
  REQUIRE(lm.ok());
  CausalLm model = *lm;
  LoraConfig lora;
  lora.r = 4;
  lora.alpha = 8;
  lora.dropout = dropout;
  lora.target_modules = {"q_proj", "v_proj", "o_proj", "up_proj", "down_proj"};
  REQUIRE(model->ApplyLora(lora).ok());
  {  // non-zero B so that every LoRA tensor gets a gradient
    torch::NoGradGuard no_grad;
    torch::manual_seed(3);
    for (auto& p : model->LoraParameters()) p.normal_(0.0, 0.05);
  }
  model->set_gradient_checkpointing(checkpointing);
  model->train();
  torch::manual_seed(11);  // the dropout masks
  torch::Tensor loss = CausalLmImpl::Loss(model->forward((*golden)["input_ids"]), (*golden)["labels"]);
  loss.backward();
  Pass out;
  out.loss = loss.item<double>();
  for (auto& item : model->named_parameters()) {
    if (item.key().find("lora_") == std::string::npos) continue;
    REQUIRE(item.value().grad().defined());
    out.grads[item.key()] = item.value().grad().clone();
  }
  return out;
}

TEST_CASE("gradient checkpointing: the same loss and LoRA gradients, dropout replayed", "[trainer][checkpointing]") {
  for (const std::string arch : {"llama", "qwen2"}) {
    for (double dropout : {0.0, 0.3}) {
      INFO(arch << " dropout " << dropout);
      Pass plain = RunOnce(arch, false, dropout);
      Pass recomputed = RunOnce(arch, true, dropout);
      CHECK(recomputed.loss == plain.loss);
      REQUIRE(recomputed.grads.size() == plain.grads.size());
      for (const auto& [name, g] : plain.grads) {
        INFO(name << " max rel diff " << testing::MaxRelDiff(recomputed.grads[name], g));
        CHECK(g.abs().max().item<double>() > 0);
        CHECK(testing::CloseRel(recomputed.grads[name], g, 1e-6));
      }
    }
  }
}

TEST_CASE("gradient checkpointing is off in eval and without grad", "[trainer][checkpointing]") {
  const std::string dir = testing::GoldenDir() + "/llama";
  auto golden = ReadSafetensors(dir + "/golden.safetensors");
  REQUIRE(golden.ok());
  auto lm = LoadPretrained(dir);
  REQUIRE(lm.ok());
  CausalLm model = *lm;
  model->set_gradient_checkpointing(true);
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor logits = model->forward((*golden)["input_ids"]);
  CHECK(testing::CloseRel(logits, (*golden)["logits"], 1e-4));
}

}  // namespace
}  // namespace tune
