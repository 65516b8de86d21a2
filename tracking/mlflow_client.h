// MlflowClient: the calls of MLflow's tracking REST API
// (<tracking URI>/api/2.0/mlflow/...) that tune's MLflow tracking needs,
// over HTTP(S) with cpp-httplib.
//
// Errors: Unavailable when the call may work if tried again (no connection,
// a timeout, HTTP 429 or 5xx); NotFound for MLflow's RESOURCE_DOES_NOT_EXIST;
// FailedPrecondition for RESOURCE_ALREADY_EXISTS; InvalidArgument for any other
// answer (a 4xx: a bad request, or 401/403 for wrong credentials). Messages
// name the call and the URI (never its credentials) and quote the server's
// message (one line, invalid UTF-8 replaced). No call throws, whatever the
// server sends. Not thread-safe (one client per thread), except Cancel().
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace tune::tracking {

// Where the tracking server is and how to log in, as MLflow's own clients
// (requests under mlflow.utils.rest_utils) do it.
struct MlflowConnection {
  // http(s)://host[:port][/prefix], no trailing slash, never with
  // credentials: safe to print and to store.
  std::string tracking_uri;
  std::string token;         // Authorization: Bearer
  // Authorization: Basic; wins over the token, as in MLflow.
  std::string username, password;

  // `spec_uri` (experiment.json's tracking.mlflow.tracking_uri) if set, else
  // MLFLOW_TRACKING_URI (set_tracking_uri in code wins over the variable in
  // MLflow too), checked by ParseMlflowUri (tracking/mlflow_uri.h).
  // Credentials: MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (both
  // set), else user:password@ in the URI, else MLFLOW_TRACKING_TOKEN.
  // InvalidArgument naming the source when there is no URI or it does not
  // parse; the URI is quoted with its credentials masked.
  static Result<MlflowConnection> FromEnvironment(const std::string& spec_uri);

  // One line when credentials or a token would go unencrypted (http://) to
  // a host that is not this machine, else "".
  std::string PlainHttpWarning() const;
};

struct MlflowMetric {
  std::string key;
  double value = 0;
  int64_t timestamp_ms = 0;
  int64_t step = 0;
};

// What runs/get and runs/search return about one run.
struct MlflowRun {
  std::string run_id;
  std::string experiment_id;
  std::string run_name;
  std::string status;           // RUNNING, SCHEDULED, FINISHED, FAILED, KILLED
  std::string lifecycle_stage;  // active or deleted
  std::optional<int64_t> start_time_ms, end_time_ms;
  std::map<std::string, std::string> params, tags;
  std::map<std::string, double> latest_metrics;
};

using MlflowTags = std::vector<std::pair<std::string, std::string>>;

// A metric, param or tag key that was not logged, and why.
struct RefusedKey {
  std::string kind;  // "metric", "param" or "tag"
  std::string key;
  std::string why;   // MlflowKeyProblem's phrase, or the server's message
};

class MlflowClient {
 public:
  // The batch limits of runs/log-batch (MLflow's REST API documentation).
  static constexpr size_t kMaxMetricsPerBatch = 1000;
  static constexpr size_t kMaxParamsPerBatch = 100;
  static constexpr size_t kMaxTagsPerBatch = 100;
  static constexpr size_t kMaxItemsPerBatch = 1000;

  // `timeout`: the most one call takes in all, connecting (at most 5 s of
  // it), sending and reading the answer however slowly it comes; then its
  // connection is cut and the call is Unavailable. (A name lookup the
  // system resolver hangs on is bounded by the resolver's own timeout.)
  explicit MlflowClient(MlflowConnection c, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~MlflowClient();

  // Thread-safe: cuts the call in flight (if any) at once; every later call
  // is Unavailable without trying.
  void Cancel();

  const MlflowConnection& connection() const { return c_; }

  // experiments/get-by-name: the experiment id; NotFound if there is none.
  Result<std::string> GetExperimentByName(const std::string& name);
  // experiments/create: the new experiment's id.
  Result<std::string> CreateExperiment(const std::string& name);
  // get-by-name, else create (and get-by-name again if another client
  // created it meanwhile).
  Result<std::string> EnsureExperiment(const std::string& name);

  // runs/create: the new run's id.
  Result<std::string> CreateRun(const std::string& experiment_id, const std::string& run_name, int64_t start_time_ms,
                                const MlflowTags& tags);
  // runs/get: NotFound if there is no such run (or it was deleted).
  Result<MlflowRun> GetRun(const std::string& run_id);
  // runs/search over one experiment with MLflow's `filter` syntax, every
  // page. Deleted runs are not returned.
  Result<std::vector<MlflowRun>> SearchRuns(const std::string& experiment_id, const std::string& filter);
  // runs/log-batch, split into requests within the batch limits (metrics in
  // order). A failure part way leaves the earlier requests' data logged.
  // With `refused`: items whose key MLflow refuses (MlflowKeyProblem) are
  // left out, and a request the server refuses as INVALID_PARAMETER_VALUE
  // is sent again one key at a time; the keys left out or refused alone
  // are appended to *refused (each once) and the call is OK when the rest
  // got through. If no key got through alone, the server's error is
  // returned and nothing is appended for that request.
  Status LogBatch(const std::string& run_id, const std::vector<MlflowMetric>& metrics, const MlflowTags& params,
                  const MlflowTags& tags, std::vector<RefusedKey>* refused = nullptr);
  // runs/update: status (RUNNING, FINISHED, FAILED, KILLED) and end time.
  Status UpdateRun(const std::string& run_id, const std::string& status, std::optional<int64_t> end_time_ms);
  // metrics/get-history: every point of one metric, every page.
  Result<std::vector<MlflowMetric>> GetMetricHistory(const std::string& run_id, const std::string& key);

 private:
  struct Http;
  // A call to <uri>/api/2.0/mlflow/<endpoint>: POST with a JSON body, or GET
  // with the body's fields as query parameters. Returns the response body;
  // on an error answer last_error_code_ is MLflow's error_code.
  Result<std::string> Call(const char* method, const std::string& endpoint, const std::string& body_json);
  // One runs/log-batch request per call, within the batch limits.
  Status SendBatches(const std::string& run_id, const std::vector<MlflowMetric>& metrics, const MlflowTags& params,
                     const MlflowTags& tags);

  MlflowConnection c_;
  std::unique_ptr<Http> http_;
  std::string last_error_code_;
};

}  // namespace tune::tracking
