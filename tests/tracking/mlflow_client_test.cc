// MlflowClient and MlflowSink against cpp-httplib's server on loopback
// standing in for MLflow (what the requests carry: auth, batch limits), and
// against no server at all (the sink gives up at the end and says what it
// could not deliver). The real MLflow server: mlflow_e2e_test.cc.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/common/scoped_env.h"
#include "tests/common/temp_dir.h"
#include "tracking/mlflow_client.h"
#include "tracking/mlflow_sink.h"

namespace tune::tracking {
namespace {

using nlohmann::json;

using Env = testing::ScopedEnv;

// A loopback HTTP server recording every request; answers every one with
// `status` and `body`.
class StandIn {
 public:
  explicit StandIn(int status = 200, std::string body = "{}") : status_(status), body_(std::move(body)) {
    server_.Post(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) { Record(req, res); });
    server_.Get(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) { Record(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~StandIn() {
    server_.stop();
    thread_.join();
  }
  std::string uri() const { return "http://127.0.0.1:" + std::to_string(port_); }
  struct Seen {
    std::string path, authorization, body;
  };
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lk(mu_);
    return seen_;
  }

 private:
  void Record(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lk(mu_);
    seen_.push_back({req.path, req.get_header_value("Authorization"), req.body});
    res.status = status_;
    res.set_content(body_, "application/json");
  }
  int status_;
  std::string body_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

TEST_CASE("mlflow: the tracking URI and credentials come as MLflow's clients read them", "[tracking][mlflow]") {
  Env env;
  env.Set("MLFLOW_TRACKING_URI", "http://env-host:5000/");
  env.Set("MLFLOW_TRACKING_TOKEN", nullptr);
  env.Set("MLFLOW_TRACKING_USERNAME", nullptr);
  env.Set("MLFLOW_TRACKING_PASSWORD", nullptr);
  auto from_env = MlflowConnection::FromEnvironment("");
  REQUIRE(from_env.ok());
  CHECK(from_env->tracking_uri == "http://env-host:5000");
  auto from_spec = MlflowConnection::FromEnvironment("https://spec-host/mlflow");
  REQUIRE(from_spec.ok());
  CHECK(from_spec->tracking_uri == "https://spec-host/mlflow");

  env.Set("MLFLOW_TRACKING_URI", "./mlruns");
  auto local = MlflowConnection::FromEnvironment("");
  CHECK(local.status().IsInvalidArgument());
  CHECK(local.status().message().find("MLFLOW_TRACKING_URI: expected an http:// or https:// URL") !=
        std::string::npos);
  env.Set("MLFLOW_TRACKING_URI", nullptr);
  auto none = MlflowConnection::FromEnvironment("");
  CHECK(none.status().IsInvalidArgument());
  CHECK(none.status().message().find("MLFLOW_TRACKING_URI") != std::string::npos);
}

TEST_CASE("mlflow: basic auth when username and password are set, else the bearer token", "[tracking][mlflow]") {
  StandIn server;
  Env env;
  env.Set("MLFLOW_TRACKING_TOKEN", "tok");
  env.Set("MLFLOW_TRACKING_USERNAME", "ann");
  env.Set("MLFLOW_TRACKING_PASSWORD", nullptr);
  {
    MlflowClient client(*MlflowConnection::FromEnvironment(server.uri()));
    REQUIRE(client.UpdateRun("r1", "FINISHED", 5).ok());
  }
  env.Set("MLFLOW_TRACKING_PASSWORD", "secret");
  {
    MlflowClient client(*MlflowConnection::FromEnvironment(server.uri()));
    REQUIRE(client.UpdateRun("r1", "FINISHED", 5).ok());
  }
  auto seen = server.seen();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].path == "/api/2.0/mlflow/runs/update");
  CHECK(seen[0].authorization == "Bearer tok");
  CHECK(seen[1].authorization == "Basic YW5uOnNlY3JldA==");  // ann:secret
  CHECK(json::parse(seen[0].body) == json{{"run_id", "r1"}, {"status", "FINISHED"}, {"end_time", 5}});
}

// A server (or a proxy in front of it) whose answers are JSON of the wrong
// shape: every call returns Unavailable, none throws out of the client.
TEST_CASE("mlflow: answers of the wrong shape fail the call, never the caller", "[tracking][mlflow]") {
  for (const char* body : {R"({"run": 5, "runs": "x", "metrics": [1], "experiment": []})",
                           R"({"run": {"info": {"run_id": 7, "start_time": "soon"}}, "runs": [{"info": 3}]})",
                           R"({"experiment": {"experiment_id": {}}, "experiment_id": false, "next_page_token": 1})",
                           R"({"metrics": [{"key": "loss", "value": "x", "timestamp": 2e88, "step": "1e3"}]})"}) {
    INFO(body);
    StandIn server(200, body);
    MlflowClient client(*MlflowConnection::FromEnvironment(server.uri()));
    auto create = client.CreateRun("1", "t", 0, {});
    CHECK_FALSE(create.ok());
    auto get = client.GetRun("r1");
    if (!get.ok()) CHECK(get.status().code() == StatusCode::kUnavailable);
    auto search = client.SearchRuns("1", "");
    if (!search.ok()) CHECK(search.status().code() == StatusCode::kUnavailable);
    auto experiment = client.GetExperimentByName("e");
    if (!experiment.ok()) CHECK(experiment.status().code() == StatusCode::kUnavailable);
    auto history = client.GetMetricHistory("r1", "loss");
    if (history.ok()) {
      // Numbers that are not integers read as 0, and strings as what they spell.
      for (const MlflowMetric& m : *history) {
        CHECK(m.timestamp_ms == 0);
        CHECK(m.step == 0);
      }
    } else {
      CHECK(history.status().code() == StatusCode::kUnavailable);
    }
  }
  // An error answer whose fields are not strings is still an error answer.
  for (int code : {404, 503}) {
    StandIn failing(code, R"({"error_code": 5, "message": {"text": "down"}})");
    MlflowClient client(*MlflowConnection::FromEnvironment(failing.uri()));
    auto get = client.GetRun("r1");
    REQUIRE_FALSE(get.ok());
    CHECK(get.status().code() == (code == 503 ? StatusCode::kUnavailable : StatusCode::kInvalidArgument));
    CHECK(get.status().message().find("HTTP " + std::to_string(code)) != std::string::npos);
  }
  StandIn server(200, R"({"metrics": [{"key": "loss", "value": "0.5", "timestamp": "17", "step": 3}]})");
  MlflowClient client(*MlflowConnection::FromEnvironment(server.uri()));
  auto history = client.GetMetricHistory("r1", "loss");
  REQUIRE(history.ok());
  REQUIRE(history->size() == 1);
  CHECK((*history)[0].value == 0.5);
  CHECK((*history)[0].timestamp_ms == 17);
  CHECK((*history)[0].step == 3);
}

TEST_CASE("mlflow: log-batch is split within MLflow's limits, in order", "[tracking][mlflow]") {
  StandIn server;
  MlflowConnection c;
  c.tracking_uri = server.uri() + "/prefix";
  MlflowClient client(c);
  std::vector<MlflowMetric> metrics;
  for (int i = 0; i < 2500; ++i) metrics.push_back({"loss", i * 0.5, 1000 + i, i});
  MlflowTags params, tags;
  for (int i = 0; i < 150; ++i) params.emplace_back("p" + std::to_string(i), std::to_string(i));
  for (int i = 0; i < 120; ++i) tags.emplace_back("t" + std::to_string(i), "v");
  REQUIRE(client.LogBatch("run", metrics, params, tags).ok());
  size_t m = 0, p = 0, t = 0;
  for (const auto& s : server.seen()) {
    CHECK(s.path == "/prefix/api/2.0/mlflow/runs/log-batch");
    json b = json::parse(s.body);
    CHECK(b["run_id"] == "run");
    CHECK(b["metrics"].size() <= 1000);
    CHECK(b["params"].size() <= 100);
    CHECK(b["tags"].size() <= 100);
    CHECK(b["metrics"].size() + b["params"].size() + b["tags"].size() <= 1000);
    for (const json& x : b["metrics"]) {
      CHECK(x["step"] == m);  // in order, each once
      CHECK(x["value"] == m * 0.5);
      CHECK(x["timestamp"] == 1000 + m);
      ++m;
    }
    for (const json& x : b["params"]) CHECK(x["key"] == "p" + std::to_string(p++));
    for (const json& x : b["tags"]) CHECK(x["key"] == "t" + std::to_string(t++));
  }
  CHECK(m == 2500);
  CHECK(p == 150);
  CHECK(t == 120);
}

TEST_CASE("mlflow: with no server the sink returns at once and lists what it could not deliver",
          "[tracking][mlflow]") {
  testing::TempDir dir;
  auto storage = OpenSqliteStorage(dir.File("t.db"));
  REQUIRE(storage.ok());
  ExperimentId e = *(*storage)->CreateExperiment("exp", "{}", 1);
  Trial t = *(*storage)->CreateTrial(e, {{"lr", 0.5}});
  // A port nobody listens on: bind one, then close it.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  const int port = ntohs(a.sin_port);
  MlflowTarget target;
  target.connection.tracking_uri = "http://127.0.0.1:" + std::to_string(port);
  target.tune_experiment = "exp";
  target.objective_metric = "loss";
  MlflowSinkOptions options;
  options.flush_timeout = std::chrono::milliseconds(300);
  options.max_queued = 4;  // start, 2 reports, end; the rest is dropped
  MlflowSink sink(target, storage->get(), options);
  sink.OnAttemptStarted(t, dir.File("trial"));
  for (int step = 1; step <= 4; ++step) {
    MetricReport r;
    r.step = step;
    r.values["loss"] = 1.0 / step;
    r.time = 1700000000 + step;
    sink.OnReport(t, r);
  }
  t.state = TrialState::kCompleted;
  sink.OnTrialFinished(t, 1700000010);
  std::vector<std::string> lines = sink.Finish();
  INFO(::Catch::Detail::stringify(lines));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("1 trial start, 3 reports not delivered (nothing got through for 0.3 s after the run; last error: ") != std::string::npos);
  CHECK(lines[0].find("no answer (Connection error)") != std::string::npos);  // the last error
  CHECK(lines[1].find("3 items dropped: the queue was full (4 items)") != std::string::npos);
  CHECK(lines[1].find("tune export mlflow") != std::string::npos);
}

TEST_CASE("mlflow: a refused login stops the logging at once and says so in one line", "[tracking][mlflow]") {
  StandIn server(401, R"({"error_code": "UNAUTHENTICATED", "message": "You are not authenticated."})");
  testing::TempDir dir;
  auto storage = OpenSqliteStorage(dir.File("t.db"));
  REQUIRE(storage.ok());
  ExperimentId e = *(*storage)->CreateExperiment("exp", "{}", 1);
  Trial t = *(*storage)->CreateTrial(e, {{"lr", 0.5}});
  MlflowTarget target;
  target.connection.tracking_uri = server.uri();
  target.tune_experiment = "exp";
  target.objective_metric = "loss";
  MlflowSink sink(target, storage->get());
  sink.OnAttemptStarted(t, dir.File("trial"));
  MetricReport r;
  r.step = 1;
  r.values["loss"] = 0.25;
  sink.OnReport(t, r);
  t.state = TrialState::kCompleted;
  sink.OnTrialFinished(t, 1700000010);
  std::vector<std::string> lines = sink.Finish();
  INFO(::Catch::Detail::stringify(lines));
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("nothing was logged (4 items): MLflow experiments/get-by-name at " + server.uri() +
                      ": HTTP 401 UNAUTHENTICATED: You are not authenticated. (check MLFLOW_TRACKING_TOKEN") !=
        std::string::npos);
  CHECK(server.seen().size() == 1);  // one try, not one per item
}

}  // namespace
}  // namespace tune::tracking
