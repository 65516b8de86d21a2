// LoRA as PEFT does it: init, freezing, scaling, key names, adapter config.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/trainer/test_util.h"
#include "trainer/checkpoint.h"
#include "trainer/model.h"

namespace tune {
namespace {

CausalLm TinyLlama() {
  auto config = LoadModelConfig(testing::GoldenDir() + "/llama/config.json");
  REQUIRE(config.ok());
  return CausalLm(*config);
}

TEST_CASE("ApplyLora freezes the base and adds PEFT-initialised adapters", "[trainer][lora]") {
  torch::manual_seed(1);
  CausalLm model = TinyLlama();
  torch::Tensor ids = torch::randint(0, 300, {2, 9}, torch::kInt64);
  model->eval();
  torch::Tensor before = model->forward(ids).detach();
  LoraConfig lora;
  lora.r = 4;
  lora.alpha = 16;
  lora.target_modules = {"q_proj", "v_proj", "down_proj"};
  REQUIRE(lora.Validate().ok());
  REQUIRE(model->ApplyLora(lora).ok());
  int adapters = 0;
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    const bool is_lora = name.find("lora_") != std::string::npos;
    INFO(name);
    CHECK(item.value().requires_grad() == is_lora);
    if (!is_lora) continue;
    ++adapters;
    const bool targeted = name.find("q_proj") != std::string::npos || name.find("v_proj") != std::string::npos ||
                          name.find("down_proj") != std::string::npos;
    CHECK(targeted);
    if (name.find("lora_B") != std::string::npos) {
      CHECK(item.value().abs().max().item<double>() == 0.0);  // B starts at zero
    } else {
      // Kaiming-uniform with a = sqrt(5): U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
      const double bound = 1.0 / std::sqrt(static_cast<double>(item.value().size(1)));
      CHECK(item.value().abs().max().item<double>() <= bound);
      CHECK(item.value().abs().max().item<double>() > 0.5 * bound);
      CHECK(item.value().size(0) == 4);
    }
  }
  CHECK(adapters == 2 * 3 * 2);  // A and B, three modules, two layers
  // B = 0: the adapted model computes the base model's function.
  CHECK(torch::allclose(model->forward(ids), before));
  // PEFT's key names.
  TensorMap state = model->AdapterState();
  CHECK(state.count("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight") == 1);
  CHECK(state.count("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight") == 1);
  CHECK(state["base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"].sizes() ==
        torch::IntArrayRef({64, 4}));
}

TEST_CASE("LoRA scaling is alpha/r, or alpha/sqrt(r) with rslora", "[trainer][lora]") {
  LoraConfig c;
  c.r = 16;
  c.alpha = 32;
  CHECK(c.Scaling() == Approx(2.0));
  c.use_rslora = true;
  CHECK(c.Scaling() == Approx(8.0));
  // The scaling is applied: with A and B set, the output moves by scaling * B A x.
  for (bool rs : {false, true}) {
    torch::manual_seed(2);
    CausalLm model = TinyLlama();
    LoraConfig lora;
    lora.r = 4;
    lora.alpha = 8;
    lora.dropout = 0.0;
    lora.use_rslora = rs;
    lora.target_modules = {"o_proj"};
    REQUIRE(model->ApplyLora(lora).ok());
    auto attn = model->model->layers[0]->as<DecoderLayerImpl>()->self_attn;
    torch::Tensor x = torch::randn({1, 3, 64});
    torch::Tensor base = torch::nn::functional::linear(x, attn->o_proj->weight);
    TensorMap a = model->AdapterState();
    torch::Tensor A = torch::randn({4, 64}), B = torch::randn({64, 4});
    a["base_model.model.model.layers.0.self_attn.o_proj.lora_A.weight"] = A;
    a["base_model.model.model.layers.0.self_attn.o_proj.lora_B.weight"] = B;
    REQUIRE(model->LoadAdapter(a).ok());
    torch::Tensor got = attn->o_proj->forward(x).detach();
    const double s = rs ? 8.0 / 2.0 : 2.0;
    CHECK(torch::allclose(got, base + s * torch::matmul(torch::matmul(x, A.t()), B.t()), 1e-4, 1e-5));
  }
}

TEST_CASE("LoRA config validation and adapter_config.json", "[trainer][lora]") {
  LoraConfig c;
  c.target_modules = {"q_proj", "qkv"};
  Status st = c.Validate();
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("qkv"));
  c.target_modules = {"q_proj"};
  c.r = 0;
  CHECK_FALSE(c.Validate().ok());
  c.r = 8;
  c.dropout = 1.0;
  CHECK_FALSE(c.Validate().ok());
  CHECK(SplitModuleList(" q_proj, v_proj,,o_proj") == std::vector<std::string>{"q_proj", "v_proj", "o_proj"});

  LoraConfig d;
  d.r = 12;
  d.alpha = 24;
  d.dropout = 0.1;
  d.use_rslora = true;
  d.target_modules = {"k_proj", "up_proj"};
  auto j = nlohmann::json::parse(AdapterConfigJson(d, "/models/tiny"));
  CHECK(j["peft_type"] == "LORA");
  CHECK(j["task_type"] == "CAUSAL_LM");
  CHECK(j["r"] == 12);
  auto back = ParseAdapterConfig(j.dump());
  REQUIRE(back.ok());
  CHECK(back->alpha == 24);
  CHECK(back->use_rslora);
  CHECK(back->target_modules == d.target_modules);
  // PEFT's own file reads too.
  std::ifstream f(testing::GoldenDir() + "/llama/adapter_init/adapter_config.json");
  std::stringstream ss;
  ss << f.rdbuf();
  auto peft = ParseAdapterConfig(ss.str());
  REQUIRE(peft.ok());
  CHECK(peft->r == 4);
  CHECK(peft->target_modules.size() == 7);
  // A rank that is not an integer is refused, not cast.
  for (const nlohmann::json& bad : {nlohmann::json(8.5), nlohmann::json(1e300)}) {
    j["r"] = bad;
    auto refused = ParseAdapterConfig(j.dump());
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.status().message(), Catch::Contains("\"r\" must be an integer, got " + bad.dump()));
  }
}

// A folder named checkpoint-<20 digits> (no step lora_train writes) is
// skipped; it used to throw out of std::stoll and end `--resume`.
TEST_CASE("LatestCheckpoint skips checkpoint folders whose step does not fit", "[trainer][checkpointing]") {
  testing::TempDir dir("latest");
  for (const char* name : {"checkpoint-3", "checkpoint-12", "checkpoint-99999999999999999999", "checkpoint-x1"}) {
    std::filesystem::create_directories(dir.path.string() + "/" + name);
    std::ofstream(dir.path.string() + "/" + name + "/trainer_state.json") << "{\"global_step\": 1}";
  }
  CHECK(std::filesystem::path(LatestCheckpoint(dir.path.string())).filename() == "checkpoint-12");
}

}  // namespace
}  // namespace tune
