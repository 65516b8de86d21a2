// Several objectives and constraints in the trackers
// (tracking/final_metrics.h): a completed trial's objective values under
// their metric names and its constraint values, at its last step, in
// TensorBoard event files (read back record by record) and in MLflow (the
// loopback stand-in of tests/tracking/mlflow_fakes.h).
#include <catch2/catch.hpp>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/common/temp_dir.h"
#include "tests/tracking/mlflow_fakes.h"
#include "tracking/final_metrics.h"
#include "tracking/mlflow_sink.h"
#include "tracking/tensorboard_events.h"
#include "tracking/tensorboard_sink.h"

namespace tune::tracking {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const FinalMetricNames kNames = {{"eval_loss", "adapter_mb"}, {"peak_mem_gb", "peak_mem_gb"}};

Trial CompletedTrial() {
  Trial t;
  t.id = 1;
  t.number = 0;
  t.state = TrialState::kCompleted;
  t.value = 0.42;
  t.values = {0.42, 16};
  t.constraints = {-2, 0.5};  // the second one broken by 0.5
  return t;
}

// The records of a TFRecord file (framing as TfRecordWriter writes it).
std::vector<std::string> ReadRecords(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  for (size_t at = 0; at + 12 <= file.size();) {
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(file[at + i]);
    out.push_back(file.substr(at + 12, len));
    at += 16 + len;
  }
  return out;
}

}  // namespace

TEST_CASE("final metrics: each objective under its name, each constraint, feasibility", "[tracking]") {
  const Trial t = CompletedTrial();
  using Pairs = std::vector<std::pair<std::string, double>>;
  CHECK(FinalMetrics(kNames, t) == Pairs{{"eval_loss", 0.42},
                                         {"adapter_mb", 16},
                                         {"tune.constraint.peak_mem_gb", -2},
                                         {"tune.constraint.peak_mem_gb.2", 0.5},
                                         {"tune.feasible", 0}});
  // One objective without constraints: nothing more than the reports.
  CHECK(FinalMetrics({}, t).empty());
  // One objective with a constraint: the constraint only.
  Trial one = t;
  one.values.clear();
  one.constraints = {-1};
  CHECK(FinalMetrics({{}, {"peak_mem_gb"}}, one) == Pairs{{"tune.constraint.peak_mem_gb", -1}, {"tune.feasible", 1}});
  // Not completed, or without its values: nothing; a NaN value left out.
  Trial pruned = t;
  pruned.state = TrialState::kPruned;
  CHECK(FinalMetrics(kNames, pruned).empty());
  Trial missing = t;
  missing.values.clear();
  missing.constraints.clear();
  CHECK(FinalMetrics(kNames, missing).empty());
  Trial nan = t;
  nan.values[1] = std::nan("");
  CHECK(FinalMetrics(kNames, nan).front().first == "eval_loss");
  CHECK(FinalMetrics(kNames, nan)[1].first == "tune.constraint.peak_mem_gb");
}

TEST_CASE("TensorBoardSink: a completed trial's objectives and constraints at its last step", "[tracking]") {
  testing::TempDir dir;
  TensorBoardSink sink(dir.path.string(), kNames);
  Trial t = CompletedTrial();
  t.state = TrialState::kRunning;
  sink.OnAttemptStarted(t, "");
  for (int64_t step : {10, 20}) {
    MetricReport r;
    r.step = step;
    r.time = 1700000000.0 + static_cast<double>(step);
    r.values = {{"eval_loss", 0.5}, {"adapter_mb", 16}, {"peak_mem_gb", 8}};
    sink.OnReport(t, r);
  }
  t.state = TrialState::kCompleted;
  sink.OnTrialFinished(t, 1700000100.0);
  CHECK(sink.Finish().empty());
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(TensorBoardSink::RunDir(dir.path.string(), 0))) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  const std::vector<std::string> records = ReadRecords(files[0]);
  // File version, SessionLog START, session start, 2 x 3 scalars, 5 final
  // values, session end.
  REQUIRE(records.size() == 3 + 6 + 5 + 1);
  const double end = 1700000100.0;
  CHECK(records[9] == ScalarEvent(end, 20, "eval_loss", 0.42));
  CHECK(records[10] == ScalarEvent(end, 20, "adapter_mb", 16));
  CHECK(records[11] == ScalarEvent(end, 20, "tune.constraint.peak_mem_gb", -2));
  CHECK(records[12] == ScalarEvent(end, 20, "tune.constraint.peak_mem_gb.2", 0.5));
  CHECK(records[13] == ScalarEvent(end, 20, "tune.feasible", 0));
  CHECK(records[14] == SessionEndEvent(end, SessionStatus::kSuccess));

  // `tune export tensorboard` writes the same.
  MetricReport last;
  last.step = 20;
  last.time = 1700000020.0;
  last.values = {{"eval_loss", 0.5}};
  const std::string exported = (dir.path / "exported").string();
  REQUIRE(WriteTrialEvents(exported, t, 1700000000.0, {last}, end, kNames).ok());
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(exported)) out.push_back(e.path());
  REQUIRE(out.size() == 1);
  const std::vector<std::string> again = ReadRecords(out[0]);
  REQUIRE(again.size() == 3 + 1 + 5 + 1);
  CHECK(again[4] == ScalarEvent(end, 20, "eval_loss", 0.42));
  CHECK(again[8] == ScalarEvent(end, 20, "tune.feasible", 0));
}

TEST_CASE("MlflowSink: a completed trial's objectives and constraints at its last step", "[tracking][mlflow]") {
  testing::FakeMlflow server;
  testing::TempDir dir;
  auto storage = OpenSqliteStorage(dir.File("t.db"));
  REQUIRE(storage.ok());
  Storage& s = **storage;
  const ExperimentId e = *s.CreateExperiment("exp", "{}", 1);
  Trial t = *s.CreateTrial(e, {{"lr", 0.5}});
  REQUIRE(s.StartTrial(t.id, 0, "local:test").ok());
  MlflowTarget target;
  target.connection.tracking_uri = server.uri();
  target.tune_experiment = "exp";
  target.objective_metric = "eval_loss";
  target.final_metrics = kNames;
  {
    MlflowSink sink(target, &s);
    t.state = TrialState::kRunning;
    sink.OnAttemptStarted(t, dir.File("trial"));
    MetricReport r;
    r.step = 30;
    r.time = 1700000030;
    r.values = {{"eval_loss", 0.5}, {"adapter_mb", 16}, {"peak_mem_gb", 8}};
    REQUIRE(s.AppendReport(t.id, 0, r, 0.5).ok());
    sink.OnReport(t, r);
    const Trial done = CompletedTrial();
    REQUIRE(s.FinishTrialWithValues(t.id, TrialState::kCompleted, 0.42, done.values, done.constraints, std::nullopt,
                                    "")
                .ok());
    t.state = TrialState::kCompleted;
    t.value = done.value;
    t.values = done.values;
    t.constraints = done.constraints;
    sink.OnTrialFinished(t, 1700000100);
    CHECK(sink.Finish().empty());
  }
  // The final values in the trial's run, at step 30 (its last report).
  std::map<std::string, std::vector<std::pair<double, int64_t>>> logged;
  for (const auto& seen : server.seen()) {
    if (seen.path.find("runs/log-batch") == std::string::npos) continue;
    const json b = json::parse(seen.body);
    for (const json& m : b.value("metrics", json::array()))
      logged[m["key"]].emplace_back(m["value"].get<double>(), m["step"].get<int64_t>());
  }
  INFO(json(logged).dump());
  using Points = std::vector<std::pair<double, int64_t>>;
  CHECK(logged["eval_loss"] == Points{{0.5, 30}, {0.42, 30}});  // the report, then the final value
  CHECK(logged["adapter_mb"] == Points{{16, 30}, {16, 30}});
  CHECK(logged["tune.constraint.peak_mem_gb"] == Points{{-2, 30}});
  CHECK(logged["tune.constraint.peak_mem_gb.2"] == Points{{0.5, 30}});
  CHECK(logged["tune.feasible"] == Points{{0, 30}});
}

}  // namespace tune::tracking
