// `tune replay` on a database built through the Storage API with PBT
// exploits: the experiment it writes replays the trial's lineage on one
// trial, parses as `tune run` reads it, and its scheduler changes the
// parameters at the schedule's steps.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "schedulers/replay_scheduler.h"
#include "spec/experiment_spec.h"
#include "storage/storage.h"
#include "tests/common/temp_dir.h"
#include "tuner/cli_commands.h"
#include "tuner/components.h"

namespace tune {
namespace {

using nlohmann::json;

constexpr const char kSpec[] = R"({
  "name": "pbt",
  "objective": {"metric": "loss", "mode": "min"},
  "parameters": {"lr": {"type": "loguniform", "low": 0.01, "high": 1.0},
                 "opt": {"type": "choice", "values": ["adam", "sgd"]}},
  "search": {"algorithm": "tpe", "seed": 3},
  "scheduler": {"type": "asha", "max_t": 80, "grace_period": 10},
  "limits": {"max_trials": 2, "max_concurrent_trials": 2, "max_failed_trials": 1},
  "trial": {"command": ["train", "--lr", "${lr}", "--steps", "80"]}
})";

// Trial 0 (lr 0.1) took trial 1's checkpoint-20 with lr 0.24; then trial 1
// took trial 0's checkpoint-40 with lr 0.3.
struct Fixture {
  testing::TempDir dir;
  std::string path = dir.File("tune.db");
  Fixture() {
    auto db = std::move(OpenSqliteStorage(path)).value();
    ExperimentId e = *db->CreateExperiment("pbt", kSpec, 3);
    TrialId t0 = db->CreateTrial(e, {{"lr", 0.1}, {"opt", std::string("adam")}})->id;
    TrialId t1 = db->CreateTrial(e, {{"lr", 0.2}, {"opt", std::string("sgd")}})->id;
    REQUIRE(db->StartTrial(t0, 0, "local").ok());
    REQUIRE(db->StartTrial(t1, 0, "local").ok());
    REQUIRE(db->PauseTrial(t0, "exploit").ok());
    REQUIRE(db->RecordExploit(t0, 20, t1, 20, {{"lr", 0.24}, {"opt", std::string("sgd")}}).ok());
    REQUIRE(db->ContinueTrial(t0, 1, "local", 20).ok());
    REQUIRE(db->PauseTrial(t1, "exploit").ok());
    REQUIRE(db->RecordExploit(t1, 40, t0, 40, {{"lr", 0.3}, {"opt", std::string("sgd")}}).ok());
    CreateTrialWithoutExploits(*db, e);
  }
  static void CreateTrialWithoutExploits(Storage& db, ExperimentId e) {
    REQUIRE(db.CreateTrial(e, {{"lr", 0.5}, {"opt", std::string("adam")}}).ok());
  }
  int Replay(int trial, std::string* out_text, std::string* err_text, const std::string& out_path = "") {
    ReplayArgs args;
    args.db_path = path;
    args.experiment = "pbt";
    args.trial = trial;
    args.out_path = out_path;
    std::ostringstream out, err;
    int rc = ReplayCommand(args, out, err);
    *out_text = out.str();
    *err_text = err.str();
    return rc;
  }
};

TEST_CASE("tune replay writes one trial that follows the lineage's schedule", "[replay]") {
  Fixture f;
  std::string out, err;
  const int rc = f.Replay(1, &out, &err);
  INFO(err);
  REQUIRE(rc == 0);
  json j = json::parse(out);
  CHECK(j["name"] == "pbt-replay-trial-1");
  CHECK(j["limits"]["max_trials"] == 1);
  CHECK(j["limits"]["max_concurrent_trials"] == 1);
  CHECK(j["limits"]["max_failed_trials"] == 1);  // the rest kept
  CHECK(j["search"]["algorithm"] == "random");
  // Trial 1's weights: its own first 20 steps (lr 0.2, trial 0 took them),
  // trial 0's steps 20-40 with lr 0.24, then its own lr 0.3 from step 40.
  REQUIRE(j["search"]["points_to_evaluate"].size() == 1);
  CHECK(j["search"]["points_to_evaluate"][0]["lr"] == 0.2);
  CHECK(j["search"]["points_to_evaluate"][0]["opt"] == "sgd");
  const json& s = j["scheduler"];
  CHECK(s["type"] == "replay");
  CHECK(s["max_t"] == 80);
  CHECK(s["time_attr"] == "step");
  REQUIRE(s["schedule"].size() == 2);
  CHECK(s["schedule"][0]["step"] == 20);
  CHECK(s["schedule"][0]["params"]["lr"] == 0.24);
  CHECK(s["schedule"][1]["step"] == 40);
  CHECK(s["schedule"][1]["params"]["lr"] == 0.3);
  CHECK(j["trial"]["command"][2] == "${lr}");  // the rest of the experiment as stored
  CHECK(err.find("from step 20: lr=0.24, opt=sgd (from trial 1's checkpoint-20)") != std::string::npos);

  // What it wrote is an experiment `tune run` reads, with that scheduler.
  auto spec = ParseExperimentSpec(out, "replay.json");
  INFO(spec.status().ToString());
  REQUIRE(spec.ok());
  CHECK(spec->limits.max_trials == 1);
  REQUIRE(spec->scheduler.replay_schedule.size() == 2);
  CHECK(spec->scheduler.replay_schedule[1].first == 40);
  CHECK(spec->search.points_to_evaluate[0].at("lr") == ParamValue(0.2));
  auto scheduler = MakeScheduler(*spec, 1);
  REQUIRE(scheduler.ok());
  CHECK((*scheduler)->UsesCheckpoints());
  Trial t;
  t.id = 5;
  CHECK((*scheduler)->OnTrialResult(t, 10, 1.0).action == Action::kContinue);
  Decision d = (*scheduler)->OnTrialResult(t, 20, 0.9);
  CHECK(d.action == Action::kPause);
  REQUIRE(d.exploit.has_value());
  CHECK(d.exploit->donor == t.id);  // its own checkpoint
  CHECK(d.exploit->params.at("lr") == ParamValue(0.24));
  // Until the tuner carried it out, nothing more is asked.
  CHECK((*scheduler)->OnTrialResult(t, 30, 0.8).action == Action::kContinue);
  (*scheduler)->OnTrialExploited(t, t, 20);
  CHECK((*scheduler)->OnTrialResult(t, 30, 0.8).action == Action::kContinue);
  // A step past the change's step also changes it.
  Decision d2 = (*scheduler)->OnTrialResult(t, 45, 0.7);
  CHECK(d2.action == Action::kPause);
  CHECK(d2.exploit->params.at("lr") == ParamValue(0.3));
  CHECK((*scheduler)->OnExploitSkipped(t) == Action::kContinue);
  CHECK((*scheduler)->OnTrialResult(t, 60, 0.6).action == Action::kContinue);
}

TEST_CASE("tune replay of the first recipient, of a trial without exploits, and of no trial", "[replay]") {
  Fixture f;
  std::string out, err;
  // Trial 0's weights: trial 1's first 20 steps, then lr 0.24.
  REQUIRE(f.Replay(0, &out, &err) == 0);
  json j = json::parse(out);
  CHECK(j["search"]["points_to_evaluate"][0]["lr"] == 0.2);
  REQUIRE(j["scheduler"]["schedule"].size() == 1);
  CHECK(j["scheduler"]["schedule"][0]["step"] == 20);

  // No exploit: a plain re-run of its parameters, fifo.
  testing::TempDir dir;
  const std::string file = dir.File("replay.json");
  REQUIRE(f.Replay(2, &out, &err, file) == 0);
  CHECK(out.empty());
  CHECK(err.find("no exploit") != std::string::npos);
  std::ifstream in(file);
  json plain = json::parse(in);
  CHECK(plain["scheduler"] == json({{"type", "fifo"}, {"time_attr", "step"}}));
  CHECK(plain["search"]["points_to_evaluate"][0]["lr"] == 0.5);
  CHECK(ParseExperimentSpec(plain.dump(), "replay.json").ok());

  CHECK(f.Replay(7, &out, &err) == 2);
  CHECK(err == "tune: experiment 'pbt' has no trial 7\n");
}

TEST_CASE("a replay schedule is checked as tune run reads it", "[replay][spec]") {
  auto with = [](const std::string& schedule) {
    json spec = json::parse(kSpec);
    spec["scheduler"] = json::parse(R"({"type": "replay", "max_t": 80, "schedule": )" + schedule + "}");
    return ParseExperimentSpec(spec.dump(), "exp.json");
  };
  CHECK(with(R"([{"step": 10, "params": {"lr": 0.5}}])").ok());
  auto decreasing = with(R"([{"step": 10, "params": {"lr": 0.5}}, {"step": 10, "params": {"lr": 0.4}}])");
  REQUIRE_FALSE(decreasing.ok());
  CHECK(decreasing.status().message().find("scheduler.schedule[1].step") != std::string::npos);
  auto outside = with(R"([{"step": 10, "params": {"lr": 5.0}}])");
  REQUIRE_FALSE(outside.ok());
  CHECK(outside.status().message().find("lr") != std::string::npos);
  CHECK_FALSE(with("[]").ok());
  CHECK_FALSE(with(R"([{"step": 10}])").ok());
}

}  // namespace
}  // namespace tune
