// config.json parsing: both transformers formats (4.x rope_theta/rope_scaling,
// 5.x rope_parameters), the explicit key list (unknown keys and unsupported
// values refused with the key's name), sliding-window layer selection and
// per-type defaults, as transformers 5's config classes resolve them.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/trainer/test_util.h"

#include "trainer/config_keys.h"
#include "trainer/model_config.h"

namespace tune {
namespace {

using nlohmann::json;

json Base(const std::string& model_type) {
  return json{{"model_type", model_type}, {"vocab_size", 10},       {"hidden_size", 16},
              {"intermediate_size", 32},  {"num_hidden_layers", 3}, {"num_attention_heads", 4},
              {"num_key_value_heads", 2}};
}

Result<ModelConfig> Parse(const json& j) { return ParseModelConfig(j.dump()); }

std::string Refusal(const json& j) {
  auto r = Parse(j);
  if (r.ok()) return "(accepted)";
  return r.status().message();
}

TEST_CASE("config.json: rope_theta from the 5.x rope_parameters, not the default", "[trainer][config]") {
  json j = Base("llama");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 100000.0}};
  auto c = Parse(j);
  REQUIRE(c.ok());
  CHECK(c->rope.type == "default");
  CHECK(c->rope.theta == 100000.0);
  // 4.x: top level; the dict's value wins over the top level, as in transformers.
  j = Base("llama");
  j["rope_theta"] = 500000.0;
  CHECK(Parse(j)->rope.theta == 500000.0);
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 20000.0}};
  CHECK(Parse(j)->rope.theta == 20000.0);
  CHECK(Parse(Base("llama"))->rope.theta == 10000.0);
}

TEST_CASE("config.json: 4.x rope_scaling and 5.x rope_parameters give the same RoPE", "[trainer][config]") {
  json v4 = Base("llama");
  v4["max_position_embeddings"] = 131072;
  v4["rope_theta"] = 500000.0;
  v4["rope_scaling"] = {{"factor", 32.0},
                        {"high_freq_factor", 4.0},
                        {"low_freq_factor", 1.0},
                        {"original_max_position_embeddings", 8192},
                        {"rope_type", "llama3"}};
  json v5 = Base("llama");
  v5["max_position_embeddings"] = 131072;
  v5["rope_parameters"] = v4["rope_scaling"];
  v5["rope_parameters"]["rope_theta"] = 500000.0;
  for (const json& j : {v4, v5}) {
    auto c = Parse(j);
    REQUIRE(c.ok());
    CHECK(c->rope.type == "llama3");
    CHECK(c->rope.theta == 500000.0);
    CHECK(c->rope.factor == 32.0);
    CHECK(c->rope.original_max_position_embeddings == 8192);
    CHECK(c->rope.low_freq_factor == 1.0);
    CHECK(c->rope.high_freq_factor == 4.0);
  }
  // The old "type" key; yarn's defaults; original_max_position_embeddings
  // defaults to max_position_embeddings.
  json y = Base("qwen2");
  y["max_position_embeddings"] = 32768;
  y["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  auto c = Parse(y);
  REQUIRE(c.ok());
  CHECK(c->rope.type == "yarn");
  CHECK(c->rope.original_max_position_embeddings == 32768);
  CHECK(c->rope.beta_fast == 32.0);
  CHECK(c->rope.beta_slow == 1.0);
  CHECK(c->rope.attention_factor < 0.0);
  CHECK(c->rope.truncate);
}

TEST_CASE("config.json: RoPE parameters that would change the math are refused by name", "[trainer][config]") {
  json j = Base("llama");
  j["rope_parameters"] = {{"rope_type", "longrope"}, {"rope_theta", 1e4}};
  CHECK_THAT(Refusal(j), Catch::Contains("longrope"));
  j["rope_parameters"] = {{"rope_type", "linear"}};
  CHECK_THAT(Refusal(j), Catch::Contains("factor"));
  j["rope_parameters"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}};
  CHECK_THAT(Refusal(j), Catch::Contains("high_freq_factor"));
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"mrope_section", {1, 2}}};
  CHECK_THAT(Refusal(j), Catch::Contains("mrope_section"));
  j["rope_parameters"] = {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}};
  CHECK_THAT(Refusal(j), Catch::Contains("partial_rotary_factor"));
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}}};
  CHECK_THAT(Refusal(j), Catch::Contains("nested"));
}

TEST_CASE("config.json: unknown keys and unsupported values are refused in one sentence naming the key",
          "[trainer][config]") {
  json j = Base("llama");
  j["logit_scale"] = 0.5;
  CHECK_THAT(Refusal(j), Catch::Contains("'logit_scale'") && Catch::Contains("config.json"));
  j = Base("llama");
  j["hidden_act"] = "gelu";
  CHECK_THAT(Refusal(j), Catch::Contains("'hidden_act'") && Catch::Contains("silu"));
  j["hidden_act"] = "silu";
  CHECK(Parse(j).ok());
  j["attention_dropout"] = 0.1;
  CHECK_THAT(Refusal(j), Catch::Contains("'attention_dropout'"));
  j["attention_dropout"] = 0.0;
  j["quantization_config"] = {{"quant_method", "bitsandbytes"}};
  CHECK_THAT(Refusal(j), Catch::Contains("'quantization_config'"));
  // A key that transformers' Qwen2 does not read: neutral values pass, a set one is refused.
  j = Base("qwen2");
  j["mlp_bias"] = false;
  CHECK(Parse(j).ok());
  j["mlp_bias"] = true;
  CHECK_THAT(Refusal(j), Catch::Contains("'mlp_bias'") && Catch::Contains("qwen2"));
  j = Base("mistral");
  j["layer_types"] = {"full_attention", "sliding_attention", "full_attention"};
  CHECK_THAT(Refusal(j), Catch::Contains("'layer_types'"));
  // Keys of popular hub checkpoints: SmolLM2 (nanotron) and DeepSeek-R1-Distill-Qwen.
  j = Base("llama");
  j["is_llama_config"] = true;
  j["rope_interleaved"] = false;
  j["transformers.js_config"] = {{"kv_cache_dtype", {{"q4f16", "float16"}}}};
  CHECK(Parse(j).ok());
  j["rope_interleaved"] = true;
  CHECK_THAT(Refusal(j), Catch::Contains("'rope_interleaved'"));
  j = Base("qwen2");
  j["use_mrope"] = false;
  CHECK(Parse(j).ok());
  // Harmless keys and metadata are ignored on purpose.
  j = Base("llama");
  for (const char* k : {"_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache",
                        "pad_token_id", "architectures", "pretraining_tp"}) {
    j[k] = 1;
  }
  CHECK(Parse(j).ok());
}

// Sizes must be integers: a float used to be cast (576.5 became 576, 1e30
// was undefined behaviour) and an integer beyond the field's range wrapped.
TEST_CASE("config.json: integer fields refuse floats and out-of-range numbers by name", "[trainer][config]") {
  for (json bad : {json(16.5), json(1e30), json(-1e30), json("16"), json(18446744073709551615ull)}) {
    json j = Base("llama");
    j["hidden_size"] = bad;
    INFO(bad.dump());
    CHECK_THAT(Refusal(j), Catch::Contains("config.json: field 'hidden_size' must be an integer, got " + bad.dump()));
  }
  json j = Base("llama");
  j["max_position_embeddings"] = 4096.0;
  CHECK_THAT(Refusal(j), Catch::Contains("'max_position_embeddings' must be an integer"));
  j["max_position_embeddings"] = 4096;
  REQUIRE(Parse(j).ok());
  CHECK(Parse(j)->max_position_embeddings == 4096);
}

// The config.json transformers 4.57 writes when it converts SmolLM2-135M-
// Instruct from GGUF (scripts/check-real-model.sh): the real-model check
// stopped at its unk_token_id once unknown keys were refused.
TEST_CASE("config.json: the GGUF conversion of SmolLM2-135M-Instruct is accepted", "[trainer][config]") {
  const char* text = R"({
  "_model_name_or_path": "Smollm2 135M 8k Lc100K Mix1 Ep2",
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "dtype": "float32",
  "eos_token_id": 2,
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 576,
  "initializer_range": 0.02,
  "intermediate_size": 1536,
  "max_position_embeddings": 8192,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 9,
  "num_hidden_layers": 30,
  "num_key_value_heads": 3,
  "pad_token_id": 2,
  "pretraining_tp": 1,
  "rms_norm_eps": 9.999999747378752e-06,
  "rope_scaling": null,
  "rope_theta": 100000.0,
  "tie_word_embeddings": true,
  "transformers_version": "4.57.1",
  "unk_token_id": 0,
  "use_cache": true,
  "vocab_size": 49152
})";
  auto c = ParseModelConfig(text);
  REQUIRE(c.ok());
  CHECK(c->hidden_size == 576);
  CHECK(c->num_key_value_heads == 3);
  CHECK(c->tie_word_embeddings);
  CHECK(c->rope.theta == 100000.0);
}

TEST_CASE("docs/trainer-models.md lists every known config.json key", "[trainer][config]") {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/docs/trainer-models.md");
  REQUIRE(in);
  std::stringstream doc;
  doc << in.rdbuf();
  for (const ConfigKey& k : KnownConfigKeys()) {
    INFO(k.name);
    CHECK(doc.str().find(std::string("| `") + k.name + "` |") != std::string::npos);
    CHECK(std::string(k.note).size() > 0);
  }
}

TEST_CASE("config.json: per-type biases, Qwen3 head_dim default and q/k norms", "[trainer][config]") {
  json j = Base("llama");
  j["mlp_bias"] = true;
  j["attention_bias"] = true;
  auto c = Parse(j);
  REQUIRE(c.ok());
  CHECK(c->mlp_bias);
  CHECK(HasQkvBias(*c));
  CHECK(HasOutputBias(*c));
  CHECK_FALSE(HasQkNorm(*c));
  auto q3 = Parse(Base("qwen3"));
  REQUIRE(q3.ok());
  CHECK(q3->head_dim == 128);  // Qwen3Config's default, not hidden_size / heads
  CHECK(HasQkNorm(*q3));
  CHECK_FALSE(HasQkvBias(*q3));
  auto m = Parse(Base("mistral"));
  REQUIRE(m.ok());
  CHECK(m->head_dim == 4);
  CHECK_FALSE(HasQkvBias(*m));
}

TEST_CASE("config.json: sliding-window layers as transformers 5 selects them", "[trainer][config]") {
  // Qwen2: off unless use_sliding_window; then layers >= max_window_layers.
  json j = Base("qwen2");
  j["sliding_window"] = 5;
  j["max_window_layers"] = 1;
  auto off = Parse(j);
  REQUIRE(off.ok());
  CHECK(off->sliding_window == 0);
  CHECK(off->layer_sliding == std::vector<bool>{false, false, false});
  j["use_sliding_window"] = true;
  auto on = Parse(j);
  REQUIRE(on.ok());
  CHECK(on->sliding_window == 5);
  CHECK(on->layer_sliding == std::vector<bool>{false, true, true});
  // 5.x layer_types wins over max_window_layers.
  j["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
  CHECK(Parse(j)->layer_sliding == std::vector<bool>{true, false, true});
  j["use_sliding_window"] = false;
  CHECK_THAT(Refusal(j), Catch::Contains("layer_types[0]"));
  j["layer_types"] = {"full_attention", "chunked_attention", "full_attention"};
  j["use_sliding_window"] = true;
  CHECK_THAT(Refusal(j), Catch::Contains("layer_types[1]"));
  // Mistral: every layer; 4096 when the key is absent, none when null.
  json m = Base("mistral");
  auto mc = Parse(m);
  REQUIRE(mc.ok());
  CHECK(mc->sliding_window == 4096);
  CHECK(mc->layer_sliding == std::vector<bool>{true, true, true});
  m["sliding_window"] = nullptr;
  CHECK(Parse(m)->sliding_window == 0);
  // Llama has none and refuses a set window.
  json l = Base("llama");
  l["sliding_window"] = 8;
  CHECK_THAT(Refusal(l), Catch::Contains("'sliding_window'"));
}

TEST_CASE("config.json: the config lora_train writes reads back as the same model", "[trainer][config]") {
  json q = Base("qwen3");
  q["head_dim"] = 8;
  q["use_sliding_window"] = true;
  q["sliding_window"] = 6;
  q["max_window_layers"] = 2;
  q["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 2.0}, {"rope_theta", 1e6},
                          {"original_max_position_embeddings", 16}, {"truncate", false}};
  json l = Base("llama");
  l["mlp_bias"] = true;
  l["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 3.0}};
  for (const json& j : {q, l, Base("mistral"), Base("qwen2")}) {
    auto c = Parse(j);
    REQUIRE(c.ok());
    auto again = ParseModelConfig(ModelConfigToJson(*c));
    INFO(ModelConfigToJson(*c));
    REQUIRE(again.ok());
    CHECK(again->model_type == c->model_type);
    CHECK(again->head_dim == c->head_dim);
    CHECK(again->mlp_bias == c->mlp_bias);
    CHECK(again->attention_bias == c->attention_bias);
    CHECK(again->sliding_window == c->sliding_window);
    CHECK(again->layer_sliding == c->layer_sliding);
    CHECK(again->rope.type == c->rope.type);
    CHECK(again->rope.theta == c->rope.theta);
    CHECK(again->rope.factor == c->rope.factor);
    CHECK(again->rope.original_max_position_embeddings == c->rope.original_max_position_embeddings);
    CHECK(again->rope.truncate == c->rope.truncate);
  }
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

TEST_CASE("config.json: every key transformers 4.57 and 5.23 write for the four families is known",
          "[trainer][config]") {
  for (const char* version : {"4.57.1", "5.23.0"}) {
    std::ifstream in(testing::GoldenDir() + "/full_configs_" + version + ".json");
    REQUIRE(in);
    const json all = json::parse(in);
    REQUIRE(all["configs"].size() == 4);
    for (const json& j : all["configs"]) {
      INFO("transformers " << version << " " << j["model_type"]);
      auto c = Parse(j);
      INFO((c.ok() ? std::string("ok") : c.status().message()));
      REQUIRE(c.ok());
      CHECK(c->rope.type == "default");
      // The class defaults: Llama and Mistral 10000, Qwen 1e6 in 5.x (4.x Qwen2 10000).
      CHECK(c->rope.theta > 0);
      CHECK(c->sliding_window == (j["model_type"] == "mistral" ? 4096 : 0));
    }
  }
}

}  // namespace
}  // namespace tune
