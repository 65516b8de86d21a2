// Loopback servers and a storage probe for the MLflow tests: a stand-in for
// MLflow's REST API that checks keys by MLflow's rules, a server that
// answers one byte at a time, and a Storage that forwards to SQLite while
// counting whole-experiment reads (and can be told to throw).
#pragma once

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "storage/storage.h"

namespace tune::testing {

// MLflow's REST API as far as the sink uses it, on 127.0.0.1: one
// experiment (id "1"), runs created on demand, and runs/log-batch refused
// as a whole (HTTP 400 INVALID_PARAMETER_VALUE) when any key breaks
// MLflow's rules (mlflow/utils/validation.py; here `\w` is ASCII, so a key
// with any other letter is refused too, as MLflow refuses "€").
class FakeMlflow {
 public:
  struct Seen {
    std::string path, authorization, body;
  };

  FakeMlflow() {
    server_.Get(R"(/.*)", [this](const httplib::Request& q, httplib::Response& r) { Handle(q, r); });
    server_.Post(R"(/.*)", [this](const httplib::Request& q, httplib::Response& r) { Handle(q, r); });
    server_.set_tcp_nodelay(true);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeMlflow() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::string uri() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lk(mu_);
    return seen_;
  }
  // Every metric point logged (accepted), as (key, value).
  std::vector<std::pair<std::string, double>> points() {
    std::lock_guard<std::mutex> lk(mu_);
    return points_;
  }

  static bool Refuses(const std::string& key) {
    static const std::regex allowed(R"(^[/\w.\- :]*$)");
    if (!std::regex_match(key, allowed) || key.empty() || key[0] == '/' || key.rfind("..", 0) == 0) return true;
    size_t start = 0;
    while (true) {
      const size_t slash = key.find('/', start);
      const std::string part = key.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      if (part.empty() || part == "." || part == "..") return true;
      if (slash == std::string::npos) return false;
      start = slash + 1;
    }
  }

 private:
  void Handle(const httplib::Request& q, httplib::Response& r) {
    using nlohmann::json;
    std::lock_guard<std::mutex> lk(mu_);
    seen_.push_back({q.path, q.get_header_value("Authorization"), q.body});
    const std::string endpoint = q.path.substr(q.path.find("/api/2.0/mlflow/") + 16);
    json out = json::object();
    if (endpoint == "experiments/get-by-name") {
      out = {{"experiment", {{"experiment_id", "1"}, {"lifecycle_stage", "active"}}}};
    } else if (endpoint == "runs/search") {
      out = {{"runs", json::array()}};
    } else if (endpoint == "runs/create") {
      out = {{"run", {{"info", {{"run_id", "run" + std::to_string(++runs_)}}}}}};
    } else if (endpoint == "runs/log-batch") {
      json b = json::parse(q.body, nullptr, false);
      for (const char* kind : {"metrics", "params", "tags"}) {
        for (const json& item : b.value(kind, json::array())) {
          const std::string key = item.value("key", "");
          if (Refuses(key)) {
            r.status = 400;
            r.set_content(json{{"error_code", "INVALID_PARAMETER_VALUE"},
                               {"message", "Invalid value \"" + key + "\" for parameter '" + kind + "[0].key'"}}
                              .dump(-1, ' ', false, json::error_handler_t::replace),
                          "application/json");
            return;
          }
        }
      }
      for (const json& m : b.value("metrics", json::array())) points_.emplace_back(m["key"], m["value"]);
    }
    r.set_content(out.dump(), "application/json");
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Seen> seen_;
  std::vector<std::pair<std::string, double>> points_;
  int runs_ = 0;
};

// A loopback server that reads each request's head, then answers
// "HTTP/1.1 200 OK" with a long body one byte every `every`, for as long
// as it runs: per-read timeouts never trip on it.
class TrickleServer {
 public:
  explicit TrickleServer(std::chrono::milliseconds every = std::chrono::milliseconds(50)) : every_(every) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 || listen(listen_fd_, 16) != 0) {
      throw std::runtime_error("TrickleServer: cannot listen on loopback");
    }
    port_ = ntohs(a.sin_port);
    accept_ = std::thread([this] { Accept(); });
  }
  ~TrickleServer() { Stop(); }

  std::string uri() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }
  // Ends every connection and the server; idempotent.
  void Stop() {
    if (stopped_.exchange(true)) return;
    shutdown(listen_fd_, SHUT_RDWR);
    accept_.join();
    close(listen_fd_);
    for (std::thread& t : conns_) t.join();
  }

 private:
  void Accept() {
    while (!stopped_) {
      int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      conns_.emplace_back([this, fd] { Serve(fd); });
    }
  }
  void Serve(int fd) {
    timeval tv{0, 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string head;
    char buf[4096];
    while (!stopped_ && head.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n == 0) break;
      if (n > 0) head.append(buf, static_cast<size_t>(n));
    }
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{";
    for (size_t i = 0; !stopped_; ++i) {
      const char c = i < answer.size() ? answer[i] : ' ';
      if (send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(every_);
    }
    close(fd);
  }

  std::chrono::milliseconds every_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<int> connections_{0};
  std::thread accept_;
  std::vector<std::thread> conns_;
};

// Forwards to a real Storage, counting the calls that read a whole
// experiment's trials; `throw_on_trial_end` makes GetTrialSummary throw (an
// unexpected exception in the sink's delivery thread).
class StorageProbe : public Storage {
 public:
  explicit StorageProbe(Storage* real) : real_(real) {}
  std::atomic<int> whole_reads{0};
  std::atomic<bool> throw_on_trial_end{false};

  Result<ExperimentId> CreateExperiment(const std::string& n, const std::string& s, uint64_t seed) override {
    return real_->CreateExperiment(n, s, seed);
  }
  Result<ExperimentRecord> FindExperiment(const std::string& n) override { return real_->FindExperiment(n); }
  Result<std::vector<ExperimentRecord>> ListExperiments() override { return real_->ListExperiments(); }
  Status SetExperimentState(ExperimentId id, ExperimentState s, const std::string& m) override {
    return real_->SetExperimentState(id, s, m);
  }
  Status SetExperimentSpec(ExperimentId id, const std::string& s) override { return real_->SetExperimentSpec(id, s); }
  Status SetExperimentRunSeconds(ExperimentId id, double s) override { return real_->SetExperimentRunSeconds(id, s); }
  Result<Trial> CreateTrial(ExperimentId e, const ParamMap& p) override { return real_->CreateTrial(e, p); }
  Status StartTrial(TrialId t, int a, const std::string& l) override { return real_->StartTrial(t, a, l); }
  Status AppendReport(TrialId t, int a, const MetricReport& r, std::optional<double> o) override {
    return real_->AppendReport(t, a, r, o);
  }
  Status AppendExcludedReport(TrialId t, int a, const MetricReport& r, std::optional<double> o,
                              const std::string& why) override {
    return real_->AppendExcludedReport(t, a, r, o, why);
  }
  Status ExcludeAttemptReports(TrialId t, int a, const std::string& why,
                               std::optional<int64_t> from_step) override {
    return real_->ExcludeAttemptReports(t, a, why, from_step);
  }
  Status RetryTrial(TrialId t, const std::string& m) override { return real_->RetryTrial(t, m); }
  Status RetryFailedTrial(TrialId t, const std::string& m) override { return real_->RetryFailedTrial(t, m); }
  Status PauseTrial(TrialId t, const std::string& m) override { return real_->PauseTrial(t, m); }
  Status ContinueTrial(TrialId t, int a, const std::string& l, int64_t through) override {
    return real_->ContinueTrial(t, a, l, through);
  }
  Status RecordExploit(TrialId t, int64_t step, TrialId donor, int64_t donor_step, const ParamMap& after) override {
    return real_->RecordExploit(t, step, donor, donor_step, after);
  }
  Result<std::vector<StoredExploit>> ListExploits(ExperimentId e) override { return real_->ListExploits(e); }
  Status FinishTrial(TrialId t, TrialState s, std::optional<double> v, std::optional<int64_t> rung,
                     const std::string& m) override {
    return real_->FinishTrial(t, s, v, rung, m);
  }
  Result<History> ListTrials(ExperimentId e) override {
    ++whole_reads;
    return real_->ListTrials(e);
  }
  Result<std::vector<TrialRecord>> ListTrialRecords(ExperimentId e) override {
    ++whole_reads;
    return real_->ListTrialRecords(e);
  }
  Result<std::vector<TrialRecord>> ListTrialSummaries(ExperimentId e) override {
    ++whole_reads;
    return real_->ListTrialSummaries(e);
  }
  Result<TrialRecord> GetTrialSummary(TrialId t) override {
    if (throw_on_trial_end) throw std::runtime_error("injected fault");
    return real_->GetTrialSummary(t);
  }
  Result<TrialTally> TallyTrials(ExperimentId e, bool maximize) override { return real_->TallyTrials(e, maximize); }
  Result<std::vector<StoredReport>> ListReports(ExperimentId e) override {
    ++whole_reads;
    return real_->ListReports(e);
  }
  Result<std::vector<StoredReport>> ListTrialReports(TrialId t) override { return real_->ListTrialReports(t); }
  Status SetTrackingRun(ExperimentId e, const std::string& target, int n, const std::string& id) override {
    return real_->SetTrackingRun(e, target, n, id);
  }
  Result<std::map<int, std::string>> ListTrackingRuns(ExperimentId e, const std::string& target) override {
    return real_->ListTrackingRuns(e, target);
  }
  Result<int64_t> DataVersion() override { return real_->DataVersion(); }

 private:
  Storage* real_;
};

}  // namespace tune::testing
