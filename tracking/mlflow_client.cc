#include "tracking/mlflow_client.h"

#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tracking/mlflow_keys.h"
#include "tracking/mlflow_uri.h"

#include "core/json_integer.h"
#include "core/json_text.h"

namespace tune::tracking {
namespace {

using nlohmann::json;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// `s` with each byte that does not start a valid UTF-8 sequence replaced by
// U+FFFD: a server's answer parsed as JSON (nlohmann refuses invalid
// UTF-8) or quoted in a message.
std::string ValidUtf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size() && !(n == 2 && c < 0xc2) && !(n == 4 && c > 0xf4);
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && n >= 3) {
      const auto d = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0) && !(c == 0xf0 && d < 0x90) &&
           !(c == 0xf4 && d >= 0x90);
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// Outside text (a server's message) fit for a one-line error: valid UTF-8,
// control characters as spaces, cut to about `max` bytes at a character
// boundary.
std::string SafeText(const std::string& s, size_t max) {
  const std::string valid = ValidUtf8(s);
  std::string out;
  for (size_t i = 0; i < valid.size(); ++i) {
    const auto c = static_cast<unsigned char>(valid[i]);
    if (out.size() >= max && (c & 0xc0) != 0x80) {
      out += "...";
      break;
    }
    out += (c < 0x20 || c == 0x7f) ? ' ' : valid[i];
  }
  return out;
}

std::string SecondsText(std::chrono::milliseconds d) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", static_cast<double>(d.count()) / 1000.0);
  return b;
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
  const std::string source = spec_uri.empty() ? "MLFLOW_TRACKING_URI" : "tracking.mlflow.tracking_uri";
  const std::string text = spec_uri.empty() ? Env("MLFLOW_TRACKING_URI") : spec_uri;
  if (text.empty()) {
    return Status::InvalidArgument(
        "MLflow tracking has no server: set tracking.mlflow.tracking_uri in experiment.json or the "
        "MLFLOW_TRACKING_URI environment variable (an http:// or https:// URL)");
  }
  Result<MlflowUri> uri = ParseMlflowUri(text);
  if (!uri.ok()) {
    // A path or file: URI (MLflow's local stores) gets the reason.
    const bool not_a_url = uri.status().message() == "an http:// or https:// URL of an MLflow tracking server";
    return Status::InvalidArgument(source + ": expected " + uri.status().message() + ", got \"" +
                                   SafeText(MaskCredentials(text), 500) + "\"" +
                                   (not_a_url ? " (tune logs only to tracking servers, not to local files)" : ""));
  }
  MlflowConnection c;
  c.tracking_uri = uri->WithoutCredentials();
  c.token = Env("MLFLOW_TRACKING_TOKEN");
  c.username = Env("MLFLOW_TRACKING_USERNAME");
  c.password = Env("MLFLOW_TRACKING_PASSWORD");
  if ((c.username.empty() || c.password.empty()) && uri->has_userinfo) {
    c.username = uri->username;
    c.password = uri->password;
  }
  return c;
}

std::string MlflowConnection::PlainHttpWarning() const {
  Result<MlflowUri> uri = ParseMlflowUri(tracking_uri);
  if (!uri.ok() || uri->scheme != "http" || uri->IsLoopback()) return "";
  const bool basic = !username.empty() && !password.empty();
  if (!basic && token.empty()) return "";
  return "tune: warning: " +
         std::string(basic ? "the MLflow user name and password go" : "the MLflow token (MLFLOW_TRACKING_TOKEN) goes") +
         " unencrypted over http:// to " + uri->host + "; use an https:// tracking_uri for a server on another "
         "machine";
}

// The client's connection and the watchdog that holds each call to its
// deadline. httplib's timeouts are per recv/send: a server that sends a
// byte at a time never trips them. So a second thread shuts the socket
// down (as httplib's own stop() does) once a call is past its deadline or
// cancelled, again every 20 ms until the call returns. The socket is the
// one httplib last created (set_socket_options reports it); it is forgotten
// whenever httplib's socket is closed, and a kept-alive socket that became
// readable (closed by the server, or stray bytes) is closed before a call,
// so the fd cut is always httplib's live socket.
struct MlflowClient::Http {
  std::unique_ptr<httplib::ClientImpl> client;  // null when the URI does not parse
  Status unusable;                               // why, then
  std::string prefix;                            // the URI's path, e.g. "/mlflow"; "" for none
  std::chrono::milliseconds timeout{0};

  std::mutex mu;
  std::condition_variable cv;
  int fd = -1;              // guarded by mu: httplib's socket
  bool in_flight = false;   // guarded by mu
  bool cut = false;         // guarded by mu: the call in flight was cut off
  bool cancelled = false;   // guarded by mu
  bool quit = false;        // guarded by mu
  std::chrono::steady_clock::time_point deadline;  // guarded by mu
  std::thread watchdog;

  // Wakes at the deadline of the call in flight, or once a second: a call
  // does not announce its start unless its deadline comes before the
  // watchdog's next look (no wake-up per call).
  void Watch() {
    try {
      std::unique_lock<std::mutex> lk(mu);
      while (!quit) {
        const auto now = std::chrono::steady_clock::now();
        if (in_flight && (cancelled || now >= deadline)) {
          cut = true;
          if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
          wakes_at = now + std::chrono::milliseconds(20);
        } else {
          wakes_at = now + std::chrono::seconds(1);
          if (in_flight) wakes_at = std::min(wakes_at, deadline);
        }
        cv.wait_until(lk, wakes_at);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tune: MLflow: the call deadline watchdog stopped (%s); calls keep only per-read timeouts\n",
                   e.what());
    }
  }
  std::chrono::steady_clock::time_point wakes_at;  // guarded by mu: the watchdog's next look
};

MlflowClient::MlflowClient(MlflowConnection c, std::chrono::milliseconds timeout)
    : c_(std::move(c)), http_(std::make_unique<Http>()) {
  http_->timeout = timeout;
  Result<MlflowUri> uri = ParseMlflowUri(c_.tracking_uri);
  if (!uri.ok()) {
    http_->unusable = Status::InvalidArgument("MLflow tracking URI \"" + SafeText(MaskCredentials(c_.tracking_uri), 500) +
                                              "\": expected " + uri.status().message());
    c_.tracking_uri = SafeText(MaskCredentials(c_.tracking_uri), 500);
    return;
  }
  // A connection built by hand may carry user:password@; it is used, and
  // forgotten from the URI.
  if (uri->has_userinfo && (c_.username.empty() || c_.password.empty())) {
    c_.username = uri->username;
    c_.password = uri->password;
  }
  c_.tracking_uri = uri->WithoutCredentials();
  http_->prefix = uri->path;
  // The host and port as parsed: httplib's own URL parsing (std::stoi on
  // the port) is never used.
  if (uri->scheme == "https") {
    http_->client = std::make_unique<httplib::SSLClient>(uri->host, uri->port);
  } else {
    http_->client = std::make_unique<httplib::ClientImpl>(uri->host, uri->port);
  }
  httplib::ClientImpl& client = *http_->client;
  const auto connect = std::min(timeout, std::chrono::milliseconds(5000));
  const auto cs = std::chrono::duration_cast<std::chrono::seconds>(connect);
  client.set_connection_timeout(cs.count(), std::chrono::duration_cast<std::chrono::microseconds>(connect - cs).count());
  // Per read and write as well; the deadline bounds the call as a whole.
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout - s);
  client.set_read_timeout(s.count(), us.count());
  client.set_write_timeout(s.count(), us.count());
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  Http* h = http_.get();
  client.set_socket_options([h](socket_t sock) {
    std::lock_guard<std::mutex> lk(h->mu);
    h->fd = sock;
  });
  // As MLflow's rest_utils (through requests): basic auth when both
  // username and password are set (or the URI has user:password@), else
  // the bearer token.
  if (!c_.username.empty() && !c_.password.empty()) {
    client.set_basic_auth(c_.username.c_str(), c_.password.c_str());
  } else if (!c_.token.empty()) {
    client.set_bearer_token_auth(c_.token.c_str());
  }
  http_->watchdog = std::thread([h] { h->Watch(); });
}

MlflowClient::~MlflowClient() {
  {
    std::lock_guard<std::mutex> lk(http_->mu);
    http_->quit = true;
  }
  http_->cv.notify_all();
  if (http_->watchdog.joinable()) http_->watchdog.join();
}

void MlflowClient::Cancel() {
  {
    std::lock_guard<std::mutex> lk(http_->mu);
    http_->cancelled = true;
  }
  http_->cv.notify_all();
}

Result<std::string> MlflowClient::Call(const char* method, const std::string& endpoint, const std::string& body) {
  last_error_code_.clear();
  if (!http_->client) return http_->unusable;
  const std::string path = http_->prefix + "/api/2.0/mlflow/" + endpoint;
  const std::string what = std::string("MLflow ") + endpoint + " at " + c_.tracking_uri;
  Http& h = *http_;
  {
    std::lock_guard<std::mutex> lk(h.mu);
    if (h.cancelled) return Status::Unavailable(what + ": not sent (tune is ending)");
    if (!h.client->is_socket_open()) h.fd = -1;
    if (h.fd >= 0) {
      // An idle kept-alive socket has nothing to read; if it has (the
      // server closed it, or sent stray bytes) it is closed here, so that
      // httplib never closes a socket whose fd the watchdog may cut.
      pollfd p{h.fd, POLLIN, 0};
      if (::poll(&p, 1, 0) != 0) {
        h.client->stop();
        h.fd = -1;
      }
    }
    h.in_flight = true;
    h.cut = false;
    h.deadline = std::chrono::steady_clock::now() + h.timeout;
    if (h.deadline < h.wakes_at) h.cv.notify_all();
  }
  httplib::Result res{nullptr, httplib::Error::Unknown};
  std::string failure;
  try {
    if (std::string(method) == "GET") {
      httplib::Params params;
      const json query = json::parse(body);
      for (const auto& [k, v] : query.items()) params.emplace(k, v.is_string() ? v.get<std::string>() : DumpJson(v));
      res = h.client->Get(path, params, httplib::Headers{});
    } else {
      res = h.client->Post(path, body, "application/json");
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  bool cut = false, cancelled = false;
  {
    std::lock_guard<std::mutex> lk(h.mu);
    h.in_flight = false;
    cut = h.cut;
    cancelled = h.cancelled;
    if (cut) {
      // The socket was shut down under httplib: close it before the next call.
      h.client->stop();
      h.fd = -1;
    } else if (!h.client->is_socket_open()) {
      h.fd = -1;
    }
  }
  if (cut) {
    return Status::Unavailable(what + (cancelled ? ": cut off at the end of the run, still without a complete answer"
                                                 : ": no complete answer within " + SecondsText(h.timeout) + " s"));
  }
  if (!failure.empty()) return Status::Unavailable(what + ": " + SafeText(failure, 300));
  if (!res) return Status::Unavailable(what + ": no answer (" + httplib::to_string(res.error()) + " error)");
  const int code = res->status;
  if (code == 200) return res->body;
  std::string error_code, message = res->body;
  json j = json::parse(ValidUtf8(res->body), nullptr, false);
  if (j.is_object()) {
    // Any JSON at all may come back (a proxy's error page, another server):
    // only strings are taken, so a field of another type cannot throw.
    if (auto it = j.find("error_code"); it != j.end() && it->is_string()) error_code = it->get<std::string>();
    if (auto it = j.find("message"); it != j.end() && it->is_string()) message = it->get<std::string>();
  }
  error_code = SafeText(error_code, 100);
  message = SafeText(message, 300);
  last_error_code_ = error_code;
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
  json j = json::parse(ValidUtf8(*body), nullptr, false);
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

Status MlflowClient::SendBatches(const std::string& run_id, const std::vector<MlflowMetric>& metrics,
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

Status MlflowClient::LogBatch(const std::string& run_id, const std::vector<MlflowMetric>& metrics,
                              const MlflowTags& params, const MlflowTags& tags, std::vector<RefusedKey>* refused) {
  if (!refused) return SendBatches(run_id, metrics, params, tags);
  std::set<std::pair<std::string, std::string>> named;  // (kind, key) appended by this call
  auto refuse = [&](const char* kind, const std::string& key, const std::string& why) {
    if (named.insert({kind, key}).second) refused->push_back({kind, key, why});
  };
  std::vector<MlflowMetric> m;
  MlflowTags p, t;
  for (const MlflowMetric& x : metrics) {
    if (std::string why = MlflowKeyProblem(x.key); why.empty()) m.push_back(x); else refuse("metric", x.key, why);
  }
  for (const auto& kv : params) {
    if (std::string why = MlflowKeyProblem(kv.first); why.empty()) p.push_back(kv); else refuse("param", kv.first, why);
  }
  for (const auto& kv : tags) {
    if (std::string why = MlflowKeyProblem(kv.first); why.empty()) t.push_back(kv); else refuse("tag", kv.first, why);
  }
  if (m.empty() && p.empty() && t.empty()) return Status::Ok();
  const Status st = SendBatches(run_id, m, p, t);
  auto key_refused = [&](const Status& s) { return s.IsInvalidArgument() && last_error_code_ == "INVALID_PARAMETER_VALUE"; };
  if (st.ok() || !key_refused(st)) return st;
  // MLflow refuses the whole request for one bad key (its rules for
  // letters outside ASCII, or another server's rules): each key alone.
  std::vector<std::string> metric_keys;
  for (const MlflowMetric& x : m)
    if (std::find(metric_keys.begin(), metric_keys.end(), x.key) == metric_keys.end()) metric_keys.push_back(x.key);
  if (metric_keys.size() + p.size() + t.size() <= 1) return st;
  bool any_ok = false;
  std::vector<RefusedKey> alone;
  auto one = [&](const char* kind, const std::string& key, const Status& s) -> bool {
    if (s.ok()) {
      any_ok = true;
      return true;
    }
    if (!key_refused(s)) return false;
    alone.push_back({kind, key, s.message()});
    return true;
  };
  for (const std::string& key : metric_keys) {
    std::vector<MlflowMetric> points;
    for (const MlflowMetric& x : m)
      if (x.key == key) points.push_back(x);
    if (Status s = SendBatches(run_id, points, {}, {}); !one("metric", key, s)) return s;
  }
  for (const auto& kv : p)
    if (Status s = SendBatches(run_id, {}, {kv}, {}); !one("param", kv.first, s)) return s;
  for (const auto& kv : t)
    if (Status s = SendBatches(run_id, {}, {}, {kv}); !one("tag", kv.first, s)) return s;
  if (!any_ok) return st;  // not about keys: the run, or the server
  for (const RefusedKey& r : alone) refuse(r.kind.c_str(), r.key, r.why);
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
