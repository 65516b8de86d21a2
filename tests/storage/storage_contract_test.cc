// The Storage contract (storage/storage.h) on every engine: one set of
// checks, each run on a fresh SQLite file and on a fresh database of a real
// PostgreSQL server (tests/storage/storage_under_test.h), as Optuna runs
// one suite over every storage. Experiments, the trial lifecycle, retries,
// excluded reports, immutability, PBT's pauses and exploits, several
// objectives and constraints (trial_values), read-only readers, and
// everything read back after reopening (--resume).
//
// Each engine is one TEST_CASE and each check a section of it, so the
// PostgreSQL server starts once per engine, not once per check. What only
// one engine has is tested beside it: sqlite_*_test.cc (WAL, file paths,
// PRAGMAs, the file's schema upgrades), postgres_storage_test.cc (the
// schema version row, advisory locks, URLs).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "storage/storage.h"
#include "storage/trial_schedule.h"
#include "tests/storage/storage_under_test.h"

namespace tune {
namespace {

using testing::StorageUnderTest;

MetricReport Report(int64_t step, std::map<std::string, double> values, double time = 0) {
  MetricReport r;
  r.step = step;
  r.values = std::move(values);
  r.time = time;
  return r;
}

void ExperimentsLifecycle(StorageUnderTest& s) {
  Storage* db = &s.db();
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
  // A changed spec and the time spent, as --resume records them.
  REQUIRE(db->SetExperimentSpec(*b, R"({"v": 2})").ok());
  REQUIRE(db->SetExperimentRunSeconds(*b, 12.5).ok());
  CHECK(db->FindExperiment("beta")->spec_json == R"({"v": 2})");
  CHECK(db->FindExperiment("beta")->run_seconds == 12.5);
  CHECK(db->SetExperimentRunSeconds(12345, 1).IsNotFound());
}

void TrialLifecycle(StorageUnderTest& s) {
  Storage* db = &s.db();
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
  CHECK(db->AppendReport(t1->id, 0, Report(1, {{"loss", 1}}), 1.0).code() == StatusCode::kFailedPrecondition);

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
    auto one = db->GetTrialSummary(a.trial.id);
    REQUIRE(one.ok());
    CHECK(one->trial.number == a.trial.number);
    CHECK(one->trial.value == a.trial.value);
    CHECK(one->trial.intermediate.empty());
  }
  CHECK(db->ListTrialSummaries(e + 1000).status().IsNotFound());
  CHECK(db->GetTrialSummary(777).status().IsNotFound());

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

void TallyTrials(StorageUnderTest& s) {
  Storage* db = &s.db();
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
  // NaN as a final value is none (NULL), never an earlier report's value.
  CHECK_FALSE((*db->ListTrialRecords(e))[4].trial.value.has_value());
  ExperimentId empty = *db->CreateExperiment("empty", "{}", 1);
  auto none = db->TallyTrials(empty, false);
  REQUIRE(none.ok());
  CHECK(none->total == 0);
  CHECK(none->counts.empty());
  CHECK_FALSE(none->best.has_value());
  CHECK(db->TallyTrials(empty + 1000, false).status().IsNotFound());
}

void FinishedTrialsImmutable(StorageUnderTest& s) {
  Storage* db = &s.db();
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  for (TrialState end : {TrialState::kCompleted, TrialState::kPruned, TrialState::kFailed, TrialState::kStopped}) {
    INFO(TrialStateName(end));
    Trial t = *db->CreateTrial(e, {{"x", 1.0}});
    REQUIRE(db->StartTrial(t.id, 0, "local").ok());
    REQUIRE(db->AppendReport(t.id, 0, Report(1, {{"loss", 1.0}}), 1.0).ok());
    REQUIRE(db->FinishTrial(t.id, end, 1.0, std::nullopt, "done").ok());
    auto before = *db->GetTrialSummary(t.id);
    const auto before_curve = db->ListTrialRecords(e)->back().trial.intermediate;

    Status again = db->FinishTrial(t.id, TrialState::kCompleted, 0.5, std::nullopt, "x");
    CHECK(again.code() == StatusCode::kFailedPrecondition);
    CHECK(again.message().find("immutable") != std::string::npos);
    Status with_values = db->FinishTrialWithValues(t.id, TrialState::kCompleted, 0.5, {0.5, 0.1}, {-1}, std::nullopt, "x");
    CHECK(with_values.code() == StatusCode::kFailedPrecondition);
    CHECK(with_values.message().find("immutable") != std::string::npos);
    CHECK(db->AppendReport(t.id, 0, Report(2, {{"loss", 0.1}}), 0.1).code() == StatusCode::kFailedPrecondition);
    CHECK(db->AppendExcludedReport(t.id, 0, Report(2, {{"loss", 0.1}}), 0.1, "after max_t").code() ==
          StatusCode::kFailedPrecondition);
    CHECK(db->StartTrial(t.id, 1, "local").code() == StatusCode::kFailedPrecondition);
    CHECK(db->RetryTrial(t.id, "x").code() == StatusCode::kFailedPrecondition);
    CHECK(db->RetryFailedTrial(t.id, "x").code() == StatusCode::kFailedPrecondition);
    CHECK(db->PauseTrial(t.id, "x").code() == StatusCode::kFailedPrecondition);

    auto after = *db->GetTrialSummary(t.id);
    CHECK(after.trial.state == end);
    CHECK(after.trial.value == before.trial.value);
    CHECK(after.trial.values.empty());
    CHECK(after.trial.constraints.empty());
    CHECK(db->ListTrialRecords(e)->back().trial.intermediate == before_curve);
    CHECK(after.message == "done");
    CHECK(after.ended_at == before.ended_at);
    CHECK(db->ListTrialReports(t.id)->size() == 1);
  }
  CHECK(s.Count("SELECT count(*) FROM trial_values") == 0);
}

void RetriedTrial(StorageUnderTest& s) {
  Storage* db = &s.db();
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
  const char* kCurrent = "SELECT count(*) FROM observation_logs WHERE is_current";
  CHECK(s.Count(kCurrent) == 0);
  CHECK(s.Count("SELECT count(*) FROM observation_logs") == 2);

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
  CHECK(s.Count(kCurrent) == 1);
  auto current = *db->ListReports(e);
  REQUIRE(current.size() == 1);
  CHECK(current[0].attempt == 1);
  // Every attempt's reports are kept.
  auto all = *db->ListTrialReports(t.id);
  REQUIRE(all.size() == 3);
  CHECK(all[0].attempt == 0);
  CHECK(all[2].attempt == 1);
}

void ExcludedReport(StorageUnderTest& s) {
  Storage* db = &s.db();
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
  CHECK(s.Count("SELECT count(*) FROM observation_logs WHERE step = 12 AND excluded = 'after max_t'") == 1);
  CHECK(s.Count("SELECT count(*) FROM observation_logs WHERE excluded IS NULL") == 1);
  // A finished trial takes no reports, excluded or not.
  REQUIRE(db->FinishTrial(t.id, TrialState::kCompleted, 2.0, std::nullopt, "reached max_t").ok());
  CHECK(db->AppendExcludedReport(t.id, 0, Report(13, {{"loss", 0.4}}), 0.4, "after max_t").code() ==
        StatusCode::kFailedPrecondition);
}

void RestartedAttempt(StorageUnderTest& s) {
  Storage* db = &s.db();
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
  // From a step on (a new rank 0 continued from a checkpoint): only the
  // later reports stop counting, and value and last_step follow the rest.
  REQUIRE(db->AppendReport(t.id, 0, Report(2, {{"loss", 0.4}}), 0.4).ok());
  REQUIRE(db->AppendReport(t.id, 0, Report(3, {{"loss", 0.3}}), 0.3).ok());
  REQUIRE(db->ExcludeAttemptReports(t.id, 0, "replaced pod", int64_t{2}).ok());
  rec = (*db->ListTrialRecords(e))[0];
  CHECK(rec.trial.intermediate == std::map<int64_t, double>{{1, 0.5}});
  CHECK(rec.trial.value == 0.5);
  CHECK(rec.last_step == 1);
  REQUIRE(db->FinishTrial(t.id, TrialState::kCompleted, 0.5, std::nullopt, "completed").ok());
  CHECK(db->ExcludeAttemptReports(t.id, 0, "replaced pod").code() == StatusCode::kFailedPrecondition);
}

void NanMetrics(StorageUnderTest& s) {
  Storage* db = &s.db();
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  Trial t = *db->CreateTrial(e, {});
  REQUIRE(db->StartTrial(t.id, 0, "local").ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  REQUIRE(db->AppendReport(t.id, 0, Report(1, {{"loss", nan}, {"grad", inf}, {"low", -inf}}), std::nullopt).ok());
  auto reports = *db->ListTrialReports(t.id);
  REQUIRE(reports.size() == 1);
  CHECK(std::isnan(reports[0].report.values.at("loss")));
  CHECK(reports[0].report.values.at("grad") == inf);
  CHECK(reports[0].report.values.at("low") == -inf);
}

void NonFiniteParams(StorageUnderTest& s) {
  Storage* db = &s.db();
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  for (double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    CHECK(db->CreateTrial(e, {{"lr", bad}}).status().IsInvalidArgument());
  }
  CHECK(db->ListTrials(e)->empty());
  // Every kind of value round-trips by type.
  const ParamMap params{{"lr", 1e-300}, {"n", int64_t{-(int64_t{1} << 62)}}, {"s", std::string("a\"b\\c\n")},
                        {"b", true}};
  REQUIRE(db->CreateTrial(e, params).ok());
  CHECK(db->ListTrials(e)->at(0).params == params);
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

void ReadBackAfterReopening(StorageUnderTest& s) {
  std::vector<TrialRecord> records;
  std::vector<StoredReport> reports;
  ExperimentRecord experiment;
  {
    Storage* db = &s.db();
    ExperimentId e = *db->CreateExperiment("lora", R"({"objective": {"metric": "eval_loss"}})", 42);
    // One trial in each state, the failed one after a retry.
    const TrialState ends[] = {TrialState::kCompleted, TrialState::kPruned,  TrialState::kFailed,
                               TrialState::kStopped,   TrialState::kRunning, TrialState::kPending};
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
                                std::string("ended ") + TrialStateName(end))
                    .ok());
      }
    }
    REQUIRE(db->SetExperimentState(e, ExperimentState::kStopped, "interrupted").ok());
    records = *db->ListTrialRecords(e);
    reports = *db->ListReports(e);
    experiment = *db->FindExperiment("lora");
    s.Close();
  }
  auto db = s.Reopen();
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

void TrackingRuns(StorageUnderTest& s) {
  const std::string a = "mlflow http://127.0.0.1:5000 experiment 1";
  const std::string b = "mlflow http://127.0.0.1:6000 experiment 1";
  ExperimentId e = 0, other = 0;
  {
    Storage* db = &s.db();
    e = *db->CreateExperiment("e", "{}", 1);
    other = *db->CreateExperiment("other", "{}", 1);
    REQUIRE(db->SetTrackingRun(e, a, -1, "parent").ok());
    REQUIRE(db->SetTrackingRun(e, a, 0, "first").ok());
    REQUIRE(db->SetTrackingRun(e, a, 0, "second").ok());
    REQUIRE(db->SetTrackingRun(e, b, 0, "elsewhere").ok());
    REQUIRE(db->SetTrackingRun(other, a, 0, "other's").ok());
    CHECK(db->SetTrackingRun(999, a, 0, "x").code() == StatusCode::kNotFound);
    s.Close();
  }
  auto db = s.Reopen();  // read back after reopening, as --resume does
  CHECK(*db->ListTrackingRuns(e, a) == std::map<int, std::string>{{-1, "parent"}, {0, "second"}});
  CHECK(*db->ListTrackingRuns(e, b) == std::map<int, std::string>{{0, "elsewhere"}});
  CHECK(*db->ListTrackingRuns(other, a) == std::map<int, std::string>{{0, "other's"}});
  CHECK(db->ListTrackingRuns(e, "nothing")->empty());
}

// Several objectives and constraints (schema v7, trial_values): stored with
// the terminal transition, NaN as NULL and read back as NaN, by every read.
void ObjectiveAndConstraintValues(StorageUnderTest& s) {
  Storage* db = &s.db();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ExperimentId e = *db->CreateExperiment("mo", "{}", 1);
  Trial t0 = *db->CreateTrial(e, {{"x", 0.1}});
  Trial t1 = *db->CreateTrial(e, {{"x", 0.2}});
  Trial t2 = *db->CreateTrial(e, {{"x", 0.3}});
  Trial t3 = *db->CreateTrial(e, {{"x", 0.4}});
  for (const Trial& t : {t0, t1, t2}) REQUIRE(db->StartTrial(t.id, 0, "local").ok());
  REQUIRE(db->AppendReport(t0.id, 0, Report(1, {{"loss", 0.5}, {"latency", 12}}), 0.5).ok());
  REQUIRE(db->FinishTrialWithValues(t0.id, TrialState::kCompleted, 0.5, {0.5, 12.0, -3.25}, {-1.0, 0.5},
                                    std::nullopt, "")
              .ok());
  // A missing objective is NaN: stored as NULL, read back as NaN.
  REQUIRE(db->FinishTrialWithValues(t1.id, TrialState::kCompleted, nan, {nan, 7.0}, {nan}, std::nullopt, "").ok());
  // Both empty: exactly FinishTrial.
  REQUIRE(db->FinishTrialWithValues(t2.id, TrialState::kPruned, std::nullopt, {}, {}, int64_t{3}, "rung 3").ok());
  // Only a terminal state.
  REQUIRE(db->StartTrial(t3.id, 0, "local").ok());
  CHECK(db->FinishTrialWithValues(t3.id, TrialState::kRunning, 1.0, {1.0}, {}, std::nullopt, "").IsInvalidArgument());
  CHECK(db->FinishTrialWithValues(999, TrialState::kCompleted, 1.0, {1.0}, {}, std::nullopt, "").IsNotFound());

  CHECK(s.Count("SELECT count(*) FROM trial_values WHERE kind = 'objective'") == 5);
  CHECK(s.Count("SELECT count(*) FROM trial_values WHERE kind = 'constraint'") == 3);
  CHECK(s.Count("SELECT count(*) FROM trial_values WHERE value IS NULL") == 2);

  auto same = [&](const std::vector<double>& got, const std::vector<double>& want) {
    INFO("got " << ::Catch::Detail::stringify(got) << ", want " << ::Catch::Detail::stringify(want));
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        CHECK(std::isnan(got[i]));
      } else {
        CHECK(got[i] == want[i]);
      }
    }
  };
  auto check_trials = [&](Storage& from) {
    const std::vector<double> v0{0.5, 12.0, -3.25}, c0{-1.0, 0.5}, v1{nan, 7.0}, c1{nan};
    auto history = from.ListTrials(e);
    REQUIRE(history.ok());
    REQUIRE(history->size() == 4);
    same((*history)[0].values, v0);
    same((*history)[0].constraints, c0);
    CHECK_FALSE(IsFeasible((*history)[0]));
    same((*history)[1].values, v1);
    same((*history)[1].constraints, c1);
    CHECK_FALSE((*history)[1].value.has_value());
    CHECK((*history)[2].values.empty());
    CHECK((*history)[2].constraints.empty());
    CHECK((*history)[3].values.empty());
    for (auto list : {from.ListTrialRecords(e), from.ListTrialSummaries(e)}) {
      REQUIRE(list.ok());
      REQUIRE(list->size() == 4);
      same((*list)[0].trial.values, v0);
      same((*list)[0].trial.constraints, c0);
      same((*list)[1].trial.values, v1);
      same((*list)[1].trial.constraints, c1);
      CHECK((*list)[2].trial.values.empty());
      CHECK((*list)[2].pruned_rung == 3);
    }
    for (const auto& [t, v, c] : {std::tuple{t0.id, v0, c0}, std::tuple{t1.id, v1, c1}}) {
      auto one = from.GetTrialSummary(t);
      REQUIRE(one.ok());
      same(one->trial.values, v);
      same(one->trial.constraints, c);
    }
    CHECK(from.GetTrialSummary(t2.id)->trial.values.empty());
  };
  check_trials(*db);
  // Immutable once finished: the values too.
  CHECK(db->FinishTrialWithValues(t0.id, TrialState::kCompleted, 0.1, {0.1, 1.0, 1.0}, {-5.0, -5.0}, std::nullopt, "")
            .code() == StatusCode::kFailedPrecondition);
  CHECK(db->FinishTrialWithValues(t2.id, TrialState::kCompleted, 0.1, {0.1}, {}, std::nullopt, "").code() ==
        StatusCode::kFailedPrecondition);
  check_trials(*db);
  // The same from another tuner (--resume) and from a read-only reader.
  s.Close();
  check_trials(*s.Reopen());
  check_trials(*s.ReadOnly());
}

void ReadOnlyReader(StorageUnderTest& s) {
  Storage* writer = &s.db();
  auto e = writer->CreateExperiment("alpha", R"({"name": "alpha"})", 1);
  REQUIRE(e.ok());
  auto t = writer->CreateTrial(*e, {{"lr", 0.1}});
  REQUIRE(t.ok());

  auto reader = s.ReadOnly();
  REQUIRE(reader->ListTrials(*e)->size() == 1);
  // A change committed later is seen by the next read.
  REQUIRE(writer->StartTrial(t->id, 0, "local:pid 1").ok());
  CHECK(reader->ListTrials(*e)->at(0).state == TrialState::kRunning);
  // Every write fails.
  CHECK_FALSE(reader->CreateExperiment("beta", "{}", 1).ok());
  CHECK_FALSE(reader->CreateTrial(*e, {}).ok());
  CHECK_FALSE(reader->FinishTrialWithValues(t->id, TrialState::kCompleted, 1.0, {1.0}, {}, std::nullopt, "").ok());
  CHECK(writer->ListExperiments()->size() == 1);
  CHECK(writer->GetTrialSummary(t->id)->trial.state == TrialState::kRunning);

  // DataVersion: reads change nothing, each commit of the writer does, a
  // failed write of the reader does not.
  auto v0 = reader->DataVersion();
  REQUIRE(v0.ok());
  REQUIRE(reader->ListTrials(*e).ok());
  REQUIRE(writer->ListExperiments().ok());
  CHECK(*reader->DataVersion() == *v0);
  REQUIRE(writer->CreateTrial(*e, {{"lr", 0.2}}).ok());
  auto v1 = reader->DataVersion();
  REQUIRE(v1.ok());
  CHECK(*v1 != *v0);
  CHECK(*reader->DataVersion() == *v1);
  REQUIRE(writer->SetExperimentRunSeconds(*e, 5.0).ok());
  CHECK(*reader->DataVersion() != *v1);
  const int64_t before = *reader->DataVersion();
  CHECK_FALSE(reader->CreateTrial(*e, {}).ok());
  CHECK(*reader->DataVersion() == before);
}

// --- Population Based Training: pauses, continued attempts, exploits.

void PbtReport(Storage& db, TrialId t, int attempt, int64_t step, double v) {
  MetricReport m;
  m.step = step;
  m.values = {{"loss", v}, {"acc", 1 - v}};
  REQUIRE(db.AppendReport(t, attempt, m, v).ok());
}

void PausedTrialContinues(StorageUnderTest& s) {
  Storage& db = s.db();
  ExperimentId e = *db.CreateExperiment("pbt", "{}", 1);
  TrialId t = db.CreateTrial(e, {{"lr", 0.1}})->id;
  REQUIRE(db.StartTrial(t, 0, "local").ok());
  for (int64_t step : {10, 20, 30}) PbtReport(db, t, 0, step, 1.0 / static_cast<double>(step));
  // Only a running trial pauses.
  REQUIRE(db.PauseTrial(t, "paused at step 30").ok());
  CHECK(db.GetTrialSummary(t)->trial.state == TrialState::kPaused);
  CHECK(db.GetTrialSummary(t)->message == "paused at step 30");
  CHECK(db.PauseTrial(t, "again").code() == StatusCode::kFailedPrecondition);
  // A paused trial takes no reports.
  MetricReport m;
  m.step = 40;
  CHECK(db.AppendReport(t, 0, m, 0.5).code() == StatusCode::kFailedPrecondition);

  // Attempt 1 continues from checkpoint-20: reports 10 and 20 are carried.
  REQUIRE(db.ContinueTrial(t, 1, "local", 20).ok());
  TrialRecord r = *db.GetTrialSummary(t);
  CHECK(r.trial.state == TrialState::kRunning);
  CHECK(r.trial.attempt == 1);
  CHECK(r.last_step == 20);          // recomputed from the carried reports
  CHECK(r.trial.value == 1.0 / 20);  // the newest carried objective
  auto reports = *db.ListTrialReports(t);
  REQUIRE(reports.size() == 5);  // 3 originals, 2 copies
  CHECK(reports[3].attempt == 1);
  CHECK(reports[3].report.step == 10);
  CHECK(reports[3].report.values.at("acc") == 1 - 0.1);  // every metric copied
  CHECK(reports[4].report.step == 20);
  for (int i : {0, 1}) {
    CHECK(s.Count("SELECT count(*) FROM reports WHERE attempt = 1 AND id = " + std::to_string(reports[3 + i].seq) +
                  " AND carried_from = " + std::to_string(reports[i].seq)) == 1);
  }
  CHECK(s.Count("SELECT count(*) FROM reports WHERE attempt = 0 AND carried_from IS NULL") == 3);
  // The curve of the current attempt: the carried steps, then what it reports.
  PbtReport(db, t, 1, 30, 0.01);
  auto trials = *db.ListTrials(e);
  REQUIRE(trials[0].intermediate.size() == 3);
  CHECK(trials[0].intermediate.at(30) == 0.01);
  CHECK(trials[0].intermediate.at(20) == 1.0 / 20);
  CHECK(db.GetTrialSummary(t)->last_step == 30);
  // An attempt number already made is refused.
  REQUIRE(db.PauseTrial(t, "").ok());
  CHECK(db.ContinueTrial(t, 1, "local", 30).code() == StatusCode::kFailedPrecondition);
}

void Exploits(StorageUnderTest& s) {
  Storage& db = s.db();
  ExperimentId e = *db.CreateExperiment("pbt", "{}", 1);
  TrialId a = db.CreateTrial(e, {{"lr", 0.1}, {"r", int64_t{8}}})->id;
  TrialId b = db.CreateTrial(e, {{"lr", 0.2}, {"r", int64_t{8}}})->id;
  REQUIRE(db.StartTrial(a, 0, "local").ok());
  REQUIRE(db.StartTrial(b, 0, "local").ok());
  PbtReport(db, a, 0, 20, 0.9);
  PbtReport(db, b, 0, 20, 0.3);
  // A pending trial cannot take a checkpoint; a donor of another experiment neither.
  TrialId c = db.CreateTrial(e, {{"lr", 0.3}, {"r", int64_t{8}}})->id;
  CHECK(db.RecordExploit(c, 0, b, 20, {{"lr", 0.5}}).code() == StatusCode::kFailedPrecondition);
  ExperimentId other = *db.CreateExperiment("other", "{}", 1);
  TrialId o = db.CreateTrial(other, {})->id;
  CHECK(db.RecordExploit(a, 20, o, 20, {{"lr", 0.5}}).code() == StatusCode::kInvalidArgument);

  REQUIRE(db.PauseTrial(a, "exploit").ok());
  REQUIRE(db.RecordExploit(a, 20, b, 20, {{"lr", 0.24}, {"r", int64_t{8}}}).ok());
  REQUIRE(db.ContinueTrial(a, 1, "local", 20).ok());
  PbtReport(db, a, 1, 40, 0.25);
  REQUIRE(db.PauseTrial(b, "exploit").ok());
  REQUIRE(db.RecordExploit(b, 20, a, 40, {{"lr", 0.3}, {"r", int64_t{8}}}).ok());
  REQUIRE(db.PauseTrial(a, "exploit").ok());
  REQUIRE(db.RecordExploit(a, 40, a, 40, {{"lr", 0.12}, {"r", int64_t{8}}}).ok());

  // params_json and trial_params hold the newest parameters.
  CHECK(db.GetTrialSummary(a)->trial.params == ParamMap{{"lr", 0.12}, {"r", int64_t{8}}});
  CHECK(db.GetTrialSummary(b)->trial.params == ParamMap{{"lr", 0.3}, {"r", int64_t{8}}});
  CHECK(s.Count("SELECT count(*) FROM trial_params WHERE trial_id = " + std::to_string(a) +
                " AND name = 'lr' AND value_num = 0.12") == 1);
  auto xs = *db.ListExploits(e);
  REQUIRE(xs.size() == 3);
  CHECK(xs[0].id < xs[1].id);
  CHECK(xs[1].id < xs[2].id);
  CHECK(xs[0].trial_number == 0);
  CHECK(xs[0].donor_number == 1);
  CHECK(xs[0].step == 20);
  CHECK(xs[0].donor_step == 20);
  CHECK(xs[0].before == ParamMap{{"lr", 0.1}, {"r", int64_t{8}}});
  CHECK(xs[0].after == ParamMap{{"lr", 0.24}, {"r", int64_t{8}}});
  CHECK(xs[1].trial_number == 1);
  CHECK(xs[1].donor_number == 0);
  CHECK(xs[1].donor_step == 40);
  CHECK(xs[2].before == ParamMap{{"lr", 0.24}, {"r", int64_t{8}}});
  // after_seq: the newest report stored before the exploit.
  CHECK(xs[0].after_seq == db.ListTrialReports(b)->back().seq);  // b's step 20 was the newest
  CHECK(xs[1].after_seq == db.ListTrialReports(a)->back().seq);  // a's step 40
  CHECK(db.ListExploits(other)->empty());

  // The schedules: the first parameters from step 0, then one entry per exploit.
  Trial ta = db.GetTrialSummary(a)->trial;
  auto sa = TrialScheduleOf(ta, xs);
  REQUIRE(sa.size() == 3);
  CHECK(sa[0].step == 0);
  CHECK(sa[0].params == ParamMap{{"lr", 0.1}, {"r", int64_t{8}}});
  CHECK_FALSE(sa[0].donor.has_value());
  CHECK(sa[1].step == 20);
  CHECK(sa[1].donor == 1);
  CHECK(sa[1].params.at("lr") == ParamValue(0.24));
  CHECK(sa[2].step == 40);
  CHECK(sa[2].donor == 0);
  CHECK(sa[2].at_step == 40);
  TrialRecord rc = *db.GetTrialSummary(c);
  auto sc = TrialScheduleOf(rc.trial, xs);
  REQUIRE(sc.size() == 1);
  CHECK(sc[0].params == rc.trial.params);
}

void FailedAttempts(StorageUnderTest& s) {
  Storage& db = s.db();
  ExperimentId e = *db.CreateExperiment("pbt", "{}", 1);
  TrialId t = db.CreateTrial(e, {})->id;
  REQUIRE(db.StartTrial(t, 0, "local").ok());
  PbtReport(db, t, 0, 10, 0.5);
  REQUIRE(db.RetryFailedTrial(t, "exit status 1").ok());
  TrialRecord r = *db.GetTrialSummary(t);
  CHECK(r.trial.state == TrialState::kPending);
  CHECK(r.failed_attempts == 1);
  CHECK_FALSE(r.last_step.has_value());
  CHECK_FALSE(r.trial.value.has_value());
  REQUIRE(db.ContinueTrial(t, 1, "local", 10).ok());  // a retry continues from checkpoint-10
  CHECK(db.GetTrialSummary(t)->last_step == 10);
  REQUIRE(db.RetryTrial(t, "interrupted").ok());  // not a failure
  CHECK(db.GetTrialSummary(t)->failed_attempts == 1);
  REQUIRE(db.StartTrial(t, 2, "local").ok());
  REQUIRE(db.RetryFailedTrial(t, "exit status 2").ok());
  CHECK(db.GetTrialSummary(t)->failed_attempts == 2);
  CHECK(db.RetryFailedTrial(t, "again").code() == StatusCode::kFailedPrecondition);
  // The count is in the database, for --resume.
  s.Close();
  CHECK(s.Reopen()->GetTrialSummary(t)->failed_attempts == 2);
}

// The contract, in the order it is run on each engine.
const std::vector<std::pair<const char*, std::function<void(StorageUnderTest&)>>>& Contract() {
  static const std::vector<std::pair<const char*, std::function<void(StorageUnderTest&)>>> checks = {
      {"experiments are created, found, listed and change state", ExperimentsLifecycle},
      {"a trial goes pending, running, completed with its reports", TrialLifecycle},
      {"TallyTrials counts states and finds the best finite completed value, lower number on ties", TallyTrials},
      {"finished trials are immutable", FinishedTrialsImmutable},
      {"a retried trial starts a new attempt with a fresh learning curve", RetriedTrial},
      {"an excluded report is kept and marked but counts nowhere", ExcludedReport},
      {"a restarted attempt's earlier reports become excluded, the later ones count", RestartedAttempt},
      {"NaN metric values are kept as NaN, not dropped", NanMetrics},
      {"non-finite float parameters are refused, the others round-trip", NonFiniteParams},
      {"everything reads back the same after reopening (resume)", ReadBackAfterReopening},
      {"tracking runs are kept per experiment and target, replaced when set again", TrackingRuns},
      {"objective and constraint values: stored when finished, NaN kept, read by every query, immutable",
       ObjectiveAndConstraintValues},
      {"a read-only reader sees each commit and writes nothing; DataVersion changes with commits only",
       ReadOnlyReader},
      {"PBT: a paused trial continues from its checkpoint with the reports up to it carried", PausedTrialContinues},
      {"PBT: an exploit changes the trial's parameters and is listed in order with both sides", Exploits},
      {"PBT: failed attempts are counted and outlive the retry, plain retries are not", FailedAttempts},
  };
  return checks;
}

// Each check on a fresh database of `engine`, as a section of its own.
void RunContract(const std::string& engine) {
  for (const auto& [name, check] : Contract()) {
    DYNAMIC_SECTION(name) {
      StorageUnderTest s(engine);
      if (!s.ok()) return;  // skipped, with a warning
      check(s);
    }
  }
}

}  // namespace

TEST_CASE("the Storage contract on SQLite", "[storage][contract]") { RunContract("sqlite"); }

TEST_CASE("the Storage contract on PostgreSQL", "[storage][contract][postgres]") { RunContract("postgresql"); }

}  // namespace tune
