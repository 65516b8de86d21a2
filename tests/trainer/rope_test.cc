// RoPE tables against transformers' rotary embedding (golden/rope_tables.json,
// made by golden/make_golden.py): inv_freq, the attention scaling and the
// cos/sin of the last position for default, linear, dynamic (a sequence of
// forward lengths: growth, no shrink, reset), llama3 and yarn (truncate off,
// mscale, explicit attention_factor).
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/trainer/test_util.h"
#include "trainer/model_config.h"
#include "trainer/rope.h"

namespace tune {
namespace {

torch::Tensor Floats(const nlohmann::json& list) {
  return torch::tensor(list.get<std::vector<double>>(), torch::kFloat64).to(torch::kFloat32);
}

TEST_CASE("RoPE tables match transformers for every supported rope_type", "[trainer][rope]") {
  std::ifstream in(testing::GoldenDir() + "/rope_tables.json");
  REQUIRE(in);
  nlohmann::json tables = nlohmann::json::parse(in);
  REQUIRE(tables.size() >= 9);
  for (const auto& t : tables) {
    const std::string name = t["name"];
    INFO("rope table " << name);
    auto config = ParseModelConfig(t["config"].dump());
    REQUIRE(config.ok());
    RotaryEmbedding rope(*config);
    for (const auto& call : t["calls"]) {
      const int64_t n = call["seq_len"];
      INFO("forward length " << n);
      torch::Tensor cos, sin;
      rope.Tables(n, torch::kCPU, &cos, &sin);
      torch::Tensor inv_freq = Floats(call["inv_freq"]);
      INFO("inv_freq max rel diff " << testing::MaxRelDiff(rope.frequencies().inv_freq, inv_freq));
      CHECK(testing::CloseRel(rope.frequencies().inv_freq, inv_freq, 1e-6));
      CHECK(rope.frequencies().attention_scaling == Approx(call["attention_scaling"].get<double>()).epsilon(1e-12));
      INFO("cos max rel diff " << testing::MaxRelDiff(cos[n - 1], Floats(call["cos_last"])));
      CHECK(testing::CloseRel(cos[n - 1], Floats(call["cos_last"]), 1e-5));
      CHECK(testing::CloseRel(sin[n - 1], Floats(call["sin_last"]), 1e-5));
    }
  }
}

TEST_CASE("Dynamic RoPE changes with the length only beyond max_position_embeddings", "[trainer][rope]") {
  auto config = ParseModelConfig(R"({"model_type":"llama","vocab_size":8,"hidden_size":32,"intermediate_size":8,
    "num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":16,
    "rope_parameters":{"rope_type":"dynamic","factor":2.0,"rope_theta":10000.0}})");
  REQUIRE(config.ok());
  RopeFrequencies at_init = ComputeRopeFrequencies(*config, 0);
  ModelConfig plain = *config;
  plain.rope.type = "default";
  CHECK(torch::equal(at_init.inv_freq, ComputeRopeFrequencies(plain, 0).inv_freq));
  CHECK(torch::equal(ComputeRopeFrequencies(*config, 16).inv_freq, at_init.inv_freq));
  // Longer: a larger base, so every frequency but the first is lower.
  torch::Tensor longer = ComputeRopeFrequencies(*config, 32).inv_freq;
  CHECK(longer[0].item<float>() == at_init.inv_freq[0].item<float>());
  CHECK((longer.slice(0, 1) < at_init.inv_freq.slice(0, 1)).all().item<bool>());
}

}  // namespace
}  // namespace tune
