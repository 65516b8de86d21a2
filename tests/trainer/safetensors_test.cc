// safetensors: round trips, files written by the Python safetensors library
// (F32/F16/BF16, sharded index), and the error messages users will see.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/trainer/test_util.h"
#include "trainer/model.h"
#include "trainer/safetensors.h"

namespace tune {
namespace {

void WriteRaw(const std::string& path, const std::string& header, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << data;
}

TEST_CASE("safetensors round trip keeps dtype, shape, values and metadata", "[trainer][safetensors]") {
  const testing::TempDir tmp("st");
  const std::string dir = tmp.path.string();
  torch::manual_seed(3);
  TensorMap in{{"a.weight", torch::randn({3, 4})},
               {"half", torch::randn({5}).to(torch::kFloat16)},
               {"bf", torch::randn({2, 2, 2}).to(torch::kBFloat16)},
               {"ids", torch::arange(7, torch::kInt64)},
               {"empty", torch::zeros({0, 3})}};
  REQUIRE(WriteSafetensors(dir + "/x.safetensors", in, {{"format", "pt"}}).ok());
  std::map<std::string, std::string> meta;
  auto out = ReadSafetensors(dir + "/x.safetensors", &meta);
  REQUIRE(out.ok());
  CHECK(meta["format"] == "pt");
  REQUIRE(out->size() == in.size());
  for (auto& [name, t] : in) {
    INFO(name);
    CHECK((*out)[name].scalar_type() == t.scalar_type());
    CHECK(torch::equal((*out)[name], t));
  }
  // Data starts 8-byte aligned, as the format recommends.
  std::ifstream f(dir + "/x.safetensors", std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  CHECK((8 + n) % 8 == 0);
}

TEST_CASE("safetensors reads F32, F16 and BF16 written by Python", "[trainer][safetensors]") {
  auto t = ReadSafetensors(testing::GoldenDir() + "/dtypes.safetensors");
  REQUIRE(t.ok());
  TensorMap& m = *t;
  CHECK(m["f16"].scalar_type() == torch::kFloat16);
  CHECK(m["bf16"].scalar_type() == torch::kBFloat16);
  CHECK(torch::equal(m["f16"].to(torch::kFloat32), m["f16_as_f32"]));
  CHECK(torch::equal(m["bf16"].to(torch::kFloat32), m["bf16_as_f32"]));
  CHECK(torch::equal(m["i64"], torch::arange(6, torch::kInt64).reshape({2, 3})));
  CHECK(!torch::equal(m["f32"], m["bf16_as_f32"]));  // the conversion did lose precision
}

TEST_CASE("sharded model.safetensors.index.json loads every shard", "[trainer][safetensors]") {
  auto w = ReadModelWeights(testing::GoldenDir() + "/qwen2");
  REQUIRE(w.ok());
  CHECK(w->count("model.layers.1.self_attn.q_proj.bias") == 1);
  CHECK(w->count("model.embed_tokens.weight") == 1);
  // A missing shard is named.
  const testing::TempDir tmp("shard");
  const std::string dir = tmp.path.string();
  std::filesystem::copy_file(testing::GoldenDir() + "/qwen2/model.safetensors.index.json",
                             dir + "/model.safetensors.index.json");
  auto bad = ReadModelWeights(dir);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("model-0000"));
}

TEST_CASE("safetensors errors name the file and the tensor", "[trainer][safetensors]") {
  const testing::TempDir tmp("sterr");
  const std::string dir = tmp.path.string();
  SECTION("unsupported dtype") {
    WriteRaw(dir + "/f8.safetensors", R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "ab");
    auto r = ReadSafetensors(dir + "/f8.safetensors");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("'w'") && Catch::Contains("F8_E4M3"));
  }
  SECTION("offsets inconsistent with the shape") {
    WriteRaw(dir + "/bad.safetensors", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
             std::string(8, '\0'));
    auto r = ReadSafetensors(dir + "/bad.safetensors");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("'w'"));
  }
  SECTION("truncated file") {
    WriteRaw(dir + "/t.safetensors", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", "abc");
    CHECK_FALSE(ReadSafetensors(dir + "/t.safetensors").ok());
    std::ofstream(dir + "/tiny.safetensors") << "abc";
    CHECK_FALSE(ReadSafetensors(dir + "/tiny.safetensors").ok());
  }
  SECTION("missing file") {
    auto r = ReadSafetensors(dir + "/nope.safetensors");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().IsNotFound());
  }
  SECTION("missing tensor and shape mismatch when loading a model") {
    auto w = ReadModelWeights(testing::GoldenDir() + "/llama");
    REQUIRE(w.ok());
    auto config = LoadModelConfig(testing::GoldenDir() + "/llama/config.json");
    REQUIRE(config.ok());
    CausalLm model(*config);
    TensorMap missing = *w;
    missing.erase("model.layers.1.mlp.up_proj.weight");
    Status st = model->LoadBase(missing);
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.message(), Catch::Contains("model.layers.1.mlp.up_proj.weight"));
    TensorMap wrong = *w;
    wrong["model.norm.weight"] = torch::ones({63});
    st = model->LoadBase(wrong);
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.message(), Catch::Contains("model.norm.weight") && Catch::Contains("[63]"));
    CHECK(model->LoadBase(*w).ok());
  }
}

TEST_CASE("config.json: unsupported model types and rope scaling are rejected", "[trainer][config]") {
  CHECK_FALSE(ParseModelConfig(R"({"model_type":"gpt2"})").ok());
  auto r = ParseModelConfig(R"({"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":16,
    "num_hidden_layers":1,"num_attention_heads":2,"rope_scaling":{"type":"longrope","factor":2}})");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("rope_scaling") && Catch::Contains("longrope"));
  auto ok = ParseModelConfig(R"({"model_type":"qwen2","vocab_size":10,"hidden_size":8,"intermediate_size":16,
    "num_hidden_layers":1,"num_attention_heads":2})");
  REQUIRE(ok.ok());
  CHECK(HasQkvBias(*ok));
  CHECK_FALSE(HasOutputBias(*ok));
  CHECK(ok->num_key_value_heads == 2);
  CHECK(ok->head_dim == 4);
  auto missing = ParseModelConfig(R"({"model_type":"llama","vocab_size":10})");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("hidden_size"));
  // Our config.json reads back as the same config.
  auto again = ParseModelConfig(ModelConfigToJson(*ok));
  REQUIRE(again.ok());
  CHECK(again->model_type == "qwen2");
  CHECK(again->intermediate_size == 16);
}

}  // namespace
}  // namespace tune
