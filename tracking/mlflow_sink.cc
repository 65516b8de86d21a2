#include "tracking/mlflow_sink.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace tune::tracking {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr size_t kMaxProblemLines = 20;
// How far into the queue the reports of one trial are gathered into a batch.
constexpr size_t kMaxScan = 5000;

std::string Seconds(std::chrono::milliseconds d) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", static_cast<double>(d.count()) / 1000.0);
  return b;
}

std::string Plural(size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

MlflowSink::MlflowSink(MlflowTarget target, Storage* storage, MlflowSinkOptions options)
    : options_(std::move(options)), storage_(storage), final_metrics_(target.final_metrics) {
  client_ = std::make_unique<MlflowClient>(target.connection, options_.request_timeout);
  uri_ = client_->connection().tracking_uri;  // without credentials
  if (std::string w = client_->connection().PlainHttpWarning(); !w.empty()) Warn(w);
  runs_ = std::make_unique<MlflowRuns>(client_.get(), storage_, std::move(target));
  thread_ = std::thread([this] { Loop(); });
}

MlflowSink::~MlflowSink() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = abort_ = true;
  }
  cv_.notify_all();
  client_->Cancel();
  if (thread_.joinable()) thread_.join();
}

void MlflowSink::Warn(const std::string& line) {
  try {
    if (options_.warn) {
      options_.warn(line);
      return;
    }
  } catch (...) {
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

void MlflowSink::Push(Item item) {
  bool was_empty = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return;
    if (dead_) {
      ++refused_;
      return;
    }
    if (queue_.size() >= options_.max_queued) {
      ++dropped_;
      return;
    }
    was_empty = queue_.empty();
    item.queued = std::chrono::steady_clock::now();
    queue_.push_back(std::move(item));
  }
  // The delivery thread waits only for an empty queue to fill; otherwise it
  // looks at the queue again after each delivery by itself.
  if (was_empty) cv_.notify_all();
}

void MlflowSink::OnAttemptStarted(const Trial& t, const std::string&) {
  Push({Kind::kTrialStart, t, {}, Now()});
}

void MlflowSink::OnReport(const Trial& t, const MetricReport& r) {
  Item item{Kind::kReport, {}, r, r.time};
  item.trial.id = t.id;
  item.trial.number = t.number;
  Push(std::move(item));
}

void MlflowSink::OnTrialFinished(const Trial& t, double time) { Push({Kind::kTrialEnd, t, {}, time}); }

Status MlflowSink::LogBatch(const std::string& run, std::vector<MlflowMetric> metrics, MlflowTags params,
                            MlflowTags tags) {
  auto known = [&](const char* kind, const std::string& key) { return refused_keys_.count({kind, key}) > 0; };
  metrics.erase(std::remove_if(metrics.begin(), metrics.end(), [&](const MlflowMetric& m) { return known("metric", m.key); }),
                metrics.end());
  params.erase(std::remove_if(params.begin(), params.end(), [&](const auto& kv) { return known("param", kv.first); }),
               params.end());
  tags.erase(std::remove_if(tags.begin(), tags.end(), [&](const auto& kv) { return known("tag", kv.first); }),
             tags.end());
  if (metrics.empty() && params.empty() && tags.empty()) return Status::Ok();
  std::vector<RefusedKey> refused;
  Status st = client_->LogBatch(run, metrics, params, tags, &refused);
  for (const RefusedKey& r : refused) {
    if (!refused_keys_.insert({r.kind, r.key}).second) continue;
    std::string quoted = "\"";
    for (char c : r.key) quoted += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    quoted += "\"";
    Warn("tune: MLflow at " + uri_ + " does not take the " + r.kind + " key " + quoted + " (" + r.why +
         "); it is left out of every run of this experiment, the database keeps it");
  }
  return st;
}

Status MlflowSink::Deliver(const std::vector<Item>& items) {
  TUNE_RETURN_IF_ERROR(runs_->Connect());
  if (!parent_running_) {
    // The parent run is RUNNING while tune runs (again, after a resume).
    bool created = false;
    TUNE_ASSIGN_OR_RETURN(std::string parent, runs_->ParentRun(items.front().time, &created));
    if (!created) TUNE_RETURN_IF_ERROR(client_->UpdateRun(parent, "RUNNING", std::nullopt));
    parent_running_ = true;
  }
  const Item& first = items.front();
  if (first.kind == Kind::kExperimentEnd) {
    TUNE_ASSIGN_OR_RETURN(std::string parent, runs_->ParentRun(first.time));
    TUNE_ASSIGN_OR_RETURN(MlflowRuns::ParentEnd end, runs_->ParentEndFromStorage(first.time));
    TUNE_RETURN_IF_ERROR(LogBatch(parent, end.metrics, {}, end.tags));
    return client_->UpdateRun(parent, end.status, end.end_time_ms);
  }
  // One trial's items, in order: perhaps its start, reports, perhaps its
  // end (gathered by Deliveries()); one runs/log-batch carries them all.
  const Item* start = first.kind == Kind::kTrialStart ? &first : nullptr;
  const Item* end = items.back().kind == Kind::kTrialEnd ? &items.back() : nullptr;
  bool created = false;
  TUNE_ASSIGN_OR_RETURN(std::string run, runs_->TrialRun(first.trial.number, first.time, &created));
  MlflowTags params, tags;
  std::vector<MlflowMetric> metrics;
  if (start) {
    params = MlflowRuns::Params(start->trial);
    tags = MlflowRuns::StartTags(start->trial);
  }
  for (const Item& i : items) {
    if (i.kind != Kind::kReport) continue;
    std::vector<MlflowMetric> m = MlflowRuns::Metrics(i.report);
    metrics.insert(metrics.end(), m.begin(), m.end());
  }
  double ended = 0;
  if (end) {
    // The pruned rung, the error message and the end time as stored (what
    // `tune export mlflow` sends too) live in the database: one row.
    TrialRecord record;
    record.trial = end->trial;
    ended = end->time;
    if (auto stored = storage_->GetTrialSummary(end->trial.id); stored.ok()) {
      record.pruned_rung = stored->pruned_rung;
      record.message = stored->message;
      record.last_step = stored->last_step;
      ended = stored->ended_at.value_or(ended);
    }
    // Several objectives or constraints: the values the tuner ranked on.
    for (MlflowMetric& m : MlflowRuns::FinalValues(final_metrics_, end->trial, record.last_step.value_or(0), ended))
      metrics.push_back(std::move(m));
    // The end's tags replace the start's of the same key (tune.state):
    // one request must not set a tag twice.
    for (auto& tag : MlflowRuns::EndTags(record)) {
      auto same = std::find_if(tags.begin(), tags.end(), [&](const auto& kv) { return kv.first == tag.first; });
      if (same != tags.end()) same->second = tag.second; else tags.emplace_back(tag.first, tag.second);
    }
  }
  TUNE_RETURN_IF_ERROR(LogBatch(run, std::move(metrics), std::move(params), std::move(tags)));
  // A retried attempt or a resumed trial: its run ended earlier.
  if (start && !created && !end) return client_->UpdateRun(run, "RUNNING", std::nullopt);
  if (end) return client_->UpdateRun(run, MlflowRuns::RunStatus(end->trial.state), MlflowRuns::Millis(ended));
  return Status::Ok();
}

// "trial 3's start", "4 reports of trial 3", "trial 3's start, 2 reports
// and end", "the experiment's end".
std::string MlflowSink::Describe(const std::vector<Item>& items) {
  if (items.front().kind == Kind::kExperimentEnd) return "the experiment's end";
  const std::string trial = "trial " + std::to_string(items.front().trial.number);
  const bool start = items.front().kind == Kind::kTrialStart;
  const bool end = items.back().kind == Kind::kTrialEnd;
  const size_t reports = std::count_if(items.begin(), items.end(), [](const Item& i) { return i.kind == Kind::kReport; });
  if (!start && !end) return Plural(reports, "report") + " of " + trial;
  std::vector<std::string> parts;
  if (start) parts.push_back("start");
  if (reports) parts.push_back(Plural(reports, "report"));
  if (end) parts.push_back("end");
  std::string out = trial + "'s ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

void MlflowSink::Loop() {
  try {
    Deliveries();
  } catch (const std::exception& e) {
    Died(e.what());
  } catch (...) {
    Died("an exception that is not a std::exception");
  }
}

void MlflowSink::Died(const std::string& what) {
  std::string line;
  {
    std::lock_guard<std::mutex> lk(mu_);
    dead_ = true;
    // Whatever waits is not sent: counted as refused, listed by Finish().
    if (broken_.empty()) broken_ = "logging stopped on an unexpected error (" + what + ")";
    refused_ += queue_.size();
    queue_.clear();
    line = "tune: MLflow at " + uri_ + ": " + broken_ + "; the run goes on without MLflow";
  }
  cv_.notify_all();
  Warn(line);
}

void MlflowSink::Deliveries() {
  std::chrono::milliseconds backoff = options_.backoff_initial;
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    cv_.wait(lk, [&] { return !queue_.empty() || stopping_; });
    if (abort_ || queue_.empty()) break;
    // While the run goes on, the front item waits until it is `linger`
    // old, so that its trial's next items join it (nothing waits once the
    // queue is behind).
    if (!stopping_ && broken_.empty()) {
      const auto ready = queue_.front().queued + options_.linger;
      if (std::chrono::steady_clock::now() < ready) {
        cv_.wait_until(lk, ready, [&] { return stopping_; });
        continue;
      }
    }
    // The front item and, if it is a trial's, the trial's next items too:
    // reports (within log-batch's limits) up to and including its end, but
    // not its next start (a new attempt). Items of other trials keep their
    // places: each run still gets its items in order.
    std::vector<size_t> picked{0};
    std::vector<Item> items{queue_.front()};
    const Item& front = queue_.front();
    if (front.kind != Kind::kExperimentEnd && front.kind != Kind::kTrialEnd) {
      size_t metrics = front.kind == Kind::kReport ? front.report.values.size() : 0;
      for (size_t i = 1; i < queue_.size() && i < kMaxScan; ++i) {
        const Item& next = queue_[i];
        if (next.kind == Kind::kExperimentEnd || next.kind == Kind::kTrialStart) {
          if (next.trial.id == front.trial.id || next.kind == Kind::kExperimentEnd) break;
          continue;
        }
        if (next.trial.id != front.trial.id) continue;
        if (next.kind == Kind::kReport) {
          if (metrics + next.report.values.size() > MlflowClient::kMaxMetricsPerBatch) break;
          metrics += next.report.values.size();
        }
        picked.push_back(i);
        items.push_back(next);
        if (next.kind == Kind::kTrialEnd) break;
      }
    }
    Status st = Status::Ok();
    if (broken_.empty()) {
      lk.unlock();
      st = Deliver(items);
      lk.lock();
    }
    if (!st.ok() && st.code() == StatusCode::kUnavailable) {
      // Try again after a pause, for as long as the run lasts.
      last_error_ = st.message();
      if (cv_.wait_for(lk, backoff, [&] { return abort_; })) break;
      backoff = std::min(backoff * 2, options_.backoff_max);
      continue;
    }
    backoff = options_.backoff_initial;
    if (!st.ok()) {
      if (!runs_->connected()) {
        // Refused before anything was logged (credentials, a deleted
        // experiment): nothing else can get through either.
        broken_ = st.message();
      } else if (problems_.size() < kMaxProblemLines) {
        problems_.push_back("MLflow: " + Describe(items) + ": " + st.message());
      } else {
        ++more_problems_;
      }
    }
    if (!broken_.empty()) refused_ += picked.size();
    for (auto it = picked.rbegin(); it != picked.rend(); ++it)
      queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(*it));
    ++handled_;
    cv_.notify_all();
  }
}

std::vector<std::string> MlflowSink::Finish() {
  if (finished_) return {};
  finished_ = true;
  Push({Kind::kExperimentEnd, {}, {}, Now()});
  std::vector<std::string> out;
  std::unique_lock<std::mutex> lk(mu_);
  stopping_ = true;
  cv_.notify_all();
  // Waits while items get through (a server catching up after a restart
  // may need longer than flush_timeout in all); gives up after flush_timeout
  // without progress, or after max_flush in all. Then the call in flight
  // is cut off (a server that answers a byte at a time never ends it), and
  // the delivery thread stops at once.
  const auto start = std::chrono::steady_clock::now();
  const auto hard = start + options_.max_flush;
  bool out_of_time = false;
  while (!queue_.empty()) {
    const size_t seen = handled_;
    const auto deadline = std::min(hard, std::chrono::steady_clock::now() + options_.flush_timeout);
    if (!cv_.wait_until(lk, deadline, [&] { return queue_.empty() || handled_ != seen; })) {
      out_of_time = deadline == hard;
      break;
    }
    if (std::chrono::steady_clock::now() >= hard) {
      out_of_time = !queue_.empty();
      break;
    }
  }
  if (!queue_.empty()) abort_ = true;
  cv_.notify_all();
  lk.unlock();
  if (abort_) client_->Cancel();
  thread_.join();
  lk.lock();
  const std::string hint = "; `tune export mlflow` sends what is missing once the server is reachable";
  if (dead_) {
    out.push_back("MLflow at " + uri_ + ": " + Plural(refused_, "item") + " not sent: " + broken_ + hint);
  } else if (!broken_.empty()) {
    out.push_back("MLflow at " + uri_ + ": nothing was logged (" + Plural(refused_, "item") + "): " + broken_);
  }
  out.insert(out.end(), problems_.begin(), problems_.end());
  if (more_problems_ > 0) out.push_back("MLflow: " + Plural(more_problems_, "more item") + " refused");
  if (!queue_.empty()) {
    size_t starts = 0, reports = 0, ends = 0;
    bool experiment_end = false;
    for (const Item& i : queue_) {
      starts += i.kind == Kind::kTrialStart;
      reports += i.kind == Kind::kReport;
      ends += i.kind == Kind::kTrialEnd;
      experiment_end |= i.kind == Kind::kExperimentEnd;
    }
    std::string what;
    auto add = [&](const std::string& w) { what += (what.empty() ? "" : ", ") + w; };
    if (starts) add(Plural(starts, "trial start"));
    if (reports) add(Plural(reports, "report"));
    if (ends) add(Plural(ends, "trial end"));
    if (experiment_end) add("the experiment's end");
    const std::string why = out_of_time ? "the end-of-run flush stopped after " + Seconds(options_.max_flush) + " s"
                                        : "nothing got through for " + Seconds(options_.flush_timeout) +
                                              " s after the run";
    out.push_back("MLflow at " + uri_ + ": " + what + " not delivered (" + why + "; last error: " +
                  (last_error_.empty() ? "none" : last_error_) + ")" + hint);
  }
  if (dropped_ > 0) {
    out.push_back("MLflow at " + uri_ + ": " + Plural(dropped_, "item") + " dropped: the queue was full (" +
                  std::to_string(options_.max_queued) + " items) while the server was unreachable" + hint);
  }
  return out;
}

}  // namespace tune::tracking
