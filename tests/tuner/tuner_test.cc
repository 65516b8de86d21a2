// The Tuner's control loop against a scripted backend and a real SQLite file.
#include "tuner/tuner.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "schedulers/fifo_scheduler.h"
#include "search/random_sampler.h"
#include "tests/common/temp_dir.h"
#include "tests/tuner/fake_backend.h"
#include "tracking/tracking_sink.h"

namespace tune {
namespace {

using testing::Curve;
using testing::FakeBackend;
using testing::Script;

using testing::TempDir;

ExperimentSpec MakeSpec(int max_trials, int concurrent) {
  ExperimentSpec spec;
  spec.name = "unit";
  spec.json = "{}";
  spec.base_dir = ".";
  spec.objective.metric = "loss";
  spec.objective.mode = Mode::kMin;
  spec.parameters["lr"] = FloatDistribution{1e-4, 1e-1, true, std::nullopt};
  spec.parameters["r"] = CategoricalDistribution{{ParamValue(int64_t{4}), ParamValue(int64_t{8})}, false};
  spec.search.seed = 7;
  spec.search.seed_given = true;
  spec.limits.max_trials = max_trials;
  spec.limits.max_concurrent_trials = concurrent;
  spec.trial.command = {"train", "--lr", "${lr}", "--r=${r}", "--dir", "${trial_dir}", "${unknown}"};
  return spec;
}

// The loss of a trial is its learning rate: a smaller lr is better.
Script LrIsLoss(const LaunchSpec& spec) {
  double lr = std::stod(spec.env.at("TUNE_PARAM_LR"));
  return Script{Curve("loss", lr, 3), true, ""};
}

// Stops every trial whose objective exceeds a threshold at step >= 2.
class ThresholdScheduler : public Scheduler {
 public:
  explicit ThresholdScheduler(double threshold) : threshold_(threshold) {}
  Decision OnTrialResult(const Trial&, int64_t step, double objective) override {
    if (step >= 2 && objective > threshold_) return Decision{Action::kStop, step, "above threshold", std::nullopt};
    return Decision::Continue();
  }

 private:
  double threshold_;
};

struct Fixture {
  TempDir dir;
  std::unique_ptr<Storage> storage;
  RandomSampler sampler{1};
  FifoScheduler fifo;
  Fixture() {
    auto s = OpenSqliteStorage((dir.path / "t.db").string());
    REQUIRE(s.ok());
    storage = std::move(s).value();
  }
  TunerOptions Options(bool resume = false) {
    TunerOptions o;
    o.resume = resume;
    o.runs_dir = (dir.path / "runs").string();
    o.tick = std::chrono::milliseconds(0);
    return o;
  }
  Result<RunSummary> Run(const ExperimentSpec& spec, TrialBackend& backend, Scheduler& scheduler,
                         bool resume = false, const std::atomic<bool>* stop = nullptr,
                         tracking::TrackingSink* tracking = nullptr) {
    TunerParts parts{storage.get(), &backend, &sampler, &scheduler, nullptr, tracking};
    Tuner tuner(spec, parts, Options(resume));
    return tuner.Run(stop);
  }
};

// A tracking sink that throws from its `throw_at`-th report, as
// nlohmann::json's dump() did on a trial's invalid UTF-8.
class ThrowingSink : public tracking::TrackingSink {
 public:
  explicit ThrowingSink(int throw_at) : throw_at_(throw_at) {}
  void OnAttemptStarted(const Trial&, const std::string&) override {}
  void OnAttemptRestarted(const Trial&) override {}
  void OnReport(const Trial&, const MetricReport&) override {
    if (++reports_ == throw_at_) throw std::runtime_error("[json.exception.type_error.316] invalid UTF-8 byte");
  }
  void OnTrialFinished(const Trial&, double) override {}
  std::vector<std::string> Finish() override { return {}; }

 private:
  int throw_at_;
  int reports_ = 0;
};

TEST_CASE("runs max_trials trials within the concurrency limit and records them", "[tuner]") {
  Fixture f;
  FakeBackend backend(LrIsLoss);
  auto summary = f.Run(MakeSpec(9, 3), backend, f.fifo);
  REQUIRE(summary.ok());
  CHECK(summary->outcome == RunOutcome::kCompleted);
  CHECK(summary->completed == 9);
  CHECK(backend.launches.size() == 9);
  CHECK(backend.max_live == 3);
  CHECK(backend.shutdown);

  auto exp = f.storage->FindExperiment("unit");
  REQUIRE(exp.ok());
  CHECK(exp->state == ExperimentState::kCompleted);
  auto trials = f.storage->ListTrials(exp->id);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 9);
  double best = 1e9;
  for (const Trial& t : *trials) {
    CHECK(t.state == TrialState::kCompleted);
    REQUIRE(t.value);
    // scope "last": the value is the last report, which equals the lr.
    CHECK(*t.value == Approx(std::get<double>(t.params.at("lr"))));
    best = std::min(best, *t.value);
  }
  CHECK(*summary->best_value == Approx(best));
}

TEST_CASE("the launch spec substitutes placeholders and sets the trial environment", "[tuner]") {
  Fixture f;
  FakeBackend backend(LrIsLoss);
  REQUIRE(f.Run(MakeSpec(1, 1), backend, f.fifo).ok());
  const LaunchSpec& l = backend.launches.at(0);
  REQUIRE(l.argv.size() == 7);
  CHECK(l.argv[2] == l.env.at("TUNE_PARAM_LR"));
  CHECK((l.argv[3] == "--r=4" || l.argv[3] == "--r=8"));
  CHECK(l.argv[5] == l.trial_dir);
  CHECK(std::filesystem::is_directory(l.trial_dir));
  CHECK(l.argv[6] == "${unknown}");
  CHECK(l.env.at("TUNE_TRIAL_ID") == "0");
  CHECK(l.env.at("TUNE_EXPERIMENT") == "unit");
  CHECK(l.env.at("TUNE_PARAMS").find("\"lr\": ") != std::string::npos);
}

TEST_CASE("placeholders and parameter environment names", "[tuner]") {
  CHECK(SubstitutePlaceholders("${a}-${b}${a}", {{"a", "1"}, {"b", "x"}}) == "1-x1");
  CHECK(SubstitutePlaceholders("${", {}) == "${");
  CHECK(SubstitutePlaceholders("$a ${missing}", {{"a", "1"}}) == "$a ${missing}");
  CHECK(ParamEnvName("learning_rate") == "TUNE_PARAM_LEARNING_RATE");
  CHECK(ParamEnvName("lora.r-x") == "TUNE_PARAM_LORA_R_X");
}

TEST_CASE("failed attempts are retried, then the experiment fails at max_failed_trials", "[tuner]") {
  Fixture f;
  FakeBackend backend([](const LaunchSpec&) { return Script{Curve("loss", 1.0, 1), false, "exit code 3"}; });
  ExperimentSpec spec = MakeSpec(10, 1);
  spec.trial.max_retries = 1;
  spec.limits.max_failed_trials = 2;
  auto summary = f.Run(spec, backend, f.fifo);
  REQUIRE(summary.ok());
  CHECK(summary->outcome == RunOutcome::kFailed);
  CHECK(summary->failed == 2);
  // Two trials, two attempts each.
  REQUIRE(backend.launches.size() == 4);
  CHECK(backend.launches[0].trial_id == backend.launches[1].trial_id);
  CHECK(backend.launches[1].attempt == 1);
  auto exp = f.storage->FindExperiment("unit");
  CHECK(exp->state == ExperimentState::kFailed);
}

TEST_CASE("a trial that never reports the objective is failed, not completed", "[tuner]") {
  Fixture f;
  // The first trial prints another name (a case slip), the second nothing.
  FakeBackend backend([](const LaunchSpec& spec) {
    return Script{spec.trial_number == 0 ? Curve("Loss", 1.0, 2) : std::vector<MetricReport>{}, true, ""};
  });
  auto summary = f.Run(MakeSpec(2, 1), backend, f.fifo);
  REQUIRE(summary.ok());
  CHECK(summary->failed == 2);
  CHECK(summary->completed == 0);
  // Nothing was learned: the experiment failed (exit 1), not completed.
  CHECK(summary->outcome == RunOutcome::kFailed);
  CHECK(summary->message == "max_trials reached, but every trial failed (2)");
  // The message says what the trial did print.
  auto exp = f.storage->FindExperiment("unit");
  REQUIRE(exp.ok());
  CHECK(exp->state == ExperimentState::kFailed);
  auto records = f.storage->ListTrialRecords(exp->id);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 2);
  CHECK((*records)[0].message == "exited 0 but never reported the objective metric 'loss'; it reported only Loss, step");
  CHECK((*records)[1].message ==
        "exited 0 but never reported the objective metric 'loss'; it printed no name=number line");
}

TEST_CASE("a scheduler's stop kills the attempt and records it pruned at its rung", "[tuner]") {
  Fixture f;
  FakeBackend backend(LrIsLoss);
  ThresholdScheduler scheduler(0.01 + 0.1);  // stops trials whose loss at step 2 is above 0.11
  auto summary = f.Run(MakeSpec(12, 2), backend, scheduler);
  REQUIRE(summary.ok());
  CHECK(summary->pruned > 0);
  CHECK(summary->pruned + summary->completed == 12);
  CHECK(static_cast<int>(backend.killed.size()) == summary->pruned);
  auto exp = f.storage->FindExperiment("unit");
  auto records = f.storage->ListTrialRecords(exp->id);
  REQUIRE(records.ok());
  for (const TrialRecord& r : *records) {
    if (r.trial.state != TrialState::kPruned) continue;
    CHECK(r.pruned_rung == 2);
    CHECK(r.trial.intermediate.size() == 2);
  }
}

TEST_CASE("the goal ends the experiment once a completed trial reaches it", "[tuner]") {
  Fixture f;
  FakeBackend backend(LrIsLoss);
  ExperimentSpec spec = MakeSpec(200, 1);
  spec.objective.goal = 0.002;
  auto summary = f.Run(spec, backend, f.fifo);
  REQUIRE(summary.ok());
  CHECK(summary->message == "goal reached");
  REQUIRE(summary->best_value);
  CHECK(*summary->best_value <= 0.002);
  CHECK(summary->completed < 200);
}

TEST_CASE("an interrupted run resumes without repeating finished trials", "[tuner]") {
  Fixture f;
  std::atomic<bool> stop{false};
  int launched = 0;
  // The 5th launch asks the tuner to stop while trials are still running.
  FakeBackend first([&](const LaunchSpec& spec) {
    if (++launched == 5) stop = true;
    return LrIsLoss(spec);
  });
  ExperimentSpec spec = MakeSpec(8, 2);
  auto s1 = f.Run(spec, first, f.fifo, false, &stop);
  REQUIRE(s1.ok());
  CHECK(s1->outcome == RunOutcome::kInterrupted);
  auto exp = f.storage->FindExperiment("unit");
  CHECK(exp->state == ExperimentState::kStopped);
  auto before = f.storage->ListTrials(exp->id);
  REQUIRE(before.ok());
  std::set<int> finished;
  for (const Trial& t : *before)
    if (t.state == TrialState::kCompleted) finished.insert(t.number);
  CHECK(!finished.empty());

  SECTION("without --resume the existing experiment is refused") {
    FakeBackend again(LrIsLoss);
    auto s = f.Run(spec, again, f.fifo, false);
    CHECK(!s.ok());
    CHECK(s.status().message().find("--resume") != std::string::npos);
  }
  SECTION("--resume runs only what is left") {
    FakeBackend second(LrIsLoss);
    auto s2 = f.Run(spec, second, f.fifo, true);
    REQUIRE(s2.ok());
    CHECK(s2->outcome == RunOutcome::kCompleted);
    CHECK(s2->completed == 8);
    for (const LaunchSpec& l : second.launches) CHECK(finished.count(l.trial_number) == 0);
    CHECK(static_cast<int>(second.launches.size()) == 8 - static_cast<int>(finished.size()));
    auto after = f.storage->ListTrials(exp->id);
    REQUIRE(after->size() == 8);
    // Parameters of trials created before the interruption are unchanged.
    for (const Trial& t : *before) CHECK(after->at(static_cast<size_t>(t.number)).params == t.params);
  }
}

TEST_CASE("the same seed gives the same parameters", "[tuner]") {
  Fixture a, b;
  FakeBackend ba(LrIsLoss), bb(LrIsLoss);
  REQUIRE(a.Run(MakeSpec(5, 2), ba, a.fifo).ok());
  REQUIRE(b.Run(MakeSpec(5, 2), bb, b.fifo).ok());
  for (size_t i = 0; i < 5; ++i) CHECK(ba.launches[i].env.at("TUNE_PARAMS") == bb.launches[i].env.at("TUNE_PARAMS"));
}

TEST_CASE("points_to_evaluate are the first trials and the rest are sampled as without them", "[tuner]") {
  Fixture with, without;
  ExperimentSpec spec = MakeSpec(5, 2);
  spec.search.points_to_evaluate = {{{"lr", 0.05}, {"r", int64_t{8}}}, {{"lr", 0.002}}};
  FakeBackend a(LrIsLoss), b(LrIsLoss);
  REQUIRE(with.Run(spec, a, with.fifo).ok());
  REQUIRE(without.Run(MakeSpec(5, 2), b, without.fifo).ok());
  auto params = [](Fixture& f) {
    auto exp = f.storage->FindExperiment("unit");
    REQUIRE(exp.ok());
    auto trials = f.storage->ListTrials(exp->id);
    REQUIRE(trials.ok());
    std::vector<ParamMap> out;
    for (const Trial& t : *trials) out.push_back(t.params);
    return out;
  };
  const std::vector<ParamMap> p = params(with), q = params(without);
  REQUIRE(p.size() == 5);
  REQUIRE(q.size() == 5);
  CHECK(p[0] == ParamMap{{"lr", 0.05}, {"r", int64_t{8}}});
  // A partial point: its value, and the sampler's for the parameter it leaves out.
  CHECK(std::get<double>(p[1].at("lr")) == 0.002);
  CHECK(p[1].at("r") == q[1].at("r"));
  // Later trials draw what they would have drawn without the points.
  for (size_t i = 2; i < 5; ++i) CHECK(p[i] == q[i]);
  // And they ran with those values.
  CHECK(a.launches.size() == 5);
  for (const LaunchSpec& l : a.launches)
    if (l.trial_number == 0) CHECK(l.env.at("TUNE_PARAM_LR") == "0.05");
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

TEST_CASE("an exception from a part stops the run with one error and leaves the experiment for --resume",
          "[tuner]") {
  Fixture f;
  FakeBackend first(LrIsLoss);
  ThrowingSink sink(7);  // mid-way: some trials done, two running
  ExperimentSpec spec = MakeSpec(6, 2);
  auto s1 = f.Run(spec, first, f.fifo, false, nullptr, &sink);
  REQUIRE(!s1.ok());
  CHECK(s1.status().code() == StatusCode::kInternal);
  CHECK(s1.status().message() ==
        "stopped by an unexpected error: std::runtime_error: [json.exception.type_error.316] invalid UTF-8 byte");
  CHECK(first.shutdown);
  CHECK(!first.killed.empty());  // the running trials were stopped

  auto exp = f.storage->FindExperiment("unit");
  REQUIRE(exp.ok());
  CHECK(exp->state == ExperimentState::kStopped);
  CHECK(exp->message.find("continue with tune run --resume") != std::string::npos);
  auto before = f.storage->ListTrialRecords(exp->id);
  REQUIRE(before.ok());
  int pending = 0;
  for (const TrialRecord& r : *before) {
    CHECK(r.trial.state != TrialState::kRunning);
    if (r.trial.state == TrialState::kPending) {
      ++pending;
      CHECK(r.message.rfind("interrupted: tune run stopped on an error (", 0) == 0);
    }
  }
  CHECK(pending == static_cast<int>(first.killed.size()));

  FakeBackend second(LrIsLoss);
  auto s2 = f.Run(spec, second, f.fifo, true);
  REQUIRE(s2.ok());
  CHECK(s2->outcome == RunOutcome::kCompleted);
  CHECK(s2->completed == 6);
}

TEST_CASE("a trial's message is stored as one line whatever its output held", "[tuner]") {
  Fixture f;
  // Metric names of JSON lines may hold any character; a backend's message
  // may quote any output.
  FakeBackend backend([](const LaunchSpec& spec) {
    MetricReport r;
    r.step = 1;
    r.values["nl\nkey"] = 1;
    r.values[std::string("nul\0key", 7)] = 2;
    r.values["esc\x1b[2J"] = 3;
    if (spec.trial_number == 0) return Script{{r}, true, ""};
    return Script{{r}, false, "rank 0 exited with code 3: \"line one\nline two\r\x1b[31m\""};
  });
  auto summary = f.Run(MakeSpec(2, 1), backend, f.fifo);
  REQUIRE(summary.ok());
  auto exp = f.storage->FindExperiment("unit");
  REQUIRE(exp.ok());
  auto records = f.storage->ListTrialRecords(exp->id);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 2);
  CHECK((*records)[0].message ==
        std::string("exited 0 but never reported the objective metric 'loss'; it reported only esc [2J, nl key, nul key"));
  CHECK((*records)[1].message == "rank 0 exited with code 3: \"line one line two  [31m\"");
}

}  // namespace
}  // namespace tune
