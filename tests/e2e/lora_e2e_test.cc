// End to end with the real trainer: `tune run` on experiments/lora-quick.json
// (the fast variant of the default experiment: TPE + ASHA, 2 lora_train
// workers per trial, Gloo) and on experiments/lora-qlora.json (the same,
// searching over a 4-bit base: --quantize none | nf4 | fp4) over the demo
// data and a tiny pretrained base that the demo scripts build, in a
// temporary tree laid out like the repository.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;

// The last eval_loss=... in `text`, NaN if none.
double LastEvalLoss(const std::string& text) {
  static const std::regex kEval(R"(eval_loss=([-+0-9.eE]+))");
  double v = std::nan("");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kEval); it != std::sregex_iterator(); ++it) {
    v = std::stod((*it)[1]);
  }
  return v;
}

// The repository's layout in `dir`: experiments/<experiment>.json, data/
// and models/tiny, built by the demo scripts.
void LayOutRepository(const fs::path& dir, const std::string& experiment) {
  const fs::path src = TUNE_SOURCE_DIR;
  fs::create_directories(dir / "experiments");
  fs::copy_file(src / "experiments" / (experiment + ".json"), dir / "experiments" / (experiment + ".json"));
  Output model = Sh("LORA_TRAIN=" + Quote(kBin + "/lora_train") + " " +
                    Quote((src / "scripts/make-demo-model.sh").string()) + " --out " +
                    Quote((dir / "models/tiny").string()) + " --data " + Quote((dir / "data").string()) +
                    " --steps 40 --threads 1");
  INFO(model.out);
  REQUIRE(model.code == 0);
}

TEST_CASE("tune run tunes real 2-worker LoRA trials with TPE and ASHA", "[e2e][lora]") {
  TempDir dir;
  const std::string lora_train = kBin + "/lora_train";
  LayOutRepository(dir.path, "lora-quick");

  // The base model's eval loss on the same eval examples (no training step).
  Output base = Sh("cd " + Quote(dir.path.string()) + " && OMP_NUM_THREADS=1 " + Quote(lora_train) +
                   " --base models/tiny --data data/train.jsonl --eval-data data/eval.jsonl --seq-len 96"
                   " --eval-max-examples 32 --max-steps 0 --output base_eval");
  INFO(base.out);
  REQUIRE(base.code == 0);
  const double base_loss = LastEvalLoss(base.out);
  REQUIRE(std::isfinite(base_loss));

  const std::string spec = (dir.path / "experiments" / "lora-quick.json").string();
  const std::string db = (dir.path / "quick.db").string();
  Output run = Sh(Tune("run " + Quote(spec) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);

  Output trials = Sh(Tune("trials --db " + Quote(db) + " --experiment lora-quick --format json"));
  REQUIRE(trials.code == 0);
  json rows = json::parse(trials.out);
  REQUIRE(rows.size() == 4);
  int completed = 0;
  for (const auto& r : rows) {
    const std::string state = r["state"];
    INFO("trial " << r["number"] << " " << state);
    CHECK((state == "completed" || state == "pruned"));
    char name[32];
    std::snprintf(name, sizeof name, "trial_%04d", r["number"].get<int>());
    const fs::path tdir = dir.path / "tune_runs" / "lora-quick" / name;
    // One log per rank; only rank 0 prints metric lines.
    CHECK(fs::exists(tdir / "rank_0.log"));
    CHECK(fs::exists(tdir / "rank_1.log"));
    if (state == "completed") {
      ++completed;
      // PEFT's files, written by rank 0 into the trial directory.
      CHECK(fs::file_size(tdir / "adapter_model.safetensors") > 0);
      json cfg = json::parse(std::ifstream(tdir / "adapter_config.json"));
      CHECK(cfg["peft_type"] == "LORA");
      CHECK(cfg["r"].get<int>() == r["params"]["lora_r"].get<int>());
    }
  }
  CHECK(completed >= 1);

  // The tuned adapter beats the base model on the eval set.
  Output best = Sh(Tune("best --db " + Quote(db) + " --experiment lora-quick --format json"));
  INFO(best.out);
  REQUIRE(best.code == 0);
  const double best_loss = json::parse(best.out)["value"].get<double>();
  CHECK(best_loss < base_loss - 0.05);

  // Every rank of every trial has ended.
  CHECK(CountProcesses(dir.path.string() + "/") == 0);
  CHECK(CountProcesses("lora-quick") == 0);
}

TEST_CASE("tune run searches over a 4-bit base: QLoRA trials with --quantize none, nf4 and fp4", "[e2e][lora]") {
  TempDir dir;
  LayOutRepository(dir.path, "lora-qlora");
  const std::string spec = (dir.path / "experiments" / "lora-qlora.json").string();
  const std::string db = (dir.path / "qlora.db").string();
  Output run = Sh("cd " + Quote(dir.path.string()) + " && " + Tune("run " + Quote(spec) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  Output trials = Sh(Tune("trials --db " + Quote(db) + " --experiment lora-qlora --format json"));
  REQUIRE(trials.code == 0);
  std::set<std::string> finished_with;
  for (const auto& r : json::parse(trials.out)) {
    const std::string state = r["state"], quantize = r["params"]["quantize"];
    INFO("trial " << r["number"] << " " << state << " quantize " << quantize);
    REQUIRE((state == "completed" || state == "pruned"));
    CHECK(std::isfinite(r["value"].get<double>()));
    finished_with.insert(quantize);
    // What the trainer held: its first line names the 4-bit projections.
    char name[32];
    std::snprintf(name, sizeof name, "trial_%04d", r["number"].get<int>());
    const std::string log = Slurp(dir.path / "tune_runs" / "lora-qlora" / name / "rank_0.log");
    if (quantize == "none") {
      CHECK(log.find("decoder projections in") == std::string::npos);
    } else {
      CHECK(log.find("decoder projections in " + quantize + ":") != std::string::npos);
    }
  }
  // The sampler tried a 4-bit base and the float one (seed 7: all three).
  CHECK(finished_with.count("none") == 1);
  CHECK((finished_with.count("nf4") + finished_with.count("fp4")) >= 1);
  CHECK(CountProcesses("lora-qlora") == 0);
}

}  // namespace
