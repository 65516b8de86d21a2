#include "tracking/tensorboard_sink.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/trial_dir_name.h"
#include "tracking/tensorboard_events.h"

namespace tune::tracking {
namespace {

namespace fs = std::filesystem;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// events.out.tfevents.<seconds>.<host>.<pid>.<n>.tune-attempt<k>: the name
// TensorFlow's writers use (TensorBoard reads every file whose name holds
// "tfevents"), with a suffix that marks the file as this tuner's and says
// which attempt wrote it.
constexpr char kOwnSuffix[] = ".tune-attempt";

std::string NewEventFile(const std::string& dir, double now, int attempt) {
  static std::atomic<int> counter{0};
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  char name[400];
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.%s.%d.%d%s%d", static_cast<long long>(now), host,
                static_cast<int>(getpid()), counter++, kOwnSuffix, attempt);
  return (fs::path(dir) / name).string();
}

// Removes the event files an earlier attempt of this trial left in `dir`
// (only tune's own, by their suffix): the database no longer counts their
// reports, so TensorBoard should not show them.
void RemoveEarlierAttempts(const std::string& dir) {
  std::error_code ec;
  std::vector<fs::path> old;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("events.out.tfevents.", 0) == 0 && name.find(kOwnSuffix) != std::string::npos) {
      old.push_back(it->path());
    }
  }
  for (const fs::path& p : old) fs::remove(p, ec);
}

SessionStatus StatusOf(TrialState s) {
  switch (s) {
    case TrialState::kCompleted:
    case TrialState::kPruned:
    case TrialState::kStopped:
      return SessionStatus::kSuccess;
    case TrialState::kFailed:
      return SessionStatus::kFailure;
    default:
      return SessionStatus::kRunning;
  }
}

// Opens a new event file in `dir` for attempt t.attempt, replacing earlier
// attempts' files, and writes its header: the file version, SessionLog
// START (a TensorBoard that loaded an earlier attempt drops its points on
// the second START of a run, as after a TensorFlow restart), the session
// start.
Status StartRun(TfRecordWriter* w, const std::string& dir, const Trial& t, double when) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Internal("cannot create " + dir + ": " + ec.message());
  RemoveEarlierAttempts(dir);
  TUNE_RETURN_IF_ERROR(w->Open(NewEventFile(dir, Now(), t.attempt)));
  TUNE_RETURN_IF_ERROR(w->Append(FileVersionEvent(when)));
  TUNE_RETURN_IF_ERROR(w->Append(SessionLogStartEvent(when)));
  return w->Append(SessionStartEvent(when, t.params, ""));
}

Status WriteReport(TfRecordWriter* w, const MetricReport& r) {
  for (const auto& [name, v] : r.values) TUNE_RETURN_IF_ERROR(w->Append(ScalarEvent(r.time, r.step, name, v)));
  return Status::Ok();
}

}  // namespace

TensorBoardSink::TensorBoardSink(std::string root, FinalMetricNames final_metrics)
    : root_(std::move(root)), final_metrics_(std::move(final_metrics)) {}

std::string TensorBoardSink::RunDir(const std::string& root, int number) {
  return (fs::path(root) / TrialDirName(number)).string();
}

void TensorBoardSink::Write(const Trial& t, Run* run, const std::string& record) {
  if (!run || run->broken) return;
  Status st = run->writer.Append(record);
  if (!st.ok()) {
    run->broken = true;
    problems_.push_back("TensorBoard events of trial " + std::to_string(t.number) + ": " + st.message());
  }
}

void TensorBoardSink::Start(const Trial& t, const std::string& dir) {
  auto run = std::make_unique<Run>();
  run->dir = dir;
  Status st = StartRun(&run->writer, dir, t, Now());
  if (!st.ok()) {
    run->broken = true;
    problems_.push_back("TensorBoard events of trial " + std::to_string(t.number) + ": " + st.message());
  }
  runs_[t.id] = std::move(run);
}

void TensorBoardSink::OnAttemptStarted(const Trial& t, const std::string& trial_dir) {
  Start(t, root_.empty() ? trial_dir : RunDir(root_, t.number));
}

void TensorBoardSink::OnAttemptRestarted(const Trial& t) {
  auto it = runs_.find(t.id);
  if (it == runs_.end() || it->second->broken) return;
  std::string dir = it->second->dir;
  runs_.erase(it);  // closes the file before StartRun removes it
  Start(t, dir);
}

void TensorBoardSink::OnReport(const Trial& t, const MetricReport& r) {
  auto it = runs_.find(t.id);
  if (it == runs_.end()) return;
  it->second->last_step = std::max(it->second->last_step, r.step);
  for (const auto& [name, v] : r.values) Write(t, it->second.get(), ScalarEvent(r.time, r.step, name, v));
}

void TensorBoardSink::OnTrialFinished(const Trial& t, double time) {
  auto it = runs_.find(t.id);
  if (it == runs_.end()) return;  // never started in this run of the tuner
  for (const auto& [name, v] : FinalMetrics(final_metrics_, t)) {
    Write(t, it->second.get(), ScalarEvent(time, it->second->last_step, name, v));
  }
  Write(t, it->second.get(), SessionEndEvent(time, StatusOf(t.state)));
  runs_.erase(it);
}

std::vector<std::string> TensorBoardSink::Finish() {
  runs_.clear();
  return problems_;
}

Status WriteTrialEvents(const std::string& run_dir, const Trial& t, double started_at,
                        const std::vector<MetricReport>& reports, std::optional<double> ended_at,
                        const FinalMetricNames& final_metrics) {
  TfRecordWriter w;
  TUNE_RETURN_IF_ERROR(StartRun(&w, run_dir, t, started_at));
  int64_t last_step = 0;
  for (const MetricReport& r : reports) {
    TUNE_RETURN_IF_ERROR(WriteReport(&w, r));
    last_step = std::max(last_step, r.step);
  }
  if (ended_at) {
    for (const auto& [name, v] : FinalMetrics(final_metrics, t))
      TUNE_RETURN_IF_ERROR(w.Append(ScalarEvent(*ended_at, last_step, name, v)));
  }
  if (ended_at && IsFinished(t.state)) TUNE_RETURN_IF_ERROR(w.Append(SessionEndEvent(*ended_at, StatusOf(t.state))));
  return Status::Ok();
}

}  // namespace tune::tracking
