// Continuing a lora_train run from a checkpoint with new hyperparameters
// (Population Based Training's exploit, issue 30), with real runs of the
// binary on the tiny golden Llama: the learning-rate schedule applies the new
// --lr and --warmup-steps from the resumed step on, a new weight decay,
// LoRA alpha or dropout takes effect, a new rank or other target modules is
// refused in one sentence, `--resume-from ""` (or a bare `--resume-from`)
// names no checkpoint, and $TUNE_RESUME_FROM and $TUNE_TRIAL_DIR are
// honoured.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/trainer/run_util.h"
#include "tests/trainer/test_util.h"
#include "trainer/lr_schedule.h"
#include "trainer/safetensors.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using testing::LoraTrainBin;
using testing::Metrics;
using testing::Sh;
using testing::Slurp;

// lora_train with no TUNE_* variable from the environment the tests run in.
std::string Bin() { return "unset TUNE_RESUME_FROM TUNE_TRIAL_DIR; " + LoraTrainBin(); }

std::string WriteData(const std::string& dir) {
  const char* words[] = {"alpha beta gamma", "the quick brown fox", "hello world again", "one two three four"};
  std::ofstream out(dir + "/train.jsonl");
  for (int i = 0; i < 32; ++i) {
    nlohmann::json j{{"instruction", "Repeat item " + std::to_string(i % 4) + "."}, {"response", words[i % 4]}};
    out << j.dump() << "\n";
  }
  return dir + "/train.jsonl";
}

// Six steps with a checkpoint every three; a metric line at every step.
// `more` ("--name value" pairs; lora_train refuses a flag given twice)
// replaces or adds flags.
std::string Flags(const std::string& data, const std::string& more = "") {
  std::vector<std::pair<std::string, std::string>> flags = {
      {"--base", testing::GoldenDir() + "/llama"},
      {"--data", data},
      {"--seq-len", "96"},
      {"--threads", "1"},
      {"--lora-r", "4"},
      {"--lora-alpha", "8"},
      {"--lora-dropout", "0"},
      {"--target-modules", "q_proj,v_proj"},
      {"--max-steps", "6"},
      {"--save-every", "3"},
      {"--eval-every", "0"},
      {"--log-every", "1"},
      {"--batch-size", "2"},
      {"--lr", "1e-2"},
      {"--warmup-steps", "2"}};
  std::istringstream in(more);
  std::string name, value;
  while (in >> name >> value) {
    auto it = std::find_if(flags.begin(), flags.end(), [&](const auto& f) { return f.first == name; });
    if (it != flags.end()) it->second = value;
    else flags.emplace_back(name, value);
  }
  std::string out;
  for (const auto& [n, v] : flags) out += " " + n + " " + v;
  return out;
}

// Max relative difference over the adapter tensors of two output folders.
double AdapterDiff(const std::string& a_dir, const std::string& b_dir) {
  auto a = ReadSafetensors(a_dir + "/adapter_model.safetensors");
  auto b = ReadSafetensors(b_dir + "/adapter_model.safetensors");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->size() == b->size());
  double diff = 0.0;
  for (auto& [k, t] : *a) diff = std::max(diff, testing::MaxRelDiff(t, (*b)[k]));
  return diff;
}

nlohmann::json ReadJson(const std::string& path) { return nlohmann::json::parse(Slurp(path)); }

// One uninterrupted six-step run with checkpoints at steps 3 and 6, shared
// by the sections of a test case.
struct Donor {
  testing::TempDir tmp{"continue"};
  std::string dir = tmp.path.string();
  std::string data = WriteData(dir);
  std::string ckpt = dir + "/a/checkpoint-3";
  std::string out;  // its stdout

  Donor() {
    REQUIRE(Sh(Bin() + Flags(data) + " --output " + dir + "/a > " + dir + "/a.out 2> " + dir + "/a.err") == 0);
    REQUIRE(fs::exists(ckpt + "/optimizer.pt"));
    out = Slurp(dir + "/a.out");
  }

  // A run with `more` flags into dir/name, after the assignments in `env`;
  // its exit code.
  int Continue(const std::string& name, const std::string& more, const std::string& env = "") const {
    const std::string bin = "unset TUNE_RESUME_FROM TUNE_TRIAL_DIR; " + env + " " + LoraTrainBin();
    const std::string to = dir + "/" + name;
    return Sh(bin + Flags(data, more) + " --output " + to + " > " + to + ".out 2> " + to + ".err");
  }
  std::string Out(const std::string& name) const { return Slurp(dir + "/" + name + ".out"); }
  std::string Err(const std::string& name) const { return Slurp(dir + "/" + name + ".err"); }
};

TEST_CASE("continuing with a new --lr: the schedule gives lr(step) of the new value after the checkpoint",
          "[trainer][run][continue]") {
  Donor d;
  const auto donor = Metrics(d.out);
  SECTION("the same hyperparameters continue the uninterrupted run exactly") {
    REQUIRE(d.Continue("same", " --resume-from " + d.ckpt) == 0);
    CHECK(AdapterDiff(d.dir + "/a", d.dir + "/same") <= 1e-6);
    CHECK_THAT(d.Err("same"), !Catch::Contains("from the command line"));
  }
  SECTION("a new peak learning rate") {
    REQUIRE(d.Continue("b", " --lr 3e-3 --resume-from " + d.ckpt) == 0);
    const auto m = Metrics(d.Out("b"));
    CHECK_FALSE(m.count({3, "lr"}));  // steps up to the checkpoint's are not run again
    for (int step = 4; step <= 6; ++step) {
      // The metric line of step N shows the rate of update N-1 (0-based).
      const double expected = LearningRate(ScheduleKind::kCosine, 3e-3, step - 1, 2, 6);
      INFO("step " << step);
      REQUIRE(m.count({step, "lr"}));
      CHECK(m.at({step, "lr"}) == Approx(expected).epsilon(1e-5));
      CHECK(donor.at({step, "lr"}) == Approx(LearningRate(ScheduleKind::kCosine, 1e-2, step - 1, 2, 6)).epsilon(1e-5));
    }
    // The first step after the checkpoint starts from the same weights: the
    // same loss; the update differs, so the adapters do.
    CHECK(m.at({4, "train_loss"}) == Approx(donor.at({4, "train_loss"})).epsilon(1e-6));
    CHECK(m.at({5, "train_loss"}) != Approx(donor.at({5, "train_loss"})).epsilon(1e-6));
    CHECK(AdapterDiff(d.dir + "/a", d.dir + "/b") > 1e-3);
    CHECK_THAT(d.Err("b"), Catch::Contains("lr 0.003 (the checkpoint's run had 0.01)"));
    CHECK(ReadJson(d.dir + "/b/checkpoint-6/training_args.json").at("lr") == 3e-3);
  }
  SECTION("a new warmup and schedule: still in warmup at the resumed step") {
    REQUIRE(d.Continue("w", " --lr 4e-3 --warmup-steps 5 --schedule linear --resume-from " + d.ckpt) == 0);
    const auto m = Metrics(d.Out("w"));
    for (int step = 4; step <= 6; ++step) {
      INFO("step " << step);
      REQUIRE(m.count({step, "lr"}));
      CHECK(m.at({step, "lr"}) == Approx(LearningRate(ScheduleKind::kLinear, 4e-3, step - 1, 5, 6)).epsilon(1e-5));
    }
    CHECK(m.at({4, "lr"}) == Approx(4e-3 * 3 / 5).epsilon(1e-5));
  }
  SECTION("a new weight decay is applied, not the checkpoint's") {
    REQUIRE(d.Continue("wd", " --weight-decay 0.5 --resume-from " + d.ckpt) == 0);
    CHECK(AdapterDiff(d.dir + "/a", d.dir + "/wd") > 1e-4);
    CHECK_THAT(d.Err("wd"), Catch::Contains("weight_decay 0.5 (the checkpoint's run had 0.0)"));
  }
}

TEST_CASE("continuing with a new LoRA alpha or dropout takes effect from the resumed step",
          "[trainer][run][continue]") {
  Donor d;
  const auto donor = Metrics(d.out);
  SECTION("alpha: the scaling alpha/r changes the first loss after the checkpoint") {
    REQUIRE(d.Continue("alpha", " --lora-alpha 32 --resume-from " + d.ckpt) == 0);
    const auto m = Metrics(d.Out("alpha"));
    CHECK(m.at({4, "train_loss"}) != Approx(donor.at({4, "train_loss"})).epsilon(1e-6));
    CHECK(AdapterDiff(d.dir + "/a", d.dir + "/alpha") > 1e-4);
    CHECK(ReadJson(d.dir + "/alpha/adapter_config.json").at("lora_alpha") == 32.0);
    CHECK(ReadJson(d.dir + "/alpha/checkpoint-6/adapter_config.json").at("lora_alpha") == 32.0);
    CHECK_THAT(d.Err("alpha"), Catch::Contains("continuing with LoRA alpha 32"));
  }
  SECTION("dropout: masks on the LoRA input change the first loss after the checkpoint") {
    REQUIRE(d.Continue("dropout", " --lora-dropout 0.3 --resume-from " + d.ckpt) == 0);
    const auto m = Metrics(d.Out("dropout"));
    CHECK(m.at({4, "train_loss"}) != Approx(donor.at({4, "train_loss"})).epsilon(1e-6));
    CHECK(AdapterDiff(d.dir + "/a", d.dir + "/dropout") > 1e-4);
    CHECK(ReadJson(d.dir + "/dropout/adapter_config.json").at("lora_dropout") == 0.3);
  }
}

TEST_CASE("a new LoRA rank or other target modules cannot continue: refused in one sentence",
          "[trainer][run][continue]") {
  Donor d;
  SECTION("rank") {
    CHECK(d.Continue("r8", " --lora-r 8 --resume-from " + d.ckpt) == 2);
    CHECK_THAT(d.Err("r8"), Catch::Contains("lora_train: " + d.ckpt +
                                            ": the checkpoint's LoRA rank is 4, --lora-r asks 8; a checkpoint "
                                            "continues only with its own rank"));
    CHECK_FALSE(fs::exists(d.dir + "/r8/checkpoint-6"));
  }
  SECTION("target modules, found by auto-resume in the output folder") {
    fs::create_directories(d.dir + "/tm");
    fs::copy(d.ckpt, d.dir + "/tm/checkpoint-3", fs::copy_options::recursive);
    CHECK(d.Continue("tm", " --target-modules q_proj,k_proj,v_proj") == 2);
    CHECK_THAT(d.Err("tm"), Catch::Contains("the checkpoint's LoRA target modules are q_proj,v_proj, "
                                            "--target-modules asks k_proj,q_proj,v_proj; a checkpoint continues "
                                            "only with its own target modules"));
  }
}

TEST_CASE("an empty resume-from names no checkpoint, and TUNE_RESUME_FROM and TUNE_TRIAL_DIR are honoured",
          "[trainer][run][continue]") {
  Donor d;
  SECTION("--resume-from \"\" with no checkpoint starts from step 0") {
    REQUIRE(d.Continue("fresh", " --resume-from \"\"") == 0);
    CHECK_THAT(d.Err("fresh"), !Catch::Contains("resumed"));
    CHECK(Metrics(d.Out("fresh")).count({1, "lr"}));
    CHECK(AdapterDiff(d.dir + "/a", d.dir + "/fresh") <= 1e-6);
    // A bare --resume-from, as an empty ${resume_from} in a shell line leaves it.
    REQUIRE(Sh(Bin() + Flags(d.data) + " --resume-from --output " + d.dir + "/bare > /dev/null 2> " + d.dir +
               "/bare.err") == 0);
    CHECK_THAT(d.Err("bare"), !Catch::Contains("resumed"));
    CHECK(AdapterDiff(d.dir + "/a", d.dir + "/bare") <= 1e-6);
  }
  SECTION("$TUNE_RESUME_FROM, also under --resume-from \"\"") {
    REQUIRE(d.Continue("env", " --resume-from \"\"", "TUNE_RESUME_FROM=" + d.ckpt) == 0);
    CHECK_THAT(d.Err("env"), Catch::Contains("resumed from " + d.ckpt + " ($TUNE_RESUME_FROM) at step 3"));
    CHECK_FALSE(Metrics(d.Out("env")).count({3, "lr"}));
    CHECK(AdapterDiff(d.dir + "/a", d.dir + "/env") <= 1e-6);
  }
  SECTION("--resume-from wins over $TUNE_RESUME_FROM") {
    REQUIRE(d.Continue("flag", " --resume-from " + d.ckpt, "TUNE_RESUME_FROM=" + d.dir + "/nowhere") == 0);
    CHECK_THAT(d.Err("flag"), Catch::Contains("(--resume-from) at step 3"));
  }
  SECTION("a $TUNE_RESUME_FROM without a checkpoint fails, naming the variable") {
    CHECK(d.Continue("stale", "", "TUNE_RESUME_FROM=" + d.dir + "/nowhere") == 2);
    CHECK_THAT(d.Err("stale"), Catch::Contains("$TUNE_RESUME_FROM: no checkpoint in " + d.dir + "/nowhere"));
  }
  SECTION("a trial directory holding a copied checkpoint: the default output, and auto-resume finds it") {
    // As tune arranges a PBT exploit: the donor's checkpoint copied into the
    // trial's directory, the command naming no --output.
    const std::string trial = d.dir + "/trial";
    fs::create_directories(trial);
    fs::copy(d.ckpt, trial + "/checkpoint-3", fs::copy_options::recursive);
    const std::string flags = Flags(d.data, "--lr 3e-3 --resume-from \"\"");
    REQUIRE(Sh("unset TUNE_RESUME_FROM; TUNE_TRIAL_DIR=" + trial + " " + LoraTrainBin() + flags + " > " + d.dir +
               "/trial.out 2> " + d.dir + "/trial.err") == 0);
    CHECK_THAT(d.Err("trial"), Catch::Contains("resumed from " + trial + "/checkpoint-3 (the newest checkpoint in " +
                                               trial + ") at step 3"));
    CHECK(fs::exists(trial + "/checkpoint-6/adapter_model.safetensors"));
    const auto m = Metrics(d.Out("trial"));
    REQUIRE(m.count({4, "lr"}));
    CHECK(m.at({4, "lr"}) == Approx(LearningRate(ScheduleKind::kCosine, 3e-3, 3, 2, 6)).epsilon(1e-5));
  }
}

}  // namespace
}  // namespace tune
