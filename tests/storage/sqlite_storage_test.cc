// SqliteStorage on real files: experiments, the trial lifecycle, retries,
// immutability, and everything read back after reopening (resume).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/storage.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

using testing::TempDir;

std::unique_ptr<Storage> Open(const std::string& path) {
  auto s = OpenSqliteStorage(path);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(s).value();
}

MetricReport Report(int64_t step, std::map<std::string, double> values, double time = 0) {
  MetricReport r;
  r.step = step;
  r.values = std::move(values);
  r.time = time;
  return r;
}

TEST_CASE("experiments are created, found, listed and change state", "[storage]") {
  TempDir dir;
  auto db = Open(dir.File("tune.db"));

  auto a = db->CreateExperiment("alpha", R"({"name": "alpha"})", 7);
  REQUIRE(a.ok());
  auto b = db->CreateExperiment("beta", "{}", std::numeric_limits<uint64_t>::max());
  REQUIRE(b.ok());
  CHECK(*a != *b);

  auto dup = db->CreateExperiment("alpha", "{}", 1);
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.status().code() == StatusCode::kFailedPrecondition);
  CHECK(dup.status().message().find("alpha") != std::string::npos);
  CHECK(db->CreateExperiment("", "{}", 1).status().IsInvalidArgument());

  auto found = db->FindExperiment("beta");
  REQUIRE(found.ok());
  CHECK(found->id == *b);
  CHECK(found->spec_json == "{}");
  CHECK(found->seed == std::numeric_limits<uint64_t>::max());  // all 64 bits
  CHECK(found->state == ExperimentState::kRunning);
  CHECK_FALSE(found->ended_at.has_value());
  CHECK(found->created_at > 1.6e9);
  CHECK(db->FindExperiment("gamma").status().IsNotFound());

  auto list = db->ListExperiments();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  CHECK((*list)[0].name == "alpha");
  CHECK((*list)[0].seed == 7);
  CHECK((*list)[1].name == "beta");

  REQUIRE(db->SetExperimentState(*a, ExperimentState::kFailed, "3 trials failed").ok());
  auto failed = db->FindExperiment("alpha");
  CHECK(failed->state == ExperimentState::kFailed);
  CHECK(failed->message == "3 trials failed");
  REQUIRE(failed->ended_at.has_value());
  CHECK(*failed->ended_at >= failed->created_at);
  // --resume puts it back to running.
  REQUIRE(db->SetExperimentState(*a, ExperimentState::kRunning, "").ok());
  CHECK_FALSE(db->FindExperiment("alpha")->ended_at.has_value());
  CHECK(db->SetExperimentState(12345, ExperimentState::kStopped, "").IsNotFound());
}

TEST_CASE("a trial goes pending, running, completed with its reports", "[storage]") {
  TempDir dir;
  auto db = Open(dir.File("tune.db"));
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);

  auto t0 = db->CreateTrial(e, {{"lr", 0.01}, {"r", int64_t{8}}});
  auto t1 = db->CreateTrial(e, {{"lr", 0.02}, {"r", int64_t{16}}});
  REQUIRE(t0.ok());
  REQUIRE(t1.ok());
  CHECK(t0->number == 0);
  CHECK(t1->number == 1);
  CHECK(t0->state == TrialState::kPending);
  CHECK(db->CreateTrial(999, {}).status().IsNotFound());

  REQUIRE(db->StartTrial(t0->id, 0, "local:pid 42").ok());
  CHECK(db->StartTrial(t0->id, 0, "again").code() == StatusCode::kFailedPrecondition);
  REQUIRE(db->AppendReport(t0->id, 0, Report(10, {{"loss", 2.0}, {"acc", 0.5}}, 1000.5), 2.0).ok());
  REQUIRE(db->AppendReport(t0->id, 0, Report(20, {{"acc", 0.6}}), std::nullopt).ok());
  REQUIRE(db->AppendReport(t0->id, 0, Report(30, {{"loss", 1.5}}), 1.5).ok());
  // Reports to a pending trial are refused.
  CHECK(db->AppendReport(t1->id, 0, Report(1, {{"loss", 1}}), 1.0).code() ==
        StatusCode::kFailedPrecondition);

  auto running = db->ListTrials(e);
  REQUIRE(running.ok());
  REQUIRE(running->size() == 2);
  const Trial& r0 = (*running)[0];
  CHECK(r0.state == TrialState::kRunning);
  CHECK(r0.intermediate == std::map<int64_t, double>{{10, 2.0}, {30, 1.5}});
  CHECK(r0.value == 1.5);  // latest while running
  CHECK((*running)[1].intermediate.empty());

  REQUIRE(db->FinishTrial(t0->id, TrialState::kCompleted, 1.75, std::nullopt, "completed").ok());
  CHECK(db->FinishTrial(t1->id, TrialState::kRunning, 1.0, std::nullopt, "").IsInvalidArgument());

  auto records = db->ListTrialRecords(e);
  REQUIRE(records.ok());
  const TrialRecord& rec = (*records)[0];
  CHECK(rec.trial.state == TrialState::kCompleted);
  CHECK(rec.trial.value == 1.75);  // the value given (scope applied), not the latest
  CHECK(rec.last_step == 30);
  CHECK(rec.location == "local:pid 42");
  CHECK(rec.message == "completed");
  REQUIRE(rec.started_at.has_value());
  REQUIRE(rec.ended_at.has_value());
  CHECK(*rec.ended_at >= *rec.started_at);
  CHECK_FALSE(rec.pruned_rung.has_value());
  CHECK_FALSE((*records)[1].started_at.has_value());
  CHECK(rec.trial.intermediate == std::map<int64_t, double>{{10, 2.0}, {30, 1.5}});

  // Summaries: the same records, without the intermediate reports.
  auto summaries = db->ListTrialSummaries(e);
  REQUIRE(summaries.ok());
  REQUIRE(summaries->size() == records->size());
  for (size_t i = 0; i < records->size(); ++i) {
    const TrialRecord& a = (*records)[i];
    const TrialRecord& b = (*summaries)[i];
    CHECK(b.trial.intermediate.empty());
    CHECK(b.trial.id == a.trial.id);
    CHECK(b.trial.number == a.trial.number);
    CHECK(b.trial.state == a.trial.state);
    CHECK(b.trial.value == a.trial.value);
    CHECK(b.trial.params == a.trial.params);
    CHECK(b.last_step == a.last_step);
    CHECK(b.location == a.location);
    CHECK(b.message == a.message);
    CHECK(b.started_at == a.started_at);
  }
  CHECK(db->ListTrialSummaries(e + 1000).status().IsNotFound());

  auto reports = db->ListTrialReports(t0->id);
  REQUIRE(reports.ok());
  REQUIRE(reports->size() == 3);
  CHECK((*reports)[0].report.step == 10);
  CHECK((*reports)[0].report.time == 1000.5);
  CHECK((*reports)[0].report.values == std::map<std::string, double>{{"acc", 0.5}, {"loss", 2.0}});
  CHECK((*reports)[1].report.time > 1.6e9);  // 0 means "now"
  CHECK((*reports)[0].seq < (*reports)[1].seq);
  CHECK((*reports)[1].seq < (*reports)[2].seq);
  CHECK(db->ListTrialReports(777).status().IsNotFound());
  CHECK(db->ListTrials(777).status().IsNotFound());

  // Pruned with the rung it was stopped at; no value given keeps the latest.
  REQUIRE(db->StartTrial(t1->id, 0, "local").ok());
  REQUIRE(db->AppendReport(t1->id, 0, Report(4, {{"loss", 3.0}}), 3.0).ok());
  REQUIRE(db->FinishTrial(t1->id, TrialState::kPruned, std::nullopt, 4, "below the rung").ok());
  auto pruned = (*db->ListTrialRecords(e))[1];
  CHECK(pruned.trial.state == TrialState::kPruned);
  CHECK(pruned.pruned_rung == 4);
  CHECK(pruned.trial.value == 3.0);
}

TEST_CASE("TallyTrials counts states and finds the best finite completed value, lower number on ties", "[storage]") {
  TempDir dir;
  auto db = Open(dir.File("tune.db"));
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // number: state, value
  const std::vector<std::pair<TrialState, double>> plan = {
      {TrialState::kCompleted, 2.0},  {TrialState::kCompleted, 1.0}, {TrialState::kCompleted, 1.0},
      {TrialState::kCompleted, -inf}, {TrialState::kCompleted, nan}, {TrialState::kPruned, 0.5},
      {TrialState::kCompleted, inf},  {TrialState::kFailed, 0.1}};
  for (const auto& [state, value] : plan) {
    Trial t = *db->CreateTrial(e, {});
    REQUIRE(db->StartTrial(t.id, 0, "local").ok());
    REQUIRE(db->FinishTrial(t.id, state, value, std::nullopt, "").ok());
  }
  REQUIRE(db->CreateTrial(e, {}).ok());  // pending
  auto min = db->TallyTrials(e, false);
  REQUIRE(min.ok());
  CHECK(min->total == 9);
  CHECK(min->counts == std::map<TrialState, int>{{TrialState::kCompleted, 6},
                                                  {TrialState::kPruned, 1},
                                                  {TrialState::kFailed, 1},
                                                  {TrialState::kPending, 1}});
  REQUIRE(min->best.has_value());
  CHECK(*min->best == std::make_pair(1, 1.0));  // not -inf, and trial 1 before trial 2
  auto max = db->TallyTrials(e, true);
  REQUIRE(max.ok());
  REQUIRE(max->best.has_value());
  CHECK(*max->best == std::make_pair(0, 2.0));  // not +inf
  ExperimentId empty = *db->CreateExperiment("empty", "{}", 1);
  auto none = db->TallyTrials(empty, false);
  REQUIRE(none.ok());
  CHECK(none->total == 0);
  CHECK(none->counts.empty());
  CHECK_FALSE(none->best.has_value());
  CHECK(db->TallyTrials(empty + 1000, false).status().IsNotFound());
}

TEST_CASE("finished trials are immutable", "[storage]") {
  TempDir dir;
  auto db = Open(dir.File("tune.db"));
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  for (TrialState end : {TrialState::kCompleted, TrialState::kPruned, TrialState::kFailed,
                         TrialState::kStopped}) {
    DYNAMIC_SECTION(TrialStateName(end)) {
      Trial t = *db->CreateTrial(e, {{"x", 1.0}});
      REQUIRE(db->StartTrial(t.id, 0, "local").ok());
      REQUIRE(db->AppendReport(t.id, 0, Report(1, {{"loss", 1.0}}), 1.0).ok());
      REQUIRE(db->FinishTrial(t.id, end, 1.0, std::nullopt, "done").ok());
      auto before = (*db->ListTrialRecords(e))[0];

      Status again = db->FinishTrial(t.id, TrialState::kCompleted, 0.5, std::nullopt, "x");
      CHECK(again.code() == StatusCode::kFailedPrecondition);
      CHECK(again.message().find("immutable") != std::string::npos);
      CHECK(db->AppendReport(t.id, 0, Report(2, {{"loss", 0.1}}), 0.1).code() ==
            StatusCode::kFailedPrecondition);
      CHECK(db->StartTrial(t.id, 1, "local").code() == StatusCode::kFailedPrecondition);
      CHECK(db->RetryTrial(t.id, "x").code() == StatusCode::kFailedPrecondition);

      auto after = (*db->ListTrialRecords(e))[0];
      CHECK(after.trial.state == end);
      CHECK(after.trial.value == before.trial.value);
      CHECK(after.trial.intermediate == before.trial.intermediate);
      CHECK(after.message == "done");
      CHECK(after.ended_at == before.ended_at);
      CHECK(db->ListTrialReports(t.id)->size() == 1);
    }
  }
}

TEST_CASE("a retried trial starts a new attempt with a fresh learning curve", "[storage]") {
  TempDir dir;
  auto db = Open(dir.File("tune.db"));
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  Trial t = *db->CreateTrial(e, {{"x", 1.0}});
  REQUIRE(db->StartTrial(t.id, 0, "local:pid 1").ok());
  REQUIRE(db->AppendReport(t.id, 0, Report(1, {{"loss", 5.0}}), 5.0).ok());
  REQUIRE(db->AppendReport(t.id, 0, Report(2, {{"loss", 4.0}}), 4.0).ok());
  CHECK(db->RetryTrial(999, "x").IsNotFound());
  REQUIRE(db->RetryTrial(t.id, "exit status 1").ok());
  CHECK(db->RetryTrial(t.id, "twice").code() == StatusCode::kFailedPrecondition);

  auto pending = (*db->ListTrialRecords(e))[0];
  CHECK(pending.trial.state == TrialState::kPending);
  CHECK(pending.trial.intermediate.empty());
  CHECK_FALSE(pending.trial.value.has_value());
  CHECK_FALSE(pending.last_step.has_value());
  CHECK(pending.message == "exit status 1");
  CHECK(pending.trial.attempt == 0);
  CHECK(db->ListReports(e)->empty());
  SQLite::Database raw(dir.File("tune.db"), SQLite::OPEN_READONLY);
  const char* kCurrent = "SELECT count(*) FROM observation_logs WHERE is_current";
  CHECK(raw.execAndGet(kCurrent).getInt() == 0);
  CHECK(raw.execAndGet("SELECT count(*) FROM observation_logs").getInt() == 2);

  // The failed attempt's number cannot be reused.
  CHECK(db->StartTrial(t.id, 0, "local").code() == StatusCode::kFailedPrecondition);
  REQUIRE(db->StartTrial(t.id, 1, "local:pid 2").ok());
  Status stale = db->AppendReport(t.id, 0, Report(3, {{"loss", 3.0}}), 3.0);
  CHECK(stale.code() == StatusCode::kFailedPrecondition);
  REQUIRE(db->AppendReport(t.id, 1, Report(1, {{"loss", 4.5}}), 4.5).ok());

  auto running = (*db->ListTrialRecords(e))[0];
  CHECK(running.trial.attempt == 1);
  CHECK(running.trial.intermediate == std::map<int64_t, double>{{1, 4.5}});
  CHECK(running.location == "local:pid 2");
  CHECK(raw.execAndGet(kCurrent).getInt() == 1);
  auto current = *db->ListReports(e);
  REQUIRE(current.size() == 1);
  CHECK(current[0].attempt == 1);
  // Every attempt's reports are kept.
  auto all = *db->ListTrialReports(t.id);
  REQUIRE(all.size() == 3);
  CHECK(all[0].attempt == 0);
  CHECK(all[2].attempt == 1);
}

TEST_CASE("an excluded report is kept and marked but counts nowhere", "[storage]") {
  TempDir dir;
  auto db = Open(dir.File("tune.db"));
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  Trial t = *db->CreateTrial(e, {});
  REQUIRE(db->StartTrial(t.id, 0, "local").ok());
  REQUIRE(db->AppendReport(t.id, 0, Report(10, {{"loss", 2.0}}), 2.0).ok());
  REQUIRE(db->AppendExcludedReport(t.id, 0, Report(12, {{"loss", 0.5}}), 0.5, "after max_t").ok());

  auto rec = (*db->ListTrialRecords(e))[0];
  CHECK(rec.trial.intermediate == std::map<int64_t, double>{{10, 2.0}});
  CHECK(rec.trial.value == 2.0);
  CHECK(rec.last_step == 10);
  auto counted = *db->ListReports(e);
  REQUIRE(counted.size() == 1);
  CHECK(counted[0].report.step == 10);
  auto all = *db->ListTrialReports(t.id);
  REQUIRE(all.size() == 2);
  CHECK(all[1].excluded == "after max_t");
  CHECK(all[1].report.values.at("loss") == 0.5);
  SQLite::Database raw(dir.File("tune.db"), SQLite::OPEN_READONLY);
  CHECK(raw.execAndGet("SELECT excluded FROM observation_logs WHERE step = 12").getString() == "after max_t");
  CHECK(raw.execAndGet("SELECT count(*) FROM observation_logs WHERE excluded IS NULL").getInt() == 1);
  // A finished trial takes no reports, excluded or not.
  REQUIRE(db->FinishTrial(t.id, TrialState::kCompleted, 2.0, std::nullopt, "reached max_t").ok());
  CHECK(db->AppendExcludedReport(t.id, 0, Report(13, {{"loss", 0.4}}), 0.4, "after max_t").code() ==
        StatusCode::kFailedPrecondition);
}

TEST_CASE("a restarted attempt's earlier reports become excluded, the later ones count", "[storage]") {
  TempDir dir;
  auto db = Open(dir.File("tune.db"));
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  Trial t = *db->CreateTrial(e, {});
  REQUIRE(db->StartTrial(t.id, 0, "k8s").ok());
  REQUIRE(db->AppendReport(t.id, 0, Report(1, {{"loss", 91}}), 91).ok());
  REQUIRE(db->AppendReport(t.id, 0, Report(3, {{"loss", 93}}), 93).ok());
  CHECK(db->ExcludeAttemptReports(t.id, 1, "replaced pod").code() == StatusCode::kFailedPrecondition);
  REQUIRE(db->ExcludeAttemptReports(t.id, 0, "replaced pod").ok());
  auto rec = (*db->ListTrialRecords(e))[0];
  CHECK(rec.trial.intermediate.empty());
  CHECK_FALSE(rec.trial.value.has_value());
  CHECK_FALSE(rec.last_step.has_value());
  CHECK(db->ListReports(e)->empty());
  REQUIRE(db->AppendReport(t.id, 0, Report(1, {{"loss", 0.5}}), 0.5).ok());
  rec = (*db->ListTrialRecords(e))[0];
  CHECK(rec.trial.intermediate == std::map<int64_t, double>{{1, 0.5}});
  CHECK(rec.trial.value == 0.5);
  CHECK(rec.last_step == 1);
  auto all = *db->ListTrialReports(t.id);
  REQUIRE(all.size() == 3);
  CHECK(all[0].excluded == "replaced pod");
  CHECK(all[1].excluded == "replaced pod");
  CHECK(all[1].report.values.at("loss") == 93);
  CHECK(all[2].excluded.empty());
  REQUIRE(db->FinishTrial(t.id, TrialState::kCompleted, 0.5, std::nullopt, "completed").ok());
  CHECK(db->ExcludeAttemptReports(t.id, 0, "replaced pod").code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("a database file deleted or replaced while open fails the next write", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("tune.db");
  auto db = Open(path);
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  SECTION("deleted") {
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
  }
  SECTION("its directory deleted") {
    std::filesystem::remove_all(dir.File(""));
  }
  SECTION("replaced by another file") {
    std::filesystem::rename(path, path + ".moved");
    std::ofstream(path) << "";
  }
  auto t = db->CreateTrial(e, {});
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == StatusCode::kInternal);
  CHECK(t.status().message() == path + ": the database file was deleted or replaced while tune was using it; "
                                       "stopping, since nothing written to it from now on could be kept");
}

TEST_CASE("NaN metric values are kept as NaN, not dropped", "[storage]") {
  TempDir dir;
  auto db = Open(dir.File("tune.db"));
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  Trial t = *db->CreateTrial(e, {});
  REQUIRE(db->StartTrial(t.id, 0, "local").ok());
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  REQUIRE(db->AppendReport(t.id, 0, Report(1, {{"loss", nan}, {"grad", inf}}), std::nullopt).ok());
  auto reports = *db->ListTrialReports(t.id);
  REQUIRE(reports.size() == 1);
  CHECK(std::isnan(reports[0].report.values.at("loss")));
  CHECK(reports[0].report.values.at("grad") == inf);
}

void CheckSameRecords(const std::vector<TrialRecord>& a, const std::vector<TrialRecord>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("trial " << i);
    CHECK(a[i].trial.id == b[i].trial.id);
    CHECK(a[i].trial.number == b[i].trial.number);
    CHECK(a[i].trial.state == b[i].trial.state);
    CHECK(a[i].trial.params == b[i].trial.params);
    CHECK(a[i].trial.intermediate == b[i].trial.intermediate);
    CHECK(a[i].trial.value == b[i].trial.value);
    CHECK(a[i].trial.attempt == b[i].trial.attempt);
    CHECK(a[i].started_at == b[i].started_at);
    CHECK(a[i].ended_at == b[i].ended_at);
    CHECK(a[i].last_step == b[i].last_step);
    CHECK(a[i].pruned_rung == b[i].pruned_rung);
    CHECK(a[i].location == b[i].location);
    CHECK(a[i].message == b[i].message);
  }
}

TEST_CASE("everything reads back the same after reopening (resume)", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("resume.db");
  std::vector<TrialRecord> records;
  std::vector<StoredReport> reports;
  ExperimentRecord experiment;
  {
    auto db = Open(path);
    ExperimentId e = *db->CreateExperiment("lora", R"({"objective": {"metric": "eval_loss"}})", 42);
    // One trial in each state, the failed one after a retry.
    const TrialState ends[] = {TrialState::kCompleted, TrialState::kPruned, TrialState::kFailed,
                               TrialState::kStopped, TrialState::kRunning, TrialState::kPending};
    int64_t i = 0;
    for (TrialState end : ends) {
      Trial t = *db->CreateTrial(e, {{"lr", 1e-3 * static_cast<double>(i + 1)},
                                     {"lora_r", int64_t{4} << i},
                                     {"opt", std::string(i % 2 ? "adamw" : "sgd")},
                                     {"rslora", i % 2 == 0}});
      ++i;
      if (end == TrialState::kPending) continue;
      int attempt = 0;
      REQUIRE(db->StartTrial(t.id, attempt, "local:pid " + std::to_string(i)).ok());
      if (end == TrialState::kFailed) {
        REQUIRE(db->AppendReport(t.id, 0, Report(1, {{"eval_loss", 9.0}}), 9.0).ok());
        REQUIRE(db->RetryTrial(t.id, "exit status 1").ok());
        REQUIRE(db->StartTrial(t.id, ++attempt, "local:pid 99").ok());
      }
      for (int64_t step = 10; step <= 50; step += 10) {
        double v = 3.0 - 0.1 * static_cast<double>(step) / 10 - 0.01 * static_cast<double>(i);
        REQUIRE(db->AppendReport(t.id, attempt, Report(step, {{"eval_loss", v}, {"train_loss", v + 0.5}}), v).ok());
      }
      if (end != TrialState::kRunning) {
        std::optional<int64_t> rung;
        if (end == TrialState::kPruned) rung = 50;
        REQUIRE(db->FinishTrial(t.id, end, 2.0 + 0.1 * static_cast<double>(i), rung,
                                std::string("ended ") + TrialStateName(end)).ok());
      }
    }
    REQUIRE(db->SetExperimentState(e, ExperimentState::kStopped, "interrupted").ok());
    records = *db->ListTrialRecords(e);
    reports = *db->ListReports(e);
    experiment = *db->FindExperiment("lora");
  }
  auto db = Open(path);
  auto again = db->FindExperiment("lora");
  REQUIRE(again.ok());
  CHECK(again->id == experiment.id);
  CHECK(again->spec_json == experiment.spec_json);
  CHECK(again->seed == 42);
  CHECK(again->state == ExperimentState::kStopped);
  CHECK(again->message == "interrupted");
  CHECK(again->created_at == experiment.created_at);
  CHECK(again->ended_at == experiment.ended_at);

  auto records2 = db->ListTrialRecords(experiment.id);
  REQUIRE(records2.ok());
  CheckSameRecords(records, *records2);
  REQUIRE(records.size() == 6);
  CHECK(records[2].trial.attempt == 1);
  CHECK(records[4].trial.state == TrialState::kRunning);
  CHECK(records[4].trial.intermediate.size() == 5);

  auto history = db->ListTrials(experiment.id);
  REQUIRE(history.ok());
  REQUIRE(history->size() == records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    CHECK((*history)[i].intermediate == records[i].trial.intermediate);
    CHECK((*history)[i].params == records[i].trial.params);
  }

  auto reports2 = db->ListReports(experiment.id);
  REQUIRE(reports2.ok());
  REQUIRE(reports2->size() == reports.size());
  CHECK(reports.size() == 25);  // 5 trials x 5 reports; the failed attempt left out
  for (size_t i = 0; i < reports.size(); ++i) {
    CHECK((*reports2)[i].seq == reports[i].seq);
    CHECK((*reports2)[i].trial_id == reports[i].trial_id);
    CHECK((*reports2)[i].attempt == reports[i].attempt);
    CHECK((*reports2)[i].report.step == reports[i].report.step);
    CHECK((*reports2)[i].report.values == reports[i].report.values);
    CHECK((*reports2)[i].report.time == reports[i].report.time);
    if (i > 0) CHECK((*reports2)[i].seq > (*reports2)[i - 1].seq);
  }

  // The reopened database continues where it stopped.
  auto next = db->CreateTrial(experiment.id, {});
  REQUIRE(next.ok());
  CHECK(next->number == 6);
}

TEST_CASE("non-finite float parameters are refused", "[storage]") {
  TempDir dir;
  auto db = Open(dir.File("tune.db"));
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  auto bad = db->CreateTrial(e, {{"lr", std::numeric_limits<double>::infinity()}});
  CHECK(bad.status().IsInvalidArgument());
  CHECK(db->ListTrials(e)->empty());
}

}  // namespace
TEST_CASE("tracking runs are kept per experiment and target, replaced when set again", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("t.db");
  const std::string a = "mlflow http://127.0.0.1:5000 experiment 1";
  const std::string b = "mlflow http://127.0.0.1:6000 experiment 1";
  ExperimentId e = 0, other = 0;
  {
    auto db = Open(path);
    e = *db->CreateExperiment("e", "{}", 1);
    other = *db->CreateExperiment("other", "{}", 1);
    REQUIRE(db->SetTrackingRun(e, a, -1, "parent").ok());
    REQUIRE(db->SetTrackingRun(e, a, 0, "first").ok());
    REQUIRE(db->SetTrackingRun(e, a, 0, "second").ok());
    REQUIRE(db->SetTrackingRun(e, b, 0, "elsewhere").ok());
    REQUIRE(db->SetTrackingRun(other, a, 0, "other's").ok());
    CHECK(db->SetTrackingRun(999, a, 0, "x").code() == StatusCode::kNotFound);
  }
  auto db = Open(path);  // read back after reopening, as --resume does
  CHECK(*db->ListTrackingRuns(e, a) == std::map<int, std::string>{{-1, "parent"}, {0, "second"}});
  CHECK(*db->ListTrackingRuns(e, b) == std::map<int, std::string>{{0, "elsewhere"}});
  CHECK(*db->ListTrackingRuns(other, a) == std::map<int, std::string>{{0, "other's"}});
  CHECK(db->ListTrackingRuns(e, "nothing")->empty());
}

}  // namespace tune
