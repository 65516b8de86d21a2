// Concurrency on real files: writer threads sharing a connection, writers
// on separate connections and in separate processes (busy timeout, IMMEDIATE
// transactions), and a reader that sees consistent snapshots while a writer
// runs (WAL).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>

#include "storage/storage.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

constexpr int kReportsPerTrial = 5;

// Creates `trials` trials and runs each to completion; returns the first
// non-OK status.
Status RunTrials(Storage& db, ExperimentId e, int trials, int worker) {
  for (int i = 0; i < trials; ++i) {
    auto t = db.CreateTrial(e, {{"worker", int64_t{worker}}, {"i", int64_t{i}}});
    if (!t.ok()) return t.status();
    TUNE_RETURN_IF_ERROR(db.StartTrial(t->id, 0, "worker " + std::to_string(worker)));
    for (int step = 1; step <= kReportsPerTrial; ++step) {
      MetricReport r;
      r.step = step;
      r.values = {{"loss", 1.0 / step}, {"worker", worker}};
      TUNE_RETURN_IF_ERROR(db.AppendReport(t->id, 0, r, 1.0 / step));
    }
    TUNE_RETURN_IF_ERROR(db.FinishTrial(t->id, TrialState::kCompleted, 1.0 / kReportsPerTrial,
                                        std::nullopt, "completed"));
  }
  return Status::Ok();
}

// Every trial completed with all its reports and a unique number 0..n-1.
void CheckAllDone(Storage& db, ExperimentId e, int expected) {
  auto history = db.ListTrials(e);
  REQUIRE(history.ok());
  REQUIRE(static_cast<int>(history->size()) == expected);
  std::set<int> numbers;
  for (const Trial& t : *history) {
    numbers.insert(t.number);
    CHECK(t.state == TrialState::kCompleted);
    CHECK(t.intermediate.size() == kReportsPerTrial);
  }
  CHECK(static_cast<int>(numbers.size()) == expected);
  CHECK(*numbers.rbegin() == expected - 1);
  CHECK(static_cast<int>(db.ListReports(e)->size()) == expected * kReportsPerTrial);
}

TEST_CASE("writer threads can share one storage", "[storage][concurrency]") {
  testing::TempDir dir;
  auto db = std::move(OpenSqliteStorage(dir.File("threads.db"))).value();
  ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
  constexpr int kThreads = 4, kTrials = 25;
  std::vector<Status> results(kThreads);
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] { results[w] = RunTrials(*db, e, kTrials, w); });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : results) CHECK(s.ToString() == "OK");
  CheckAllDone(*db, e, kThreads * kTrials);
}

TEST_CASE("writers on separate connections wait for each other instead of failing",
          "[storage][concurrency]") {
  testing::TempDir dir;
  const std::string path = dir.File("connections.db");
  ExperimentId e = 0;
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    e = *db->CreateExperiment("exp", "{}", 1);
  }
  constexpr int kWriters = 3, kTrials = 20;
  std::vector<Status> results(kWriters);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto db = OpenSqliteStorage(path);  // its own connection
      results[w] = db.ok() ? RunTrials(**db, e, kTrials, w) : db.status();
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : results) CHECK(s.ToString() == "OK");
  auto db = std::move(OpenSqliteStorage(path)).value();
  CheckAllDone(*db, e, kWriters * kTrials);
}

TEST_CASE("a writer in another process and one in this process share the file",
          "[storage][concurrency]") {
  testing::TempDir dir;
  const std::string path = dir.File("processes.db");
  ExperimentId e = 0;
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    e = *db->CreateExperiment("exp", "{}", 1);
  }
  constexpr int kTrials = 30;
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child opens its own connection after the fork, as `tune run` would.
    auto db = OpenSqliteStorage(path);
    Status st = db.ok() ? RunTrials(**db, e, kTrials, 1) : db.status();
    if (!st.ok()) std::fprintf(stderr, "child: %s\n", st.ToString().c_str());
    ::_exit(st.ok() ? 0 : 1);
  }
  Status parent;
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    parent = RunTrials(*db, e, kTrials, 0);
  }
  int wstatus = 0;
  REQUIRE(::waitpid(child, &wstatus, 0) == child);
  CHECK(parent.ToString() == "OK");
  REQUIRE(WIFEXITED(wstatus));
  CHECK(WEXITSTATUS(wstatus) == 0);
  auto db = std::move(OpenSqliteStorage(path)).value();
  CheckAllDone(*db, e, 2 * kTrials);
}

TEST_CASE("a writer killed with SIGKILL leaves every committed change readable",
          "[storage][concurrency]") {
  testing::TempDir dir;
  const std::string path = dir.File("crash.db");
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto db = OpenSqliteStorage(path);
    if (!db.ok()) ::_exit(1);
    auto e = (*db)->CreateExperiment("exp", "{}", 3);
    if (!e.ok()) ::_exit(1);
    auto done = RunTrials(**db, *e, 2, 0);
    auto t = (*db)->CreateTrial(*e, {{"lr", 0.5}});
    if (!done.ok() || !t.ok() || !(*db)->StartTrial(t->id, 0, "local").ok()) ::_exit(1);
    for (int step = 1; step <= 3; ++step) {
      MetricReport r;
      r.step = step;
      r.values = {{"loss", 10.0 - step}};
      if (!(*db)->AppendReport(t->id, 0, r, 10.0 - step).ok()) ::_exit(1);
    }
    ::kill(::getpid(), SIGKILL);  // no destructors, no checkpoint, no close
    ::_exit(1);
  }
  int wstatus = 0;
  REQUIRE(::waitpid(child, &wstatus, 0) == child);
  REQUIRE(WIFSIGNALED(wstatus));
  CHECK(WTERMSIG(wstatus) == SIGKILL);

  auto db = OpenSqliteStorage(path, /*create_if_missing=*/false);
  REQUIRE(db.ok());
  auto e = (*db)->FindExperiment("exp");
  REQUIRE(e.ok());
  auto history = (*db)->ListTrials(e->id);
  REQUIRE(history.ok());
  REQUIRE(history->size() == 3);
  CHECK((*history)[0].state == TrialState::kCompleted);
  CHECK((*history)[1].intermediate.size() == kReportsPerTrial);
  CHECK((*history)[2].state == TrialState::kRunning);
  CHECK((*history)[2].intermediate == std::map<int64_t, double>{{1, 9.0}, {2, 8.0}, {3, 7.0}});
  // --resume retries the interrupted trial.
  REQUIRE((*db)->RetryTrial((*history)[2].id, "interrupted").ok());
  REQUIRE((*db)->StartTrial((*history)[2].id, 1, "local").ok());
}

TEST_CASE("a reader sees consistent snapshots while a writer writes (WAL)",
          "[storage][concurrency]") {
  testing::TempDir dir;
  const std::string path = dir.File("wal.db");
  auto writer = std::move(OpenSqliteStorage(path)).value();
  ExperimentId e = *writer->CreateExperiment("exp", "{}", 1);
  constexpr int kTrials = 40;
  std::atomic<bool> done{false};
  Status write_status;
  std::thread w([&] {
    write_status = RunTrials(*writer, e, kTrials, 0);
    done = true;
  });

  auto reader = std::move(OpenSqliteStorage(path, /*create_if_missing=*/false)).value();
  size_t last_count = 0;
  int snapshots = 0;
  bool consistent = true;
  std::string read_error;
  while (true) {
    bool finished = done.load();  // read once more after the writer ends
    auto records = reader->ListTrialRecords(e);
    if (!records.ok()) {
      read_error = records.status().ToString();
      break;
    }
    ++snapshots;
    if (records->size() < last_count) consistent = false;
    last_count = records->size();
    for (const TrialRecord& r : *records) {
      // One transaction per change: a completed trial always has all its
      // reports, a running one at most all of them.
      size_t n = r.trial.intermediate.size();
      if (r.trial.state == TrialState::kCompleted && n != kReportsPerTrial) consistent = false;
      if (n > kReportsPerTrial) consistent = false;
      if (r.last_step && static_cast<size_t>(*r.last_step) != n) consistent = false;
    }
    if (finished) break;
  }
  w.join();
  CHECK(read_error.empty());
  CHECK(write_status.ToString() == "OK");
  CHECK(consistent);
  CHECK(snapshots >= 1);
  CHECK(last_count == kTrials);
  CheckAllDone(*reader, e, kTrials);
}

}  // namespace
}  // namespace tune
