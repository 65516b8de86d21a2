#include "k8s/api_call.h"

#include <algorithm>
#include <cstdlib>
#include <random>
#include <thread>

namespace tune {
namespace {

using Clock = std::chrono::steady_clock;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

bool Contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// HTTP 5xx and 429 as kubectl names their Status reasons.
bool TransientReason(const std::string& reason) {
  return reason == "InternalError" || reason == "ServiceUnavailable" || reason == "Timeout" ||
         reason == "ServerTimeout" || reason == "TooManyRequests";
}

}  // namespace

ApiFailure ClassifyKubectlError(const std::string& err) {
  ApiFailure f;
  f.message = Trim(err);
  // One line per object (`kubectl delete a b`): any transient line makes the
  // call worth retrying; else the first reason is the call's.
  size_t pos = 0;
  const std::string tag = "Error from server (";
  while ((pos = err.find(tag, pos)) != std::string::npos) {
    size_t close = err.find(')', pos + tag.size());
    if (close == std::string::npos) break;
    std::string reason = err.substr(pos + tag.size(), close - pos - tag.size());
    if (f.reason.empty() || (TransientReason(reason) && !f.transient)) {
      f.reason = reason;
      f.transient = TransientReason(reason);
    }
    pos = close;
  }
  if (!f.reason.empty()) return f;
  // No answer from the server at all.
  for (const char* s : {"connection refused", "was refused", "connection reset", "i/o timeout", "EOF",
                        "Unable to connect to the server", "TLS handshake timeout", "context deadline exceeded",
                        "Client.Timeout", "request canceled", "connection lost", "broken pipe",
                        "the server is currently unable", "timed out", "no route to host"}) {
    if (Contains(err, s)) {
      f.transient = true;
      f.reason = "ConnectionError";
      return f;
    }
  }
  f.reason = "Error";
  return f;
}

std::string ShellQuote(const std::string& s) {
  static const std::string kPlain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-";
  if (!s.empty() && s.find_first_not_of(kPlain) == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string KubectlCommandLine(const Kubectl& kubectl, const std::vector<std::string>& args) {
  const KubernetesOptions& o = kubectl.options();
  std::string out;
  // What kubectl read without --kubeconfig: KUBECONFIG, if set (it may
  // list several files, which --kubeconfig cannot).
  if (const char* env = std::getenv("KUBECONFIG"); o.kubeconfig.empty() && env && *env) {
    out = "KUBECONFIG=" + ShellQuote(env) + " ";
  }
  out += ShellQuote(o.kubectl.empty() ? "kubectl" : o.kubectl);
  if (!o.kubeconfig.empty()) out += " --kubeconfig=" + ShellQuote(o.kubeconfig);
  if (std::string context = kubectl.Context(); !context.empty()) out += " --context=" + ShellQuote(context);
  if (!o.namespace_.empty()) out += " -n " + ShellQuote(o.namespace_);
  for (const auto& a : args) out += " " + ShellQuote(a);
  return out;
}

Result<ApiResult> CallApi(const Kubectl& kubectl, const std::vector<std::string>& args, const std::string& input,
                          const RetryPolicy& policy, ApiStats* stats) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const auto start = Clock::now();
  auto backoff = policy.initial_backoff;
  ApiResult result;
  if (stats) ++stats->calls;
  for (;;) {
    ++result.tries;
    Result<KubectlOutput> r = kubectl.Run(args, input, policy.call_timeout);
    if (!r.ok()) {
      if (kubectl.Cancelled() || r.status().code() != StatusCode::kUnavailable) return r.status();
      // kubectl timed out: no answer, transient.
      result.output = KubectlOutput{-1, "", r.status().message()};
      result.failure = ApiFailure{true, "Timeout", r.status().message()};
    } else {
      result.output = std::move(r).value();
      if (result.output.exit_code == 0) {
        result.ok = true;
        return result;
      }
      result.failure = ClassifyKubectlError(result.output.err.empty() ? result.output.out : result.output.err);
      kubectl.NoteAnswer(!result.failure.transient);
    }
    if (!result.failure.transient) break;
    // Equal jitter: half the backoff, plus up to as much again at random.
    auto half = backoff / 2;
    std::uniform_int_distribution<int64_t> extra(0, std::max<int64_t>(0, half.count()));
    auto wait = half + std::chrono::milliseconds(extra(rng));
    if (policy.deadline.count() <= 0 || Clock::now() + wait - start > policy.deadline) break;
    for (auto until = Clock::now() + wait; Clock::now() < until;) {
      if (kubectl.Cancelled()) return Status::Unavailable("kubectl " + args[0] + ": not retried, tune is stopping");
      std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
    }
    if (stats) ++stats->retried;
    backoff = std::min(backoff * 2, policy.max_backoff);
  }
  if (stats) ++stats->failed;
  return result;
}

}  // namespace tune
