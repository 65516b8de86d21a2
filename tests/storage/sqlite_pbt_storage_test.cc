// Checkpoint-aware trials and Population Based Training in the results
// database (storage/storage.h): paused trials, attempts that continue from a
// checkpoint, exploits, failed attempts; and a trial's schedule from them
// (storage/trial_schedule.h).
#include <catch2/catch.hpp>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/storage.h"
#include "storage/trial_schedule.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

struct Db {
  testing::TempDir dir;
  std::string path = dir.File("tune.db");
  std::unique_ptr<Storage> db = std::move(OpenSqliteStorage(path)).value();
  ExperimentId e = *db->CreateExperiment("pbt", "{}", 1);

  void Report(TrialId t, int attempt, int64_t step, double v) {
    MetricReport m;
    m.step = step;
    m.values = {{"loss", v}, {"acc", 1 - v}};
    REQUIRE(db->AppendReport(t, attempt, m, v).ok());
  }
  TrialRecord Record(TrialId t) { return *db->GetTrialSummary(t); }
};

TEST_CASE("a paused trial continues from its checkpoint with the reports up to it carried", "[storage][pbt]") {
  Db d;
  TrialId t = d.db->CreateTrial(d.e, {{"lr", 0.1}})->id;
  REQUIRE(d.db->StartTrial(t, 0, "local").ok());
  for (int64_t step : {10, 20, 30}) d.Report(t, 0, step, 1.0 / static_cast<double>(step));
  // Only a running trial pauses.
  REQUIRE(d.db->PauseTrial(t, "paused at step 30").ok());
  CHECK(d.Record(t).trial.state == TrialState::kPaused);
  CHECK(d.Record(t).message == "paused at step 30");
  CHECK(d.db->PauseTrial(t, "again").code() == StatusCode::kFailedPrecondition);
  // A paused trial takes no reports.
  MetricReport m;
  m.step = 40;
  CHECK(d.db->AppendReport(t, 0, m, 0.5).code() == StatusCode::kFailedPrecondition);

  // Attempt 1 continues from checkpoint-20: reports 10 and 20 are carried.
  REQUIRE(d.db->ContinueTrial(t, 1, "local", 20).ok());
  TrialRecord r = d.Record(t);
  CHECK(r.trial.state == TrialState::kRunning);
  CHECK(r.trial.attempt == 1);
  CHECK(r.last_step == 20);          // recomputed from the carried reports
  CHECK(r.trial.value == 1.0 / 20);  // the newest carried objective
  auto reports = *d.db->ListTrialReports(t);
  REQUIRE(reports.size() == 5);  // 3 originals, 2 copies
  CHECK(reports[3].attempt == 1);
  CHECK(reports[3].report.step == 10);
  CHECK(reports[3].report.values.at("acc") == 1 - 0.1);  // every metric copied
  CHECK(reports[4].report.step == 20);
  {
    SQLite::Database raw(d.path, SQLite::OPEN_READONLY);
    SQLite::Statement q(raw, "SELECT carried_from FROM reports WHERE attempt = 1 ORDER BY id");
    std::vector<int64_t> from;
    while (q.executeStep()) from.push_back(q.getColumn(0).getInt64());
    CHECK(from == std::vector<int64_t>{reports[0].seq, reports[1].seq});
    CHECK(raw.execAndGet("SELECT COUNT(*) FROM reports WHERE attempt = 0 AND carried_from IS NULL").getInt() == 3);
  }
  // The curve of the current attempt: the carried steps, then what it reports.
  d.Report(t, 1, 30, 0.01);
  auto trials = *d.db->ListTrials(d.e);
  REQUIRE(trials[0].intermediate.size() == 3);
  CHECK(trials[0].intermediate.at(30) == 0.01);
  CHECK(trials[0].intermediate.at(20) == 1.0 / 20);
  CHECK(d.Record(t).last_step == 30);
  // An attempt number already made is refused.
  REQUIRE(d.db->PauseTrial(t, "").ok());
  CHECK(d.db->ContinueTrial(t, 1, "local", 30).code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("an exploit changes the trial's parameters and is listed in order with both sides", "[storage][pbt]") {
  Db d;
  TrialId a = d.db->CreateTrial(d.e, {{"lr", 0.1}, {"r", int64_t{8}}})->id;
  TrialId b = d.db->CreateTrial(d.e, {{"lr", 0.2}, {"r", int64_t{8}}})->id;
  REQUIRE(d.db->StartTrial(a, 0, "local").ok());
  REQUIRE(d.db->StartTrial(b, 0, "local").ok());
  d.Report(a, 0, 20, 0.9);
  d.Report(b, 0, 20, 0.3);
  // A pending trial cannot take a checkpoint; a donor of another experiment neither.
  TrialId c = d.db->CreateTrial(d.e, {{"lr", 0.3}, {"r", int64_t{8}}})->id;
  CHECK(d.db->RecordExploit(c, 0, b, 20, {{"lr", 0.5}}).code() == StatusCode::kFailedPrecondition);
  ExperimentId other = *d.db->CreateExperiment("other", "{}", 1);
  TrialId o = d.db->CreateTrial(other, {})->id;
  CHECK(d.db->RecordExploit(a, 20, o, 20, {{"lr", 0.5}}).code() == StatusCode::kInvalidArgument);

  REQUIRE(d.db->PauseTrial(a, "exploit").ok());
  REQUIRE(d.db->RecordExploit(a, 20, b, 20, {{"lr", 0.24}, {"r", int64_t{8}}}).ok());
  REQUIRE(d.db->ContinueTrial(a, 1, "local", 20).ok());
  d.Report(a, 1, 40, 0.25);
  REQUIRE(d.db->PauseTrial(b, "exploit").ok());
  REQUIRE(d.db->RecordExploit(b, 20, a, 40, {{"lr", 0.3}, {"r", int64_t{8}}}).ok());
  REQUIRE(d.db->PauseTrial(a, "exploit").ok());
  REQUIRE(d.db->RecordExploit(a, 40, a, 40, {{"lr", 0.12}, {"r", int64_t{8}}}).ok());

  // params_json and trial_params hold the newest parameters.
  CHECK(d.Record(a).trial.params == ParamMap{{"lr", 0.12}, {"r", int64_t{8}}});
  CHECK(d.Record(b).trial.params == ParamMap{{"lr", 0.3}, {"r", int64_t{8}}});
  {
    SQLite::Database raw(d.path, SQLite::OPEN_READONLY);
    SQLite::Statement q(raw, "SELECT value_num FROM trial_params WHERE trial_id = ? AND name = 'lr'");
    q.bind(1, static_cast<int64_t>(a));
    REQUIRE(q.executeStep());
    CHECK(q.getColumn(0).getDouble() == 0.12);
  }
  auto xs = *d.db->ListExploits(d.e);
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
  CHECK(xs[0].after_seq == d.db->ListTrialReports(b)->back().seq);  // b's step 20 was the newest
  CHECK(xs[1].after_seq == d.db->ListTrialReports(a)->back().seq);  // a's step 40
  CHECK(d.db->ListExploits(other)->empty());

  // The schedules: the first parameters from step 0, then one entry per exploit.
  Trial ta = d.Record(a).trial;
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
  TrialRecord rc = d.Record(c);
  auto sc = TrialScheduleOf(rc.trial, xs);
  REQUIRE(sc.size() == 1);
  CHECK(sc[0].params == rc.trial.params);
}

TEST_CASE("failed attempts are counted and outlive the retry, plain retries are not", "[storage][pbt]") {
  Db d;
  TrialId t = d.db->CreateTrial(d.e, {})->id;
  REQUIRE(d.db->StartTrial(t, 0, "local").ok());
  d.Report(t, 0, 10, 0.5);
  REQUIRE(d.db->RetryFailedTrial(t, "exit status 1").ok());
  TrialRecord r = d.Record(t);
  CHECK(r.trial.state == TrialState::kPending);
  CHECK(r.failed_attempts == 1);
  CHECK_FALSE(r.last_step.has_value());
  CHECK_FALSE(r.trial.value.has_value());
  REQUIRE(d.db->ContinueTrial(t, 1, "local", 10).ok());  // a retry continues from checkpoint-10
  CHECK(d.Record(t).last_step == 10);
  REQUIRE(d.db->RetryTrial(t, "interrupted").ok());  // not a failure
  CHECK(d.Record(t).failed_attempts == 1);
  REQUIRE(d.db->StartTrial(t, 2, "local").ok());
  REQUIRE(d.db->RetryFailedTrial(t, "exit status 2").ok());
  CHECK(d.Record(t).failed_attempts == 2);
  CHECK(d.db->RetryFailedTrial(t, "again").code() == StatusCode::kFailedPrecondition);
  // The count is in the file, for --resume.
  d.db.reset();
  auto again = std::move(OpenSqliteStorage(d.path)).value();
  CHECK(again->GetTrialSummary(t)->failed_attempts == 2);
}

}  // namespace
}  // namespace tune
