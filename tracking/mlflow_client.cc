#include "tracking/mlflow_client.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>

#include "tuner/core/json_integer.h"
#include "tuner/core/json_text.h"

namespace tune::tracking {
namespace {

using nlohmann::json;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// MLflow's JSON (protobuf JSON mapping): doubles may be "NaN", "Infinity"
// or "-Infinity"; int64 fields may come as strings.
json Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}
double ReadDouble(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
    double d = std::nan("");
    std::from_chars(s.data(), s.data() + s.size(), d);
    return d;
  }
  return std::nan("");
}
// MLflow's JSON writes int64 fields as strings (proto3 JSON) or numbers; a
// value that is neither a fitting integer nor such a string reads as 0.
int64_t ReadInt(const json& v) {
  if (std::optional<int64_t> n = JsonInteger<int64_t>(v)) return *n;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    int64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size()) return n;
  }
  return 0;
}

// Runs `decode` on a server's answer. A field of an unexpected type (the
// json accessors throw) becomes Unavailable, as an answer that is not JSON
// does: a misbehaving server fails the call, never the tuner.
template <typename F>
auto Decode(const std::string& endpoint, F decode) -> Result<decltype(decode())> {
  try {
    return decode();
  } catch (const std::exception& e) {
    return Status::Unavailable("MLflow " + endpoint + ": unexpected answer (" + e.what() + ")");
  }
}

json KeyValues(const MlflowTags& kv) {
  json a = json::array();
  for (const auto& [k, v] : kv) a.push_back({{"key", k}, {"value", v}});
  return a;
}

MlflowRun ParseRun(const json& j) {
  MlflowRun r;
  const json& info = j.value("info", json::object());
  r.run_id = info.value("run_id", info.value("run_uuid", ""));
  r.experiment_id = info.value("experiment_id", "");
  r.run_name = info.value("run_name", "");
  r.status = info.value("status", "");
  r.lifecycle_stage = info.value("lifecycle_stage", "active");
  if (info.contains("start_time")) r.start_time_ms = ReadInt(info["start_time"]);
  if (info.contains("end_time")) r.end_time_ms = ReadInt(info["end_time"]);
  const json& data = j.value("data", json::object());
  for (const json& p : data.value("params", json::array())) r.params[p.value("key", "")] = p.value("value", "");
  for (const json& t : data.value("tags", json::array())) r.tags[t.value("key", "")] = t.value("value", "");
  for (const json& m : data.value("metrics", json::array()))
    r.latest_metrics[m.value("key", "")] = ReadDouble(m.value("value", json()));
  return r;
}

}  // namespace

Result<MlflowConnection> MlflowConnection::FromEnvironment(const std::string& spec_uri) {
  MlflowConnection c;
  c.tracking_uri = spec_uri.empty() ? Env("MLFLOW_TRACKING_URI") : spec_uri;
  if (c.tracking_uri.empty()) {
    return Status::InvalidArgument(
        "MLflow tracking has no server: set tracking.mlflow.tracking_uri in experiment.json or the "
        "MLFLOW_TRACKING_URI environment variable (an http:// or https:// URL)");
  }
  if (!std::regex_match(c.tracking_uri, std::regex(R"(https?://[^/\s?#]+(/[^\s?#]*)?)"))) {
    return Status::InvalidArgument(std::string(spec_uri.empty() ? "MLFLOW_TRACKING_URI" : "tracking.mlflow.tracking_uri") +
                                   ": expected an http:// or https:// URL of an MLflow tracking server, got \"" +
                                   c.tracking_uri + "\" (tune logs only to tracking servers, not to local files)");
  }
  while (c.tracking_uri.size() > 8 && c.tracking_uri.back() == '/') c.tracking_uri.pop_back();
  c.token = Env("MLFLOW_TRACKING_TOKEN");
  c.username = Env("MLFLOW_TRACKING_USERNAME");
  c.password = Env("MLFLOW_TRACKING_PASSWORD");
  return c;
}

struct MlflowClient::Http {
  std::unique_ptr<httplib::Client> client;
  std::string prefix;  // the URI's path, e.g. "/mlflow"; "" for none
};

MlflowClient::MlflowClient(MlflowConnection c, std::chrono::milliseconds timeout)
    : c_(std::move(c)), http_(std::make_unique<Http>()) {
  // scheme://host[:port] and the path after it.
  const size_t host_start = c_.tracking_uri.find("://") + 3;
  const size_t path_start = c_.tracking_uri.find('/', host_start);
  const std::string origin = c_.tracking_uri.substr(0, path_start);
  if (path_start != std::string::npos) http_->prefix = c_.tracking_uri.substr(path_start);
  http_->client = std::make_unique<httplib::Client>(origin);
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout - s);
  // Connecting is quick or never (a host that is down); an answer from a
  // busy server may take a while.
  const auto connect = std::min(timeout, std::chrono::milliseconds(5000));
  const auto cs = std::chrono::duration_cast<std::chrono::seconds>(connect);
  http_->client->set_connection_timeout(cs.count(),
                                        std::chrono::duration_cast<std::chrono::microseconds>(connect - cs).count());
  http_->client->set_read_timeout(s.count(), us.count());
  http_->client->set_write_timeout(s.count(), us.count());
  http_->client->set_keep_alive(true);
  // As MLflow's rest_utils: basic auth when both username and password are
  // set, else the bearer token.
  if (!c_.username.empty() && !c_.password.empty()) {
    http_->client->set_basic_auth(c_.username.c_str(), c_.password.c_str());
  } else if (!c_.token.empty()) {
    http_->client->set_bearer_token_auth(c_.token.c_str());
  }
}

MlflowClient::~MlflowClient() = default;

Result<std::string> MlflowClient::Call(const char* method, const std::string& endpoint, const std::string& body) {
  const std::string path = http_->prefix + "/api/2.0/mlflow/" + endpoint;
  const std::string what = std::string("MLflow ") + endpoint + " at " + c_.tracking_uri;
  httplib::Result res{nullptr, httplib::Error::Unknown};
  if (std::string(method) == "GET") {
    httplib::Params params;
    const json query = json::parse(body);
    for (const auto& [k, v] : query.items()) params.emplace(k, v.is_string() ? v.get<std::string>() : DumpJson(v));
    res = http_->client->Get(path.c_str(), params, httplib::Headers{});
  } else {
    res = http_->client->Post(path.c_str(), body, "application/json");
  }
  if (!res) return Status::Unavailable(what + ": no answer (" + httplib::to_string(res.error()) + " error)");
  const int code = res->status;
  if (code == 200) return res->body;
  std::string error_code, message = res->body.substr(0, 300);
  json j = json::parse(res->body, nullptr, false);
  if (j.is_object()) {
    // Any JSON at all may come back (a proxy's error page, another server):
    // only strings are taken, so a field of another type cannot throw.
    if (auto it = j.find("error_code"); it != j.end() && it->is_string()) error_code = it->get<std::string>();
    if (auto it = j.find("message"); it != j.end() && it->is_string()) message = it->get<std::string>();
  }
  const std::string text = what + ": HTTP " + std::to_string(code) + (error_code.empty() ? "" : " " + error_code) +
                           (message.empty() ? "" : ": " + message);
  if (code == 429 || code >= 500) return Status::Unavailable(text);
  if (error_code == "RESOURCE_DOES_NOT_EXIST") return Status::NotFound(text);
  if (error_code == "RESOURCE_ALREADY_EXISTS") return Status::FailedPrecondition(text);
  if (code == 401 || code == 403) {
    return Status::InvalidArgument(text + " (check MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME and "
                                          "MLFLOW_TRACKING_PASSWORD)");
  }
  return Status::InvalidArgument(text);
}

namespace {
Result<json> ParseBody(const Result<std::string>& body, const std::string& endpoint) {
  if (!body.ok()) return body.status();
  json j = json::parse(*body, nullptr, false);
  if (!j.is_object()) return Status::Unavailable("MLflow " + endpoint + ": the answer is not a JSON object");
  return j;
}
}  // namespace

Result<std::string> MlflowClient::GetExperimentByName(const std::string& name) {
  TUNE_ASSIGN_OR_RETURN(json j, ParseBody(Call("GET", "experiments/get-by-name", DumpJson(json{{"experiment_name", name}})),
                                          "experiments/get-by-name"));
  TUNE_ASSIGN_OR_RETURN(json e, Decode("experiments/get-by-name", [&] { return j.value("experiment", json::object()); }));
  TUNE_ASSIGN_OR_RETURN(std::string stage,
                        Decode("experiments/get-by-name", [&] { return e.value("lifecycle_stage", "active"); }));
  if (stage == "deleted") {
    return Status::FailedPrecondition("MLflow experiment '" + name + "' at " + c_.tracking_uri +
                                      " is deleted; restore it (mlflow experiments restore) or choose another "
                                      "tracking.mlflow.experiment_name");
  }
  return Decode("experiments/get-by-name", [&] { return e.value("experiment_id", ""); });
}

Result<std::string> MlflowClient::CreateExperiment(const std::string& name) {
  TUNE_ASSIGN_OR_RETURN(json j, ParseBody(Call("POST", "experiments/create", DumpJson(json{{"name", name}})),
                                          "experiments/create"));
  return Decode("experiments/create", [&] { return j.value("experiment_id", ""); });
}

Result<std::string> MlflowClient::EnsureExperiment(const std::string& name) {
  auto id = GetExperimentByName(name);
  if (id.ok() || id.status().code() != StatusCode::kNotFound) return id;
  auto created = CreateExperiment(name);
  if (created.ok() || created.status().code() != StatusCode::kFailedPrecondition) return created;
  return GetExperimentByName(name);  // created by someone else meanwhile
}

Result<std::string> MlflowClient::CreateRun(const std::string& experiment_id, const std::string& run_name,
                                            int64_t start_time_ms, const MlflowTags& tags) {
  json body = {{"experiment_id", experiment_id}, {"run_name", run_name}, {"start_time", start_time_ms},
               {"tags", KeyValues(tags)}};
  TUNE_ASSIGN_OR_RETURN(json j, ParseBody(Call("POST", "runs/create", DumpJson(body)), "runs/create"));
  TUNE_ASSIGN_OR_RETURN(MlflowRun run, Decode("runs/create", [&] { return ParseRun(j.value("run", json::object())); }));
  if (run.run_id.empty()) return Status::Unavailable("MLflow runs/create: the answer has no run id");
  return run.run_id;
}

Result<MlflowRun> MlflowClient::GetRun(const std::string& run_id) {
  TUNE_ASSIGN_OR_RETURN(json j, ParseBody(Call("GET", "runs/get", DumpJson(json{{"run_id", run_id}})), "runs/get"));
  TUNE_ASSIGN_OR_RETURN(MlflowRun run, Decode("runs/get", [&] { return ParseRun(j.value("run", json::object())); }));
  if (run.lifecycle_stage == "deleted") return Status::NotFound("MLflow run " + run_id + " is deleted");
  return run;
}

Result<std::vector<MlflowRun>> MlflowClient::SearchRuns(const std::string& experiment_id, const std::string& filter) {
  std::vector<MlflowRun> out;
  std::string token;
  do {
    json body = {{"experiment_ids", {experiment_id}}, {"filter", filter}, {"max_results", 1000},
                 {"run_view_type", "ACTIVE_ONLY"}};
    if (!token.empty()) body["page_token"] = token;
    TUNE_ASSIGN_OR_RETURN(json j, ParseBody(Call("POST", "runs/search", DumpJson(body)), "runs/search"));
    TUNE_ASSIGN_OR_RETURN(token, Decode("runs/search", [&] {
                            for (const json& r : j.value("runs", json::array())) out.push_back(ParseRun(r));
                            return j.value("next_page_token", "");
                          }));
  } while (!token.empty());
  return out;
}

Status MlflowClient::LogBatch(const std::string& run_id, const std::vector<MlflowMetric>& metrics,
                              const MlflowTags& params, const MlflowTags& tags) {
  size_t m = 0, p = 0, t = 0;
  while (m < metrics.size() || p < params.size() || t < tags.size()) {
    json body = {{"run_id", run_id}, {"metrics", json::array()}, {"params", json::array()}, {"tags", json::array()}};
    size_t items = 0;
    for (size_t n = 0; p < params.size() && n < kMaxParamsPerBatch; ++n, ++p, ++items)
      body["params"].push_back({{"key", params[p].first}, {"value", params[p].second}});
    for (size_t n = 0; t < tags.size() && n < kMaxTagsPerBatch; ++n, ++t, ++items)
      body["tags"].push_back({{"key", tags[t].first}, {"value", tags[t].second}});
    for (size_t n = 0; m < metrics.size() && n < kMaxMetricsPerBatch && items < kMaxItemsPerBatch; ++n, ++m, ++items) {
      const MlflowMetric& x = metrics[m];
      body["metrics"].push_back(
          {{"key", x.key}, {"value", Number(x.value)}, {"timestamp", x.timestamp_ms}, {"step", x.step}});
    }
    auto r = Call("POST", "runs/log-batch", DumpJson(body));
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

Status MlflowClient::UpdateRun(const std::string& run_id, const std::string& status,
                               std::optional<int64_t> end_time_ms) {
  json body = {{"run_id", run_id}, {"status", status}};
  if (end_time_ms) body["end_time"] = *end_time_ms;
  auto r = Call("POST", "runs/update", DumpJson(body));
  return r.ok() ? Status::Ok() : r.status();
}

Result<std::vector<MlflowMetric>> MlflowClient::GetMetricHistory(const std::string& run_id, const std::string& key) {
  std::vector<MlflowMetric> out;
  std::string token;
  do {
    json q = {{"run_id", run_id}, {"metric_key", key}, {"max_results", "25000"}};
    if (!token.empty()) q["page_token"] = token;
    TUNE_ASSIGN_OR_RETURN(json j, ParseBody(Call("GET", "metrics/get-history", DumpJson(q)), "metrics/get-history"));
    TUNE_ASSIGN_OR_RETURN(token, Decode("metrics/get-history", [&] {
                            for (const json& m : j.value("metrics", json::array())) {
                              out.push_back({m.value("key", key), ReadDouble(m.value("value", json())),
                                             ReadInt(m.value("timestamp", json(0))), ReadInt(m.value("step", json(0)))});
                            }
                            return j.value("next_page_token", "");
                          }));
  } while (!token.empty());
  return out;
}

}  // namespace tune::tracking
