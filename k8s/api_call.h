// Every Kubernetes API call has a class, a retry policy and a deadline.
//
// kubectl reports a failed call on stderr ("Error from server (Reason):
// message", or a connection error). Transient failures are retried with
// capped exponential backoff and jitter: HTTP 5xx (InternalError,
// ServiceUnavailable, Timeout, ServerTimeout), 429 TooManyRequests, a
// refused or reset connection, a timed-out kubectl. Retry-After is honoured
// inside kubectl: client-go retries a 429 or 5xx that carries it (up to 10
// times, waiting as asked) before it reports a failure. Every other failure
// is permanent (Forbidden, NotFound, AlreadyExists, Invalid, ...) and is
// returned at once with Kubernetes' own reason.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/kubectl.h"

namespace tune {

struct ApiFailure {
  bool transient = false;
  std::string reason;   // Kubernetes' reason ("InternalError", "AlreadyExists", ...) or "ConnectionError"
  std::string message;  // kubectl's stderr, trimmed
};

// The class of a kubectl call that exited nonzero with stderr `err`.
ApiFailure ClassifyKubectlError(const std::string& err);

struct RetryPolicy {
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{10000};
  std::chrono::milliseconds call_timeout{30000};  // one kubectl run
  // Retries stop once the next one would start after this (from the first
  // try); zero: a single try.
  std::chrono::milliseconds deadline{120000};
};

// Counters for the soak benchmark and the end-of-run summary.
struct ApiStats {
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> retried{0};  // tries after a transient failure
  std::atomic<int64_t> failed{0};   // calls that failed in the end
};

// The answer of a call after its retries.
struct ApiResult {
  KubectlOutput output;        // the last try's
  bool ok = false;             // exit code 0
  ApiFailure failure;          // when !ok
  int tries = 0;
};

// Runs `kubectl args` under `policy`: transient failures are retried until
// the deadline, permanent ones end at once. Returns non-OK only when kubectl
// cannot be run at all or tune is stopping (Kubectl::Cancel). `stats` may be
// null. Thread-safe.
Result<ApiResult> CallApi(const Kubectl& kubectl, const std::vector<std::string>& args, const std::string& input,
                          const RetryPolicy& policy, ApiStats* stats);

// `s` as one word of a POSIX shell command: as it is when it holds only
// characters no shell treats specially, else in single quotes.
std::string ShellQuote(const std::string& s);

// The kubectl command that does `args` against exactly the cluster and
// namespace tune's calls used, for messages a user pastes into another
// shell: the kubectl of backend.kubectl, --kubeconfig (else KUBECONFIG=...
// in front when that was set), --context (the options', else the one
// PinContext pinned), -n; every word shell-quoted.
std::string KubectlCommandLine(const Kubectl& kubectl, const std::vector<std::string>& args);

}  // namespace tune
