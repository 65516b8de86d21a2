// Real runs of the lora_train binary on the tiny golden Llama: loss goes
// down, outputs have PEFT's layout, checkpoint + resume equals an
// uninterrupted run, 2 ranks x batch b equal 1 rank x batch 2b, and a rank
// that fails makes its peer exit non-zero.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/trainer/run_util.h"
#include "tests/trainer/test_util.h"
#include "trainer/safetensors.h"

namespace tune {
namespace {

using testing::LoraTrainBin;
using testing::Slurp;
using testing::Sh;
using testing::Metrics;
using testing::FreePort;

std::string WriteData(const std::string& dir) {
  const char* words[] = {"alpha beta gamma", "the quick brown fox", "hello world again", "one two three four"};
  std::ofstream out(dir + "/train.jsonl");
  for (int i = 0; i < 48; ++i) {
    nlohmann::json j{{"instruction", "Repeat item " + std::to_string(i % 4) + "."}, {"response", words[i % 4]}};
    out << j.dump() << "\n";
  }
  return dir + "/train.jsonl";
}

std::string CommonFlags(const std::string& data) {
  return " --base " + testing::GoldenDir() + "/llama --data " + data +
         " --seq-len 96 --threads 1 --lora-r 4 --lora-alpha 8 --target-modules q_proj,v_proj,o_proj,up_proj";
}

void CheckSameAdapter(const std::string& a_dir, const std::string& b_dir, double rtol) {
  auto a = ReadSafetensors(a_dir + "/adapter_model.safetensors");
  auto b = ReadSafetensors(b_dir + "/adapter_model.safetensors");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->size() == b->size());
  for (auto& [k, t] : *a) {
    INFO(k << " max rel diff " << testing::MaxRelDiff(t, (*b)[k]));
    CHECK(testing::CloseRel(t, (*b)[k], rtol));
  }
}

TEST_CASE("lora_train fine-tunes: loss goes down, PEFT files written", "[trainer][run]") {
  const testing::TempDir tmp("run");
  const std::string dir = tmp.path.string();
  const std::string data = WriteData(dir);
  const int rc = Sh(LoraTrainBin() + CommonFlags(data) + " --output " + dir + "/out --max-steps 24 --eval-every 8" +
                    " --log-every 4 --lr 2e-2 --batch-size 4 --warmup-steps 2 > " + dir + "/stdout 2> " + dir +
                    "/stderr");
  INFO(Slurp(dir + "/stderr"));
  REQUIRE(rc == 0);
  auto m = Metrics(Slurp(dir + "/stdout"));
  REQUIRE(m.count({8, "eval_loss"}));
  REQUIRE(m.count({24, "eval_loss"}));
  CHECK(m[{24, "eval_loss"}] < m[{8, "eval_loss"}] - 0.1);
  CHECK(m[{24, "train_loss"}] < m[{4, "train_loss"}]);
  CHECK(m[{4, "tokens_per_s"}] > 0);
  CHECK(m.count({4, "lr"}));
  // The log names the BLAS and the thread count, as prose.
  const std::string err = Slurp(dir + "/stderr");
  CHECK_THAT(err, Catch::Contains("BLAS"));
  CHECK(err.find("cublas") == std::string::npos);  // the CUDA build maps cuBLAS: not the CPU's BLAS
  CHECK(err.find('=') == std::string::npos);
  // PEFT layout.
  auto cfg = nlohmann::json::parse(Slurp(dir + "/out/adapter_config.json"));
  CHECK(cfg["peft_type"] == "LORA");
  CHECK(cfg["r"] == 4);
  CHECK(cfg["target_modules"].size() == 4);
  auto adapter = ReadSafetensors(dir + "/out/adapter_model.safetensors");
  REQUIRE(adapter.ok());
  CHECK(adapter->size() == 2 * 2 * 4);
  CHECK(adapter->count("base_model.model.model.layers.1.mlp.up_proj.lora_B.weight") == 1);
  CHECK((*adapter)["base_model.model.model.layers.1.mlp.up_proj.lora_B.weight"].abs().max().item<double>() > 0);
}

TEST_CASE("init takes a tokenizer file of any name and writes a base that --base loads", "[trainer][run][init]") {
  const testing::TempDir tmp("init");
  const std::string dir = tmp.path.string();
  const std::string golden = testing::GoldenDir() + "/llama";
  std::filesystem::create_directories(dir + "/src");
  std::filesystem::copy_file(golden + "/tokenizer.json", dir + "/src/my-bpe.v2.json");
  std::filesystem::copy_file(golden + "/config.json", dir + "/cfg.json");
  {
    std::ofstream out(dir + "/src/special.json");
    out << R"({"model_max_length": 64, "eos_token": "marker-for-this-test"})";
  }
  const std::string data = WriteData(dir);
  const int rc = Sh(LoraTrainBin() + " init --config " + dir + "/cfg.json --tokenizer " + dir +
                    "/src/my-bpe.v2.json --tokenizer-config " + dir + "/src/special.json --out " + dir +
                    "/base 2> " + dir + "/init.err");
  INFO(Slurp(dir + "/init.err"));
  REQUIRE(rc == 0);
  CHECK(Slurp(dir + "/base/tokenizer.json") == Slurp(golden + "/tokenizer.json"));
  CHECK_THAT(Slurp(dir + "/base/tokenizer_config.json"), Catch::Contains("marker-for-this-test"));
  CHECK_FALSE(std::filesystem::exists(dir + "/base/my-bpe.v2.json"));
  CHECK_FALSE(std::filesystem::exists(dir + "/base/special.json"));
  // The folder it wrote is a base that fine-tuning loads.
  const int ft = Sh(LoraTrainBin() + " --base " + dir + "/base --data " + data +
                    " --seq-len 48 --threads 1 --lora-r 2 --max-steps 2 --eval-every 0 --output " + dir +
                    "/out > " + dir + "/ft.out 2> " + dir + "/ft.err");
  INFO(Slurp(dir + "/ft.err"));
  CHECK(ft == 0);
  CHECK(std::filesystem::exists(dir + "/out/adapter_model.safetensors"));
  // A --tokenizer-config that does not exist is named, exit 2, no folder.
  const int bad = Sh(LoraTrainBin() + " init --config " + dir + "/cfg.json --tokenizer " + dir +
                     "/src/my-bpe.v2.json --tokenizer-config " + dir + "/nope.json --out " + dir + "/base2 2> " +
                     dir + "/bad.err");
  CHECK(bad == 2);
  CHECK_THAT(Slurp(dir + "/bad.err"), Catch::Contains("nope.json"));
  CHECK_FALSE(std::filesystem::exists(dir + "/base2"));
}

TEST_CASE("checkpoint + resume equals an uninterrupted run", "[trainer][run]") {
  const testing::TempDir tmp("resume");
  const std::string dir = tmp.path.string();
  const std::string data = WriteData(dir);
  const std::string flags = CommonFlags(data) + " --max-steps 6 --save-every 3 --eval-every 0 --lr 1e-2" +
                            " --batch-size 2 --grad-accum 2 --lora-dropout 0.2 --warmup-steps 2";
  REQUIRE(Sh(LoraTrainBin() + flags + " --output " + dir + "/a > /dev/null 2>&1") == 0);
  REQUIRE(std::filesystem::exists(dir + "/a/checkpoint-3/optimizer.pt"));
  REQUIRE(std::filesystem::exists(dir + "/a/checkpoint-3/adapter_config.json"));
  REQUIRE(Sh(LoraTrainBin() + flags + " --output " + dir + "/b --resume-from " + dir + "/a/checkpoint-3 > " + dir +
             "/b.out 2> " + dir + "/b.err") == 0);
  CHECK_THAT(Slurp(dir + "/b.err"), Catch::Contains("resumed"));
  CheckSameAdapter(dir + "/a", dir + "/b", 1e-6);
  // A retried trial finds its own checkpoint without --resume-from.
  std::filesystem::remove_all(dir + "/a/checkpoint-6");
  REQUIRE(Sh(LoraTrainBin() + flags + " --output " + dir + "/a > /dev/null 2> " + dir + "/a.err") == 0);
  CHECK_THAT(Slurp(dir + "/a.err"), Catch::Contains("checkpoint-3"));
  CheckSameAdapter(dir + "/a", dir + "/b", 1e-6);
}

TEST_CASE("2 ranks with batch b equal 1 rank with batch 2b", "[trainer][run][distributed]") {
  const testing::TempDir tmp("ddp");
  const std::string dir = tmp.path.string();
  const std::string data = WriteData(dir);
  const std::string flags = CommonFlags(data) + " --max-steps 4 --eval-every 2 --lr 1e-2 --lora-dropout 0" +
                            " --dist-timeout 60";
  REQUIRE(Sh(LoraTrainBin() + flags + " --batch-size 4 --output " + dir + "/one > " + dir + "/one.out 2>&1") == 0);
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(FreePort());
  const int rc = Sh(env + " RANK=1 LOCAL_RANK=1 " + LoraTrainBin() + flags + " --batch-size 2 --output " + dir +
                    "/two > " + dir + "/r1.out 2>&1 & " + env + " RANK=0 LOCAL_RANK=0 " + LoraTrainBin() + flags +
                    " --batch-size 2 --output " + dir + "/two > " + dir + "/r0.out 2>&1; r0=$?; wait $!; " +
                    "r1=$?; exit $((r0 + r1))");
  INFO(Slurp(dir + "/r0.out") << Slurp(dir + "/r1.out"));
  REQUIRE(rc == 0);
  CHECK(Slurp(dir + "/r1.out").find("step=") == std::string::npos);  // only rank 0 reports
  auto one = Metrics(Slurp(dir + "/one.out"));
  auto two = Metrics(Slurp(dir + "/r0.out"));
  CHECK(two[{4, "eval_loss"}] == Approx(one[{4, "eval_loss"}]).epsilon(1e-4));
  CHECK(two[{4, "train_loss"}] == Approx(one[{4, "train_loss"}]).epsilon(1e-4));
  CheckSameAdapter(dir + "/one", dir + "/two", 1e-4);
}

// Runs `flags` as 2 ranks on this host; the exit status of both summed.
int TwoRanks(const std::string& flags, const std::string& log_prefix) {
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(FreePort());
  return Sh(env + " RANK=1 LOCAL_RANK=1 " + LoraTrainBin() + flags + " > " + log_prefix + "r1.out 2>&1 & " + env +
            " RANK=0 LOCAL_RANK=0 " + LoraTrainBin() + flags + " > " + log_prefix + "r0.out 2>&1; r0=$?; wait $!; " +
            "r1=$?; exit $((r0 + r1))");
}

TEST_CASE("2 ranks with dropout: checkpoint + resume equals an uninterrupted run", "[trainer][run][distributed]") {
  // Every rank draws its own dropout masks; the checkpoint keeps every
  // rank's RNG state, so each rank resumes its own stream.
  const testing::TempDir tmp("ddp_resume");
  const std::string dir = tmp.path.string();
  const std::string data = WriteData(dir);
  const std::string flags = CommonFlags(data) + " --max-steps 4 --save-every 2 --eval-every 0 --lr 1e-2" +
                            " --batch-size 2 --lora-dropout 0.3 --dist-timeout 60";
  const int a = TwoRanks(flags + " --output " + dir + "/a", dir + "/a.");
  INFO(Slurp(dir + "/a.r0.out") << Slurp(dir + "/a.r1.out"));
  REQUIRE(a == 0);
  auto rng = ReadSafetensors(dir + "/a/checkpoint-2/rng_state.safetensors");
  REQUIRE(rng.ok());
  CHECK(rng->count("cpu") == 1);
  CHECK(rng->count("rank1.cpu") == 1);
  CHECK(rng->size() == 2);  // CPU run: no CUDA generator state
  CHECK_FALSE(torch::equal((*rng)["cpu"], (*rng)["rank1.cpu"]));
  const int b = TwoRanks(flags + " --output " + dir + "/b --resume-from " + dir + "/a/checkpoint-2", dir + "/b.");
  INFO(Slurp(dir + "/b.r0.out") << Slurp(dir + "/b.r1.out"));
  REQUIRE(b == 0);
  CHECK_THAT(Slurp(dir + "/b.r0.out"), Catch::Contains("resumed from"));
  CheckSameAdapter(dir + "/a", dir + "/b", 1e-6);
}

TEST_CASE("a rank that fails makes its peer exit non-zero", "[trainer][run][distributed]") {
  const testing::TempDir tmp("dead");
  const std::string dir = tmp.path.string();
  const std::string data = WriteData(dir);
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(FreePort());
  // Rank 1 is killed after a moment; rank 0 must notice and fail, not hang.
  const int rc = Sh(env + " RANK=1 timeout -s KILL 6 " + LoraTrainBin() + CommonFlags(data) +
                    " --max-steps 100000 --eval-every 0 --batch-size 2 --dist-timeout 10 --output " + dir +
                    "/x > /dev/null 2>&1 & " + env + " RANK=0 " + LoraTrainBin() + CommonFlags(data) +
                    " --max-steps 100000 --eval-every 0 --batch-size 2 --dist-timeout 10 --output " + dir +
                    "/x > " + dir + "/r0.out 2> " + dir + "/r0.err; r0=$?; wait; exit $r0");
  INFO(Slurp(dir + "/r0.err"));
  CHECK(rc != 0);
  CHECK_THAT(Slurp(dir + "/r0.err"), Catch::Contains("rank 0"));
}

TEST_CASE("a config.json key that could change the math is refused: exit 2, the key and the file named, no output",
          "[trainer][run][config]") {
  const testing::TempDir tmp("badkey");
  const std::string dir = tmp.path.string();
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  const std::string data = WriteData(dir);
  std::filesystem::copy(testing::GoldenDir() + "/llama_v5", dir + "/base", std::filesystem::copy_options::recursive);
  std::filesystem::copy(testing::GoldenDir() + "/llama/tokenizer.json", dir + "/base/tokenizer.json");
  auto config = nlohmann::json::parse(Slurp(dir + "/base/config.json"));
  for (const auto& [key, value] : {std::pair<std::string, nlohmann::json>{"logit_scale", 0.5},
                                   {"rope_parameters", {{"rope_type", "longrope"}, {"rope_theta", 1e4}}}}) {
    INFO(key);
    nlohmann::json bad = config;
    bad[key] = value;
    std::ofstream(dir + "/base/config.json") << bad.dump(1);
    const int rc = Sh(LoraTrainBin() + " --base " + dir + "/base --data " + data + " --threads 1 --max-steps 2 --output " +
                      dir + "/out > " + dir + "/stdout 2> " + dir + "/stderr");
    const std::string err = Slurp(dir + "/stderr");
    INFO(err);
    CHECK(rc == 2);
    CHECK_THAT(err, Catch::Contains(dir + "/base/config.json") && Catch::Contains(key));
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(dir + "/out"));
  }
}

}  // namespace
}  // namespace tune
