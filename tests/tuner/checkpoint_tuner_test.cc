// The Tuner's checkpoint-aware paths against a scripted backend, a real
// SQLite file and real checkpoint folders: a paused trial continues from its
// checkpoint, PBT's exploit copies the donor's newest one and changes the
// parameters, a missing donor checkpoint changes nothing, and --resume
// replays the exploit to the scheduler where it happened.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "search/random_sampler.h"
#include "storage/trial_schedule.h"
#include "tests/common/temp_dir.h"
#include "tests/tuner/fake_backend.h"
#include "tuner/tuner.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using testing::FakeBackend;
using testing::Script;
using testing::TempDir;

ExperimentSpec MakeSpec(int max_trials, int concurrent) {
  ExperimentSpec spec;
  spec.name = "ckpt";
  spec.json = "{}";
  spec.base_dir = ".";
  spec.objective.metric = "loss";
  spec.objective.mode = Mode::kMin;
  spec.parameters["lr"] = FloatDistribution{1e-4, 1e-1, true, std::nullopt};
  spec.search.seed = 3;
  spec.search.seed_given = true;
  spec.limits.max_trials = max_trials;
  spec.limits.max_concurrent_trials = concurrent;
  spec.trial.command = {"train", "--lr", "${lr}", "--resume", "${resume_from}"};
  return spec;
}

// The step of the checkpoint an attempt continues from (0: none).
int64_t ResumeStep(const LaunchSpec& spec) {
  auto it = spec.env.find("TUNE_RESUME_FROM");
  if (it == spec.env.end()) return 0;
  return std::stoll(fs::path(it->second).filename().string().substr(sizeof("checkpoint-") - 1));
}

// An attempt reports steps ResumeStep+1 .. 10 with loss = its lr, and has
// saved a checkpoint folder for each of them (written at launch: the fake
// backend runs nothing).
Script Checkpointing(const LaunchSpec& spec) {
  Script s;
  const double lr = std::stod(spec.env.at("TUNE_PARAM_LR"));
  for (int64_t step = ResumeStep(spec) + 1; step <= 10; ++step) {
    MetricReport r;
    r.step = step;
    r.values["loss"] = lr;
    s.reports.push_back(r);
    fs::create_directories(fs::path(spec.trial_dir) / ("checkpoint-" + std::to_string(step)));
  }
  return s;
}

// Trial `recipient` (by number) is paused at `at_step`, taking `donor`'s
// checkpoint with lr `new_lr` when `donor` >= 0; counts what it is told.
class ScriptedPbt : public Scheduler {
 public:
  ScriptedPbt(int recipient, int64_t at_step, int donor, double new_lr)
      : recipient_(recipient), at_step_(at_step), donor_(donor), new_lr_(new_lr) {}

  void OnTrialAdd(const Trial& t) override {
    ids[t.number] = t.id;
    first_params[t.number] = t.params;
  }
  void SetWaitingTrials(int n) override { waiting.push_back(n); }
  Decision OnTrialResult(const Trial& t, int64_t step, double) override {
    if (t.number != recipient_ || step != at_step_ || decided) return Decision::Continue();
    decided = true;
    Decision d;
    d.action = Action::kPause;
    // A donor not created yet gets an id no trial has.
    // It judged the donor at step 6.
    if (donor_ >= 0) {
      d.exploit = Exploit{ids.count(donor_) ? ids.at(donor_) : 424242, ParamMap{{"lr", ParamValue(new_lr_)}}, 6};
    }
    return d;
  }
  void OnTrialExploited(const Trial& recipient, const Trial& donor, int64_t donor_step) override {
    exploited.push_back({recipient.number, donor.number, donor_step, std::get<double>(recipient.params.at("lr"))});
  }
  Action OnExploitSkipped(const Trial&) override {
    ++skipped;
    return Action::kContinue;
  }
  bool UsesCheckpoints() const override { return true; }

  struct Seen {
    int recipient, donor;
    int64_t donor_step;
    double lr;
  };
  std::map<int, TrialId> ids;
  std::map<int, ParamMap> first_params;
  std::vector<int> waiting;
  std::vector<Seen> exploited;
  int skipped = 0;
  bool decided = false;

 private:
  int recipient_;
  int64_t at_step_;
  int donor_;
  double new_lr_;
};

struct Fixture {
  TempDir dir;
  std::unique_ptr<Storage> storage;
  RandomSampler sampler{1};
  Fixture() {
    auto s = OpenSqliteStorage((dir.path / "t.db").string());
    REQUIRE(s.ok());
    storage = std::move(s).value();
  }
  fs::path TrialDir(int number) const { return dir.path / "runs" / "ckpt" / ("trial_000" + std::to_string(number)); }
  Result<RunSummary> Run(const ExperimentSpec& spec, TrialBackend& backend, Scheduler& scheduler,
                         bool resume = false) {
    TunerParts parts{storage.get(), &backend, &sampler, &scheduler, nullptr, nullptr};
    TunerOptions o;
    o.resume = resume;
    o.runs_dir = (dir.path / "runs").string();
    o.tick = std::chrono::milliseconds(0);
    Tuner tuner(spec, parts, o);
    return tuner.Run(nullptr);
  }
};

std::vector<const LaunchSpec*> LaunchesOf(const FakeBackend& b, int number) {
  std::vector<const LaunchSpec*> out;
  for (const LaunchSpec& l : b.launches)
    if (l.trial_number == number) out.push_back(&l);
  return out;
}

std::set<std::string> Checkpoints(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("checkpoint-", 0) == 0) out.insert(e.path().filename().string());
  }
  return out;
}

TEST_CASE("an exploit pauses the recipient, copies the donor's newest checkpoint and continues with new parameters",
          "[tuner][checkpoint]") {
  Fixture f;
  FakeBackend backend(Checkpointing);
  // Trial 1 launches second and writes checkpoint-1..10 at once; trial 0
  // is paused at its step 4 and takes trial 1's newest at or before the
  // step the scheduler judged (6), not its newest (10).
  ScriptedPbt pbt(0, 4, 1, 0.05);
  auto summary = f.Run(MakeSpec(2, 2), backend, pbt);
  REQUIRE(summary.ok());
  CHECK(summary->completed == 2);

  auto exp = f.storage->FindExperiment("ckpt");
  REQUIRE(exp.ok());
  auto exploits = f.storage->ListExploits(exp->id);
  REQUIRE(exploits.ok());
  REQUIRE(exploits->size() == 1);
  const StoredExploit& x = exploits->front();
  CHECK(x.trial_number == 0);
  CHECK(x.donor_number == 1);
  CHECK(x.step == 4);
  CHECK(x.donor_step == 6);
  CHECK(x.before == pbt.first_params.at(0));
  CHECK(std::get<double>(x.after.at("lr")) == 0.05);

  REQUIRE(pbt.exploited.size() == 1);
  CHECK(pbt.exploited[0].recipient == 0);
  CHECK(pbt.exploited[0].donor == 1);
  CHECK(pbt.exploited[0].donor_step == 6);
  CHECK(pbt.exploited[0].lr == 0.05);

  // The second attempt continues from the copy with the new lr.
  auto launches = LaunchesOf(backend, 0);
  REQUIRE(launches.size() == 2);
  CHECK(launches[0]->env.count("TUNE_RESUME_FROM") == 0);
  CHECK(launches[0]->argv.back().empty());  // ${resume_from} with no checkpoint
  CHECK(launches[1]->env.at("TUNE_RESUME_FROM") == (f.TrialDir(0) / "checkpoint-6").string());
  CHECK(launches[1]->argv.back() == (f.TrialDir(0) / "checkpoint-6").string());
  CHECK(launches[1]->env.at("TUNE_PARAM_LR") == "0.05");
  CHECK(launches[1]->attempt == launches[0]->attempt + 1);
  // Its own checkpoints were replaced by the copy (then the second attempt
  // wrote 7..10); the donor's are all still there.
  CHECK(Checkpoints(f.TrialDir(0)) ==
        std::set<std::string>{"checkpoint-6", "checkpoint-7", "checkpoint-8", "checkpoint-9", "checkpoint-10"});
  CHECK(Checkpoints(f.TrialDir(1)).size() == 10);

  auto trials = f.storage->ListTrials(exp->id);
  REQUIRE(trials.ok());
  const Trial& t0 = trials->at(0);
  CHECK(std::get<double>(t0.params.at("lr")) == 0.05);
  // Its curve: its own reports up to the copied step (1..4), then the
  // continued attempt's from step 7 on, with the new lr.
  std::vector<int64_t> steps;
  for (const auto& [s, v] : t0.intermediate) steps.push_back(s);
  CHECK(steps == std::vector<int64_t>{1, 2, 3, 4, 7, 8, 9, 10});
  CHECK(t0.intermediate.at(10) == 0.05);

  auto schedule = TrialScheduleOf(t0, *exploits);
  REQUIRE(schedule.size() == 2);
  CHECK(schedule[0].params == pbt.first_params.at(0));
  CHECK(!schedule[0].donor);
  CHECK(schedule[1].step == 6);
  CHECK(schedule[1].donor == 1);

  SECTION("--resume replays the exploit after the report recorded before it, with the first parameters") {
    FakeBackend again(Checkpointing);
    ScriptedPbt replayed(0, 4, 1, 0.05);
    replayed.decided = true;  // a replay's decisions are not carried out anyway
    auto resumed = f.Run(MakeSpec(2, 2), again, replayed, true);
    REQUIRE(resumed.ok());
    CHECK(again.launches.empty());
    CHECK(replayed.first_params.at(0) == pbt.first_params.at(0));
    REQUIRE(replayed.exploited.size() == 1);
    CHECK(replayed.exploited[0].donor == 1);
    CHECK(replayed.exploited[0].donor_step == 6);
    CHECK(replayed.exploited[0].lr == 0.05);
  }
}

TEST_CASE("an exploit whose donor has no checkpoint changes nothing", "[tuner][checkpoint]") {
  Fixture f;
  // Trial 0 runs alone first (one slot): trial 1 has no directory yet.
  FakeBackend backend(Checkpointing);
  ScriptedPbt pbt(0, 4, 1, 0.05);
  ExperimentSpec spec = MakeSpec(2, 1);
  auto summary = f.Run(spec, backend, pbt);
  // Trial 1 does not exist when trial 0 reports step 4: no donor at all.
  REQUIRE(summary.ok());
  CHECK(summary->completed == 2);
  CHECK(pbt.exploited.empty());
  CHECK(pbt.skipped == 1);
  CHECK(LaunchesOf(backend, 0).size() == 1);
  auto exp = f.storage->FindExperiment("ckpt");
  REQUIRE(exp.ok());
  auto exploits = f.storage->ListExploits(exp->id);
  REQUIRE(exploits.ok());
  CHECK(exploits->empty());
}

TEST_CASE("a paused trial holds no slot and continues from its own checkpoint once the population exists",
          "[tuner][checkpoint]") {
  Fixture f;
  FakeBackend backend(Checkpointing);
  // Pause without exploit: trial 0 at step 3, with trial 1 still to come.
  ScriptedPbt pbt(0, 3, -1, 0);
  auto summary = f.Run(MakeSpec(2, 1), backend, pbt);
  REQUIRE(summary.ok());
  CHECK(summary->completed == 2);
  CHECK(backend.max_live == 1);
  // The tuner told the scheduler that a trial waited (trial 1, not yet
  // created) when trial 0 reported.
  REQUIRE(!pbt.waiting.empty());
  CHECK(pbt.waiting.front() == 1);
  // Order of launches: trial 0, trial 1 (whole, while 0 is paused), trial 0
  // again from checkpoint-3: Checkpointing wrote 1..10 at launch, but the
  // tuner recorded its reports only up to step 3, so it continues from the
  // newest checkpoint at or before that, and no step is missing.
  REQUIRE(backend.launches.size() == 3);
  CHECK(backend.launches[0].trial_number == 0);
  CHECK(backend.launches[1].trial_number == 1);
  CHECK(backend.launches[2].trial_number == 0);
  CHECK(backend.launches[2].env.at("TUNE_RESUME_FROM") == (f.TrialDir(0) / "checkpoint-3").string());
  auto exp = f.storage->FindExperiment("ckpt");
  REQUIRE(exp.ok());
  auto records = f.storage->ListTrialRecords(exp->id);
  REQUIRE(records.ok());
  CHECK(records->at(0).trial.attempt == 1);
  CHECK(records->at(0).trial.state == TrialState::kCompleted);
  std::vector<int64_t> steps;
  for (const auto& [step, v] : records->at(0).trial.intermediate) steps.push_back(step);
  CHECK(steps == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
}

}  // namespace
}  // namespace tune
