// QLoRA in the model and in lora_train (docs/trainer-models.md, "QLoRA"):
// --quantize holds every decoder projection of the tiny golden Llama in 4
// bits (not the embeddings, not lm_head) at about 0.13-0.14x of its float32
// bytes; the logits and the LoRA gradients are exactly those of the float
// model carrying the dequantized weights, with and without gradient
// checkpointing; logits and LoRA gradients match transformers + PEFT +
// bitsandbytes; lora_train trains with it (the loss goes down), 2 ranks
// equal 1, a checkpoint saved in 4-bit is refused in one sentence, and the
// projections are quantized as they are read (the float model never exists)
// into the same bits as quantizing the loaded float model; PEFT gives an
// adapter that lora_train trained in NF4 the same loss on a transformers
// 4-bit base (a committed golden).
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

// The old way: the float model loaded whole, then QuantizeBase.
CausalLm QuantizedAfterLoad(const std::string& dir, const BaseQuantization& q, torch::ScalarType dtype) {
  auto cfg = LoadModelConfig(dir + "/config.json");
  auto weights = ReadModelWeights(dir);
  REQUIRE(cfg.ok());
  REQUIRE(weights.ok());
  CausalLm lm(*cfg);
  REQUIRE(lm->LoadBase(*weights).ok());
  lm->QuantizeBase(q, dtype);
  return lm;
}

// What a decoder projection holds beyond its bias: the largest float
// tensor among its parameters and buffers (the 4-bit codes are uint8).
int64_t LargestFloatTensor(ProjectionImpl& proj) {
  int64_t largest = 0;
  for (const auto& p : proj.parameters()) {
    if (p.is_floating_point() && !(proj.bias.defined() && p.is_same(proj.bias))) largest = std::max(largest, p.numel());
  }
  for (const auto& b : proj.buffers()) {
    if (b.is_floating_point()) largest = std::max(largest, b.numel());
  }
  return largest;
}

TEST_CASE("QLoRA --quantize: projections are quantized as they are read, the float model is never built",
          "[trainer][quant]") {
  torch::set_num_threads(1);
  const std::string quant_llama = testing::GoldenDir() + "/quant_llama";
  auto cfg = LoadModelConfig(quant_llama + "/config.json");
  REQUIRE(cfg.ok());
  // Built for loading, the decoder projections have no float weight at all.
  CausalLm empty(*cfg, Nf4(true), torch::kFloat32);
  int pending = 0;
  for (auto& item : empty->named_modules()) {
    auto proj = std::dynamic_pointer_cast<ProjectionImpl>(item.value());
    if (!proj || item.key().rfind("model.layers.", 0) != 0) continue;
    CHECK(proj->weight.numel() == 0);
    CHECK_FALSE(proj->quantized());
    ++pending;
  }
  CHECK(pending == 7 * cfg->num_hidden_layers);

  auto golden = ReadSafetensors(quant_llama + "/golden.safetensors");
  REQUIRE(golden.ok());
  const std::pair<const char*, BaseQuantization> variants[] = {{"nf4", {true, QuantType::kNf4, false}},
                                                              {"fp4_dq", {true, QuantType::kFp4, true}}};
  for (const auto& [v, quant] : variants) {
    INFO(v);
    auto lm = LoadPretrained(quant_llama, quant);
    REQUIRE(lm.ok());
    CausalLm model = *lm;
    model->eval();
    CausalLm before = QuantizedAfterLoad(quant_llama, quant, torch::kFloat32);
    before->eval();
    auto after_modules = model->named_modules();
    auto before_modules = before->named_modules();
    int quantized = 0;
    for (auto& item : after_modules) {
      auto proj = std::dynamic_pointer_cast<ProjectionImpl>(item.value());
      if (!proj || item.key().rfind("model.layers.", 0) != 0) continue;
      INFO(item.key());
      REQUIRE(proj->quantized());
      CHECK(proj->weight.numel() == 0);
      // No float tensor of the projection is a weight's size: 4-bit codes and block scales only.
      CHECK(LargestFloatTensor(*proj) <= proj->in_features() * proj->out_features() / 64);
      auto old = std::dynamic_pointer_cast<ProjectionImpl>(before_modules[item.key()]);
      auto* w = proj->named_modules()["weight_4bit"]->as<Frozen4bitWeight>();
      auto* w_old = old->named_modules()["weight_4bit"]->as<Frozen4bitWeight>();
      CHECK(torch::equal(w->Dequantize(torch::kFloat32), w_old->Dequantize(torch::kFloat32)));
      ++quantized;
    }
    CHECK(quantized == 7 * cfg->num_hidden_layers);
    torch::NoGradGuard no_grad;
    const torch::Tensor logits = model->forward((*golden)["input_ids"]);
    CHECK(torch::equal(logits, before->forward((*golden)["input_ids"])));
    INFO("vs transformers + bitsandbytes: " << testing::MaxRelDiff(logits, (*golden)[std::string("logits/") + v]));
    CHECK(testing::CloseRel(logits, (*golden)[std::string("logits/") + v], 1e-5));
  }

  SECTION("a sharded bf16 checkpoint and a bf16 compute dtype: the bits of the float model quantized") {
    const testing::TempDir tmp("q4bf16");
    const std::string dir = tmp.Sub("model");
    std::filesystem::copy_file(testing::GoldenDir() + "/qwen2/config.json", dir + "/config.json");
    auto weights = ReadModelWeights(testing::GoldenDir() + "/qwen2");
    REQUIRE(weights.ok());
    nlohmann::json index;
    TensorMap halves[2];
    int i = 0;
    for (auto& [name, t] : *weights) {
      const std::string shard = i % 2 ? "model-b.safetensors" : "model-a.safetensors";
      halves[i++ % 2][name] = t.to(torch::kBFloat16);
      index["weight_map"][name] = shard;
    }
    REQUIRE(WriteSafetensors(dir + "/model-a.safetensors", halves[0]).ok());
    REQUIRE(WriteSafetensors(dir + "/model-b.safetensors", halves[1]).ok());
    std::ofstream(dir + "/model.safetensors.index.json") << index.dump();
    for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
      INFO(c10::toString(dtype));
      auto lm = LoadPretrained(dir, Nf4(true), dtype);
      REQUIRE(lm.ok());
      CausalLm before = QuantizedAfterLoad(dir, Nf4(true), dtype);
      auto golden_q = ReadSafetensors(testing::GoldenDir() + "/qwen2/golden.safetensors");
      REQUIRE(golden_q.ok());
      (*lm)->eval();
      before->eval();
      torch::NoGradGuard no_grad;
      CHECK(torch::equal((*lm)->forward((*golden_q)["input_ids"]), before->forward((*golden_q)["input_ids"])));
    }
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

// quant_llama/lora_train_nf4 (golden/make_quant_golden.py --lora-train): an
// adapter that lora_train trained with --quantize nf4 --double-quant, and
// PEFT's logits and loss with that adapter loaded onto the base that
// transformers loaded in NF4 with double quantization (bitsandbytes 0.50.2).
// kAdapterFlags are the script's LORA_TRAIN_FLAGS.
constexpr char kAdapterFlags[] =
    " --quantize nf4 --double-quant --seq-len 48 --threads 1 --lora-r 4 --lora-alpha 8 --lora-dropout 0"
    " --target-modules q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj --max-steps 8 --batch-size 4"
    " --lr 1e-2 --eval-every 0 --seed 1 --no-auto-resume";

TEST_CASE("QLoRA: PEFT gives lora_train's 4-bit adapter the same loss on a transformers 4-bit base",
          "[trainer][quant][run]") {
  torch::set_num_threads(1);
  const std::string quant_llama = testing::GoldenDir() + "/quant_llama";
  const std::string gdir = quant_llama + "/lora_train_nf4";
  auto golden = ReadSafetensors(gdir + "/peft_eval.safetensors");
  auto committed = ReadSafetensors(gdir + "/adapter_model.safetensors");
  auto lora = ParseAdapterConfig(Slurp(gdir + "/adapter_config.json"));
  REQUIRE(golden.ok());
  REQUIRE(committed.ok());
  REQUIRE(lora.ok());
  TensorMap& g = *golden;
  const double want_loss = g["loss"].item<double>();
  // lora_train's model with `adapter` on the 4-bit base: logits and loss.
  auto evaluate = [&](const TensorMap& adapter, torch::Tensor* logits) {
    auto lm = LoadPretrained(quant_llama, Nf4(true));
    REQUIRE(lm.ok());
    REQUIRE((*lm)->ApplyLora(*lora).ok());
    REQUIRE((*lm)->LoadAdapter(adapter).ok());
    (*lm)->eval();
    torch::NoGradGuard no_grad;
    *logits = (*lm)->forward(g["input_ids"]);
    return CausalLmImpl::Loss(*logits, g["labels"]).item<double>();
  };
  torch::Tensor logits;
  const double loss = evaluate(*committed, &logits);
  INFO("committed adapter: logits max rel diff " << testing::MaxRelDiff(logits, g["logits"]) << ", loss " << loss
                                                 << " vs PEFT " << want_loss);
  CHECK(testing::CloseRel(logits, g["logits"], 1e-5));
  CHECK(loss == Approx(want_loss).epsilon(1e-5));
  // The adapter matters: the 4-bit base alone (transformers' logits) has another loss.
  auto base_golden = ReadSafetensors(quant_llama + "/golden.safetensors");
  REQUIRE(base_golden.ok());
  const double base_loss = CausalLmImpl::Loss((*base_golden)["logits/nf4_dq"], g["labels"]).item<double>();
  INFO("4-bit base loss " << base_loss);
  CHECK(std::abs(base_loss - want_loss) > 1e-2);

  // lora_train trains that adapter today (to float rounding: the BLAS of
  // another CPU may differ in the last bits).
  const testing::TempDir tmp("qlora_peft");
  const std::string base = tmp.Sub("base");
  for (const char* f : {"config.json", "model.safetensors"}) {
    std::filesystem::copy_file(quant_llama + "/" + f, base + "/" + f);
  }
  std::filesystem::copy_file(LlamaDir() + "/tokenizer.json", base + "/tokenizer.json");
  const std::string out = tmp.path.string() + "/run";
  const int rc = Sh(LoraTrainBin() + " --base " + base + " --data " + gdir + "/train.jsonl --output " + out +
                    kAdapterFlags + " > " + tmp.path.string() + "/log 2>&1");
  INFO(Slurp(tmp.path.string() + "/log"));
  REQUIRE(rc == 0);
  auto fresh = ReadSafetensors(out + "/adapter_model.safetensors");
  REQUIRE(fresh.ok());
  REQUIRE(fresh->size() == committed->size());
  for (auto& [k, t] : *committed) {
    INFO(k << " max rel diff " << testing::MaxRelDiff((*fresh)[k], t));
    CHECK(testing::CloseRel((*fresh)[k], t, 1e-4));
  }
  const double fresh_loss = evaluate(*fresh, &logits);
  CHECK(fresh_loss == Approx(want_loss).epsilon(1e-5));
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
