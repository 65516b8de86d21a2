// RequestRules: which requests `tune dashboard` answers at all, decided
// from the request's head before any handler runs (docs/dashboard.md,
// "Security").
//
// - Host: exactly one, naming this server: 127.0.0.1:PORT, localhost:PORT,
//   [::1]:PORT or the --host value with PORT (without ":PORT" when PORT is
//   80). IP literals are compared as addresses ([0:0::1] is [::1]), names
//   without case. With a wildcard --host (0.0.0.0, ::) also the address
//   the connection came in on and this machine's host name. Anything else
//   is what a DNS-rebinding page sends (its own name): 403.
// - Origin: absent, or this server's own origin, http://<the request's
//   Host>: a page of another site (or "null") gets 403.
// - Method: GET or HEAD (the dashboard is read-only): 405.
// - Body: none (a Content-Length other than 0, or any Transfer-Encoding,
//   is refused unread): 413.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tune {

struct RequestFacts {
  std::string method;
  std::vector<std::string> hosts;    // every Host header's value
  std::vector<std::string> origins;  // every Origin header's value
  std::vector<std::string> content_lengths;
  bool has_transfer_encoding = false;
  std::string local_addr;  // the address the connection came in on (getsockname)
};

struct Refusal {
  int status = 0;       // 400, 403, 405 or 413
  std::string message;  // one sentence, for {"error": ...}
};

class RequestRules {
 public:
  // `bound_host`: the --host value; `port`: the port it listens on.
  RequestRules(std::string bound_host, int port);

  // nullopt: answer the request; else why not. Thread-safe (const).
  std::optional<Refusal> Check(const RequestFacts& facts) const;

  // Whether `host` (a Host header's value) names this server for a
  // connection that came in on `local_addr`.
  bool HostAllowed(const std::string& host, const std::string& local_addr) const;

  // http://HOST:PORT/ of the --host value, for messages.
  const std::string& url() const { return url_; }

 private:
  std::string bound_host_;  // lowercase; an IPv6 literal without brackets
  int port_;
  bool wildcard_;
  std::string machine_name_;  // gethostname(), lowercase; only used when wildcard_
  std::string url_;
};

}  // namespace tune
