// QLoRA in the model and in lora_train (docs/trainer-models.md, "QLoRA"):
// --quantize holds every decoder projection of the tiny golden Llama in 4
// bits (not the embeddings, not lm_head) at about 0.13-0.14x of its float32
// bytes; the logits and the LoRA gradients are exactly those of the float
// model carrying the dequantized weights, with and without gradient
// checkpointing; logits and LoRA gradients match transformers + PEFT +
// bitsandbytes; lora_train trains with it (the loss goes down), 2 ranks
// equal 1, and a checkpoint saved in 4-bit is refused in one sentence.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/trainer/run_util.h"
#include "tests/trainer/test_util.h"
#include "trainer/model.h"
#include "trainer/safetensors.h"

namespace tune {
namespace {

using testing::LoraTrainBin;
using testing::Slurp;
using testing::Sh;
using testing::Metrics;
using testing::FreePort;

BaseQuantization Nf4(bool double_quant) {
  BaseQuantization q;
  q.on = true;
  q.type = QuantType::kNf4;
  q.double_quant = double_quant;
  return q;
}

std::string LlamaDir() { return testing::GoldenDir() + "/llama"; }

// The golden Llama with every decoder projection's weight replaced by its
// 4-bit round trip, in float32: what the quantized model must compute.
CausalLm DequantizedTwin(const BaseQuantization& q) {
  auto weights = ReadModelWeights(LlamaDir());
  REQUIRE(weights.ok());
  for (auto& [name, t] : *weights) {
    if (name.rfind("model.layers.", 0) != 0 || name.find("_proj.weight") == std::string::npos) continue;
    t = Dequantize4bit(Quantize4bit(t, q.type, q.double_quant), torch::kFloat32);
  }
  auto cfg = LoadModelConfig(LlamaDir() + "/config.json");
  REQUIRE(cfg.ok());
  CausalLm lm(*cfg);
  REQUIRE(lm->LoadBase(*weights).ok());
  return lm;
}

LoraConfig Lora() {
  LoraConfig lora;
  lora.r = 4;
  lora.alpha = 8;
  lora.dropout = 0.0;
  lora.target_modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  return lora;
}

// LoRA gradients (PEFT keys) of the golden loss, adapter_init loaded.
TensorMap LoraGrads(CausalLm& model, bool checkpointing) {
  auto golden = ReadSafetensors(LlamaDir() + "/golden.safetensors");
  auto adapter = ReadSafetensors(LlamaDir() + "/adapter_init/adapter_model.safetensors");
  REQUIRE(golden.ok());
  REQUIRE(adapter.ok());
  REQUIRE(model->ApplyLora(Lora()).ok());
  REQUIRE(model->LoadAdapter(*adapter).ok());
  model->train();
  model->set_gradient_checkpointing(checkpointing);
  CausalLmImpl::Loss(model->forward((*golden)["input_ids"]), (*golden)["labels"]).backward();
  TensorMap grads;
  for (auto& item : model->named_parameters()) {
    if (item.key().find("lora_") != std::string::npos) grads[item.key()] = item.value().grad().clone();
  }
  return grads;
}

TEST_CASE("QLoRA --quantize: decoder projections in 4 bits, the rest in float, the logits of the dequantized weights",
          "[trainer][quant]") {
  torch::set_num_threads(1);
  for (bool dq : {false, true}) {
    INFO("double quant " << dq);
    auto lm = LoadPretrained(LlamaDir(), Nf4(dq));
    REQUIRE(lm.ok());
    CausalLm model = *lm;
    model->eval();
    int quantized = 0;
    for (auto& item : model->named_modules()) {
      auto proj = std::dynamic_pointer_cast<ProjectionImpl>(item.value());
      if (!proj) continue;
      const bool decoder = item.key().rfind("model.layers.", 0) == 0;
      CHECK(proj->quantized() == decoder);
      CHECK(proj->weight.numel() == (decoder ? 0 : proj->in_features() * proj->out_features()));
      quantized += proj->quantized();
    }
    CHECK(quantized == 7 * model->config().num_hidden_layers);
    CHECK(model->model->embed_tokens->weight.numel() == model->config().vocab_size * model->config().hidden_size);

    auto golden = ReadSafetensors(LlamaDir() + "/golden.safetensors");
    REQUIRE(golden.ok());
    torch::NoGradGuard no_grad;
    const torch::Tensor logits = model->forward((*golden)["input_ids"]);
    CausalLm twin = DequantizedTwin(Nf4(dq));
    twin->eval();
    const torch::Tensor want = twin->forward((*golden)["input_ids"]);
    INFO("vs the dequantized float model: " << testing::MaxRelDiff(logits, want));
    CHECK(testing::CloseRel(logits, want, 1e-6));
    // 4 bits move the logits of the float model, by little.
    const double moved = testing::MaxRelDiff(logits, (*golden)["logits"]);
    INFO("vs the float model: " << moved);
    CHECK(moved > 1e-4);
    CHECK(moved < 0.5);  // this fixture's weights (std 0.08) are coarser in 4 bits than trained ones
  }
}

// transformers + PEFT + bitsandbytes 0.50.2 on the CPU (golden/make_quant_golden.py):
// a tiny Llama and a tiny Qwen2 loaded with BitsAndBytesConfig, NF4 and FP4, with and
// without double quantization: logits, LoRA loss and LoRA gradients.
TEST_CASE("QLoRA --quantize: logits and LoRA gradients of transformers + PEFT + bitsandbytes", "[trainer][quant]") {
  torch::set_num_threads(1);
  const std::pair<const char*, BaseQuantization> variants[] = {
      {"nf4", {true, QuantType::kNf4, false}},
      {"fp4", {true, QuantType::kFp4, false}},
      {"nf4_dq", {true, QuantType::kNf4, true}},
      {"fp4_dq", {true, QuantType::kFp4, true}}};
  for (const char* arch : {"quant_llama", "quant_qwen2"}) {
    const std::string dir = testing::GoldenDir() + "/" + arch;
    auto golden = ReadSafetensors(dir + "/golden.safetensors");
    auto adapter = ReadSafetensors(dir + "/adapter_init/adapter_model.safetensors");
    REQUIRE(golden.ok());
    REQUIRE(adapter.ok());
    TensorMap& g = *golden;
    for (const auto& [name, quant] : variants) {
      const std::string v = name;
      INFO(arch << " " << v);
      auto lm = LoadPretrained(dir, quant);
      REQUIRE(lm.ok());
      CausalLm model = *lm;
      model->eval();
      {
        torch::NoGradGuard no_grad;
        const torch::Tensor logits = model->forward(g["input_ids"]);
        INFO("logits max rel diff " << testing::MaxRelDiff(logits, g["logits/" + v]));
        CHECK(testing::CloseRel(logits, g["logits/" + v], 1e-5));
        CHECK(testing::MaxRelDiff(logits, g["logits/float"]) > 1e-3);  // the fixture sees the quantization
      }
      REQUIRE(model->ApplyLora(Lora()).ok());
      REQUIRE(model->LoadAdapter(*adapter).ok());
      model->train();
      torch::Tensor loss = CausalLmImpl::Loss(model->forward(g["input_ids"]), g["labels"]);
      CHECK(loss.item<double>() == Approx(g["lora_loss/" + v].item<double>()).epsilon(1e-5));
      loss.backward();
      int n = 0;
      for (auto& item : model->named_parameters()) {
        if (item.key().find("lora_") == std::string::npos) continue;
        const torch::Tensor& want = g["grad/" + v + "/base_model.model." + item.key()];
        INFO(item.key() << " grad max rel diff " << testing::MaxRelDiff(item.value().grad(), want));
        CHECK(testing::CloseRel(item.value().grad(), want, 1e-4));
        ++n;
      }
      CHECK(n == 2 * 7 * 2);
    }
  }
}

TEST_CASE("QLoRA --quantize: 4-bit projections hold 0.13-0.15x of their float32 bytes", "[trainer][quant]") {
  auto cfg = LoadModelConfig(LlamaDir() + "/config.json");
  REQUIRE(cfg.ok());
  for (bool dq : {false, true}) {
    CausalLm lm(*cfg);
    int64_t full = 0;
    const int64_t held = lm->QuantizeBase(Nf4(dq), torch::kFloat32, &full);
    const double ratio = static_cast<double>(held) / static_cast<double>(full);
    INFO("double quant " << dq << ": " << held << " of " << full << " bytes, ratio " << ratio);
    CHECK(ratio > (dq ? 0.125 : 0.14));
    CHECK(ratio < (dq ? 0.135 : 0.145));
  }
}

TEST_CASE("QLoRA --quantize: LoRA gradients are those of the dequantized float base, with gradient checkpointing too",
          "[trainer][quant]") {
  torch::set_num_threads(1);
  auto lm = LoadPretrained(LlamaDir(), Nf4(true));
  REQUIRE(lm.ok());
  CausalLm twin = DequantizedTwin(Nf4(true));
  TensorMap got = LoraGrads(*lm, false);
  TensorMap want = LoraGrads(twin, false);
  REQUIRE(got.size() == 2 * 7 * 2);
  for (auto& [k, g] : got) {
    INFO(k << " max rel diff " << testing::MaxRelDiff(g, want[k]));
    CHECK(testing::CloseRel(g, want[k], 1e-5));
  }
  auto again = LoadPretrained(LlamaDir(), Nf4(true));
  REQUIRE(again.ok());
  TensorMap checkpointed = LoraGrads(*again, true);
  for (auto& [k, g] : checkpointed) {
    INFO(k << " checkpointed: max rel diff " << testing::MaxRelDiff(g, got[k]));
    CHECK(testing::CloseRel(g, got[k], 1e-6));
  }
}

TEST_CASE("a checkpoint saved in 4-bit is refused in one sentence", "[trainer][quant]") {
  const testing::TempDir tmp("q4ckpt");
  const std::string dir = tmp.Sub("model");
  std::filesystem::copy_file(LlamaDir() + "/config.json", dir + "/config.json");
  auto weights = ReadModelWeights(LlamaDir());
  REQUIRE(weights.ok());
  (*weights)["model.layers.0.self_attn.q_proj.weight.quant_state.bitsandbytes__nf4"] =
      torch::zeros({8}, torch::kUInt8);
  REQUIRE(WriteSafetensors(dir + "/model.safetensors", *weights).ok());
  auto lm = LoadPretrained(dir, Nf4(false));
  REQUIRE_FALSE(lm.ok());
  CHECK(lm.status().IsInvalidArgument());
  CHECK_THAT(lm.status().message(), Catch::Contains("saved in 4-bit"));
  CHECK_THAT(lm.status().message(), Catch::Contains("quant_state"));
}

std::string Data(const std::string& dir) {
  const char* words[] = {"alpha beta gamma", "the quick brown fox", "hello world again", "one two three four"};
  std::ofstream out(dir + "/train.jsonl");
  for (int i = 0; i < 48; ++i) {
    out << nlohmann::json{{"instruction", "Repeat item " + std::to_string(i % 4) + "."}, {"response", words[i % 4]}}
               .dump()
        << "\n";
  }
  return dir + "/train.jsonl";
}

std::string Flags(const std::string& data) {
  return " --base " + LlamaDir() + " --data " + data +
         " --seq-len 96 --threads 1 --lora-r 4 --lora-alpha 8 --target-modules q_proj,v_proj,o_proj,up_proj" +
         " --quantize nf4 --double-quant --lora-dropout 0 --dist-timeout 60";
}

TEST_CASE("lora_train --quantize nf4 --double-quant trains: the loss goes down", "[trainer][quant][run]") {
  const testing::TempDir tmp("qlora");
  const std::string dir = tmp.path.string();
  const int rc = Sh(LoraTrainBin() + Flags(Data(dir)) + " --output " + dir + "/out --max-steps 16 --eval-every 8" +
                    " --log-every 4 --lr 2e-2 --batch-size 4 > " + dir + "/stdout 2> " + dir + "/stderr");
  const std::string err = Slurp(dir + "/stderr");
  INFO(err);
  REQUIRE(rc == 0);
  auto m = Metrics(Slurp(dir + "/stdout"));
  REQUIRE(m.count({8, "eval_loss"}));
  REQUIRE(m.count({16, "eval_loss"}));
  CHECK(m[{16, "eval_loss"}] < m[{8, "eval_loss"}] - 0.1);
  CHECK(m[{16, "train_loss"}] < m[{4, "train_loss"}]);
  CHECK_THAT(err, Catch::Contains("nf4 with double quantization"));
  CHECK(err.find('=') == std::string::npos);
  auto adapter = ReadSafetensors(dir + "/out/adapter_model.safetensors");
  REQUIRE(adapter.ok());
  CHECK(adapter->size() == 2 * 2 * 4);
}

TEST_CASE("lora_train --quantize: 2 ranks with batch b equal 1 rank with batch 2b", "[trainer][quant][run]") {
  const testing::TempDir tmp("qlora_ddp");
  const std::string dir = tmp.path.string();
  const std::string flags = Flags(Data(dir)) + " --max-steps 3 --eval-every 3 --lr 1e-2";
  REQUIRE(Sh(LoraTrainBin() + flags + " --batch-size 4 --output " + dir + "/one > " + dir + "/one.out 2>&1") == 0);
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(FreePort());
  const int rc = Sh(env + " RANK=1 LOCAL_RANK=1 " + LoraTrainBin() + flags + " --batch-size 2 --output " + dir +
                    "/two > " + dir + "/r1.out 2>&1 & " + env + " RANK=0 LOCAL_RANK=0 " + LoraTrainBin() + flags +
                    " --batch-size 2 --output " + dir + "/two > " + dir + "/r0.out 2>&1; r0=$?; wait $!; " +
                    "r1=$?; exit $((r0 + r1))");
  INFO(Slurp(dir + "/r0.out") << Slurp(dir + "/r1.out"));
  REQUIRE(rc == 0);
  auto one = Metrics(Slurp(dir + "/one.out"));
  auto two = Metrics(Slurp(dir + "/r0.out"));
  CHECK(two[{3, "eval_loss"}] == Approx(one[{3, "eval_loss"}]).epsilon(1e-4));
  auto a = ReadSafetensors(dir + "/one/adapter_model.safetensors");
  auto b = ReadSafetensors(dir + "/two/adapter_model.safetensors");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (auto& [k, t] : *a) {
    INFO(k);
    CHECK(testing::CloseRel(t, (*b)[k], 1e-4));
  }
}

TEST_CASE("lora_train refuses --double-quant alone and an unknown --quantize", "[trainer][quant][run]") {
  const testing::TempDir tmp("qlora_bad");
  const std::string dir = tmp.path.string();
  const std::string base = " --base " + LlamaDir() + " --data " + Data(dir) + " --output " + dir + "/out";
  CHECK(Sh(LoraTrainBin() + base + " --double-quant 2> " + dir + "/e1") == 2);
  CHECK_THAT(Slurp(dir + "/e1"), Catch::Contains("--double-quant needs --quantize"));
  CHECK(Sh(LoraTrainBin() + base + " --quantize int4 2> " + dir + "/e2") == 2);
  CHECK_THAT(Slurp(dir + "/e2"), Catch::Contains("expected nf4 or fp4"));
  CHECK_FALSE(std::filesystem::exists(dir + "/out/adapter_model.safetensors"));
}

}  // namespace
}  // namespace tune
