// Devices and precisions (trainer/device.h): the flags' refusals, the
// transformers+PEFT goldens on a chosen device in fp32 and bf16, and
// lora_train's own refusals and a bf16 run.
//
// The goldens run on TUNE_TEST_DEVICE (default cpu; scripts/gpu-smoke.sh
// sets cuda). bf16 against the fp32 goldens: bf16 keeps 8 significant bits,
// a unit roundoff u = 2^-8 = 0.0039 per rounding (products accumulate in
// fp32 inside each op; its output is rounded). Between the weights and a
// logit of the 2-layer golden models lie about 16 such roundings (per
// layer: norm, q/k/v, RoPE, scores, softmax, attention output, o_proj,
// residual, gate/up, silu * up, down, residual), so the error bound grows
// from about sqrt(16) u = 4u (independent roundings) to 16u (all aligned).
// Tolerances, relative to the largest magnitude: logits 8u = 3.1e-2; the
// loss 2u = 7.8e-3 (a mean over tokens averages the roundings out); the
// LoRA gradients, which go back through the rounded activations again,
// 16u = 6.3e-2. Measured on the CPU with libtorch 1.13: logits 1.2e-2
// (llama) and 2.0e-2 (qwen2), loss 7e-5 and 8e-5, gradients 3.5e-2 and
// 4.1e-2 (bench/RESULTS.md, "GPU trials and libtorch 2.x").
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/trainer/run_util.h"
#include "tests/trainer/test_util.h"
#include "trainer/device.h"
#include "trainer/model.h"
#include "trainer/safetensors.h"

namespace tune {
namespace {

using testing::LoraTrainBin;
using testing::Slurp;
using testing::Sh;

// Removes a test folder when the test ends, passed or failed.
struct ScopedDir {
  explicit ScopedDir(const std::string& tag) : dir(tag), path(dir.path.string()) {}
  testing::TempDir dir;  // removed with everything in it
  std::string path;
};

std::string TestDevice() {
  const char* d = std::getenv("TUNE_TEST_DEVICE");
  return d != nullptr && *d != '\0' ? d : "cpu";
}

struct Tolerance {
  double logits, loss, grads;
};

// Logits, LoRA logits, loss and LoRA gradients of `arch` placed on `place`
// against the fp32 goldens of transformers+PEFT.
void CheckGoldenOn(const std::string& arch, const Placement& place, const Tolerance& tol) {
  torch::set_num_threads(1);
  const std::string dir = testing::GoldenDir() + "/" + arch;
  auto golden = ReadSafetensors(dir + "/golden.safetensors");
  REQUIRE(golden.ok());
  TensorMap& g = *golden;
  auto lm = LoadPretrained(dir);
  REQUIRE(lm.ok());
  CausalLm model = *lm;
  LoraConfig lora;
  lora.r = 4;
  lora.alpha = 8;
  lora.dropout = 0.0;
  lora.target_modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  REQUIRE(model->ApplyLora(lora).ok());
  auto adapter = ReadSafetensors(dir + "/adapter_init/adapter_model.safetensors");
  REQUIRE(adapter.ok());
  REQUIRE(model->LoadAdapter(*adapter).ok());
  PlaceModel(model, place);
  for (auto& item : model->named_parameters()) {
    const bool lora_param = item.key().find("lora_") != std::string::npos;
    INFO(item.key());
    CHECK(item.value().device() == place.device);
    CHECK(item.value().scalar_type() == (lora_param ? torch::kFloat32 : place.dtype));
  }
  const torch::Tensor ids = g["input_ids"].to(place.device);
  model->train();
  torch::Tensor logits = model->forward(ids);
  CHECK(logits.scalar_type() == place.dtype);
  torch::Tensor loss = CausalLmImpl::Loss(logits, g["labels"].to(place.device));
  const torch::Tensor cpu_logits = logits.detach().to(torch::kCPU, torch::kFloat32);
  INFO(arch << " on " << place.Describe() << ": lora logits max rel diff "
            << testing::MaxRelDiff(cpu_logits, g["lora_logits"]) << ", loss " << loss.item<double>() << " vs "
            << g["lora_loss"].item<double>());
  CHECK(testing::CloseRel(cpu_logits, g["lora_logits"], tol.logits));
  CHECK(loss.item<double>() == Approx(g["lora_loss"].item<double>()).epsilon(tol.loss));
  loss.backward();
  int checked = 0;
  for (auto& item : model->named_parameters()) {
    if (item.key().find("lora_") == std::string::npos) continue;
    const torch::Tensor grad = item.value().grad();
    REQUIRE(grad.defined());
    CHECK(grad.scalar_type() == torch::kFloat32);
    const std::string key = "grad/base_model.model." + item.key();
    REQUIRE(g.count(key));
    const torch::Tensor cpu_grad = grad.to(torch::kCPU);
    INFO(key << " max rel diff " << testing::MaxRelDiff(cpu_grad, g[key]));
    CHECK(testing::CloseRel(cpu_grad, g[key], tol.grads));
    ++checked;
  }
  CHECK(checked == 28);
}

constexpr double kU = 1.0 / 256;  // bf16 unit roundoff

TEST_CASE("goldens hold on the test device in fp32 and, within bf16's rounding, in bf16", "[trainer][device]") {
  const std::string device = TestDevice();
  for (const std::string dtype : {"fp32", "bf16"}) {
    auto place = ResolvePlacement(device, dtype, "auto", 0);
    REQUIRE(place.ok());
    const Tolerance tol = dtype == "fp32" ? Tolerance{1e-4, 1e-4, 1e-4} : Tolerance{8 * kU, 2 * kU, 16 * kU};
    for (const std::string arch : {"llama", "qwen2"}) {
      SECTION(arch + " " + dtype) { CheckGoldenOn(arch, *place, tol); }
    }
  }
}

TEST_CASE("device, dtype and backend flags: each refusal is one sentence saying why", "[trainer][device]") {
  auto cpu = ResolvePlacement("cpu", "fp32", "auto", 0);
  REQUIRE(cpu.ok());
  CHECK(cpu->device == torch::Device(torch::kCPU));
  CHECK(cpu->backend == "gloo");
  CHECK(cpu->dtype == torch::kFloat32);
  auto bf16 = ResolvePlacement("cpu", "bf16", "gloo", 0);
  REQUIRE(bf16.ok());
  CHECK(bf16->dtype == torch::kBFloat16);

  auto fp16 = ResolvePlacement("cpu", "fp16", "auto", 0);
  REQUIRE_FALSE(fp16.ok());
  CHECK(fp16.status().IsInvalidArgument());
  CHECK_THAT(fp16.status().message(), Catch::Contains("loss scaling"));
  CHECK_FALSE(ResolvePlacement("tpu", "fp32", "auto", 0).ok());
  CHECK_FALSE(ResolvePlacement("cuda:x", "fp32", "auto", 0).ok());
  CHECK_FALSE(ResolvePlacement("cpu", "fp64", "auto", 0).ok());
  CHECK_FALSE(ResolvePlacement("cpu", "fp32", "mpi", 0).ok());
  // NCCL reduces GPU memory: never with a CPU device, whatever the build.
  auto nccl_cpu = ResolvePlacement("cpu", "fp32", "nccl", 0);
  REQUIRE_FALSE(nccl_cpu.ok());
  CHECK_THAT(nccl_cpu.status().message(), Catch::StartsWith("--backend nccl: "));

  if (VisibleGpuCount() > 0) {
    WARN("a GPU is visible: the no-GPU refusals are not exercised here");
    auto too_far = ResolvePlacement("cuda:" + std::to_string(VisibleGpuCount()), "fp32", "auto", 0);
    REQUIRE_FALSE(too_far.ok());
    CHECK_THAT(too_far.status().message(), Catch::Contains("visible"));
    return;
  }
  // auto falls back to the CPU; an explicit GPU is refused with the reason.
  auto any = ResolvePlacement("auto", "fp32", "auto", 3);
  REQUIRE(any.ok());
  CHECK(any->device == torch::Device(torch::kCPU));
  CHECK(any->backend == "gloo");
  const std::string why = BuiltWithCuda() ? "no CUDA GPU is visible" : "built against a libtorch without CUDA";
  for (const std::string device : {"cuda", "cuda:0", "cuda:1"}) {
    auto st = ResolvePlacement(device, "fp32", "auto", 0);
    REQUIRE_FALSE(st.ok());
    CHECK(st.status().IsInvalidArgument());
    CHECK_THAT(st.status().message(), Catch::StartsWith("--device " + device + ": "));
    CHECK(st.status().message().find('\n') == std::string::npos);
    CHECK_THAT(st.status().message(), Catch::Contains(why));
  }
  auto bf16_cuda = ResolvePlacement("cuda", "bf16", "auto", 0);
  REQUIRE_FALSE(bf16_cuda.ok());
  CHECK_THAT(bf16_cuda.status().message(), Catch::Contains(why));
  auto nccl = ResolvePlacement("auto", "fp32", "nccl", 0);
  REQUIRE_FALSE(nccl.ok());
  CHECK_THAT(nccl.status().message(), Catch::StartsWith("--backend nccl: "));
  CHECK_THAT(nccl.status().message(), Catch::Contains(BuiltWithCuda() ? "no CUDA GPU is visible" : "without CUDA"));
  // Every refusal is one plain sentence: no line break, no parentheses
  // inside parentheses.
  for (const auto& [device, backend] : std::vector<std::pair<std::string, std::string>>{
           {"cpu", "nccl"}, {"auto", "nccl"}, {"cuda", "auto"}, {"cuda:1", "nccl"}}) {
    const std::string m = ResolvePlacement(device, "fp32", backend, 0).status().message();
    INFO(m);
    CHECK(m.find('\n') == std::string::npos);
    int depth = 0, deepest = 0;
    for (char c : m) {
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      deepest = std::max(deepest, depth);
    }
    CHECK(depth == 0);
    CHECK(deepest <= 1);
  }
  if (BuiltWithCuda()) {
    const char* saved = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string saved_value = saved ? saved : "";
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
    const std::string m = ResolvePlacement("cpu", "fp32", "nccl", 0).status().message();
    if (saved) ::setenv("CUDA_VISIBLE_DEVICES", saved_value.c_str(), 1);
    else ::unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK(m == "--backend nccl: NCCL all-reduces GPU memory, and no CUDA GPU is visible with CUDA_VISIBLE_DEVICES "
               "set to ''");
  }
}

// One run of lora_train with `flags`; returns its exit code, stderr in *err.
int RunTrainer(const std::string& dir, const std::string& flags, std::string* err) {
  std::ofstream data(dir + "/train.jsonl");
  for (int i = 0; i < 24; ++i) {
    data << nlohmann::json{{"instruction", "Say " + std::to_string(i % 3)}, {"response", "one two three"}}.dump()
         << "\n";
  }
  data.close();
  const int rc = Sh(LoraTrainBin() + " --base " + testing::GoldenDir() + "/llama --data " + dir +
                    "/train.jsonl --seq-len 64 --threads 1 --lora-r 4 --output " + dir + "/out " + flags + " > " +
                    dir + "/stdout 2> " + dir + "/stderr");
  *err = Slurp(dir + "/stderr");
  return rc;
}

// The last line of `text` (messages from libtorch itself may precede it).
std::string LastLine(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

TEST_CASE("lora_train without a GPU refuses --device cuda, --backend nccl and bf16 on cuda", "[trainer][device]") {
  if (VisibleGpuCount() > 0) {
    WARN("a GPU is visible: nothing to refuse");
    return;
  }
  ScopedDir scoped("device_refusal");
  const std::string& dir = scoped.path;
  for (const std::string flags : {"--device cuda", "--device cuda:1", "--backend nccl", "--device cuda --dtype bf16",
                                  "--dtype fp16"}) {
    std::string err;
    const int rc = RunTrainer(dir, flags + " --max-steps 1", &err);
    INFO(flags << ": " << err);
    CHECK(rc == 2);
    const std::string line = LastLine(err);
    CHECK_THAT(line, Catch::StartsWith("lora_train: --"));
    CHECK(line.find('\n') == std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir + "/out"));  // refused before anything was written
  }
}

TEST_CASE("lora_train --dtype bf16 trains on the CPU and writes fp32 PEFT adapters", "[trainer][device]") {
  ScopedDir scoped("bf16_run");
  const std::string& dir = scoped.path;
  std::string err;
  const int rc = RunTrainer(dir, "--device cpu --dtype bf16 --max-steps 12 --batch-size 4 --lr 2e-2 --eval-every 0 "
                                 "--log-every 4 --lora-dropout 0",
                            &err);
  INFO(err);
  REQUIRE(rc == 0);
  CHECK_THAT(err, Catch::Contains("cpu, bf16, Gloo"));
  std::istringstream out(Slurp(dir + "/stdout"));
  std::vector<double> losses;
  for (std::string line; std::getline(out, line);) {
    auto at = line.find("train_loss=");
    if (at != std::string::npos) losses.push_back(std::stod(line.substr(at + 11)));
  }
  REQUIRE(losses.size() == 3);
  CHECK(losses.back() < losses.front());
  auto adapter = ReadSafetensors(dir + "/out/adapter_model.safetensors");
  REQUIRE(adapter.ok());
  for (const auto& [name, t] : *adapter) {
    INFO(name);
    CHECK(t.scalar_type() == torch::kFloat32);
  }
}

}  // namespace
}  // namespace tune
