#include "dashboard/request_rules.h"

#include <arpa/inet.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>

namespace tune {
namespace {

using Address = std::array<unsigned char, 16>;  // IPv6; IPv4 as ::ffff:a.b.c.d

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// `text` as an address if it is an IPv4 or IPv6 literal (without brackets).
std::optional<Address> AsAddress(const std::string& text) {
  Address a{};
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    a[10] = a[11] = 0xff;
    std::copy_n(reinterpret_cast<const unsigned char*>(&v4), 4, a.begin() + 12);
    return a;
  }
  if (inet_pton(AF_INET6, text.c_str(), a.data()) == 1) return a;
  return std::nullopt;
}

std::optional<Address> Loopback4() { return AsAddress("127.0.0.1"); }
std::optional<Address> Loopback6() { return AsAddress("::1"); }

struct HostPort {
  std::string name;  // lowercase; an IPv6 literal without its brackets
  bool bracketed = false;
  int port = 80;
};

// A Host header's value: NAME, NAME:PORT, [V6] or [V6]:PORT.
std::optional<HostPort> ParseHost(const std::string& value) {
  HostPort hp;
  std::string rest;
  if (!value.empty() && value[0] == '[') {
    const size_t close = value.find(']');
    if (close == std::string::npos) return std::nullopt;
    hp.name = Lower(value.substr(1, close - 1));
    hp.bracketed = true;
    rest = value.substr(close + 1);
  } else {
    const size_t colon = value.find(':');
    hp.name = Lower(value.substr(0, colon));
    if (colon != std::string::npos) rest = value.substr(colon);
  }
  if (hp.name.empty()) return std::nullopt;
  if (!rest.empty()) {
    if (rest[0] != ':' || rest.size() < 2 || rest.size() > 6) return std::nullopt;
    int port = 0;
    for (size_t i = 1; i < rest.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(rest[i]))) return std::nullopt;
      port = port * 10 + (rest[i] - '0');
    }
    if (port > 65535) return std::nullopt;
    hp.port = port;
  }
  return hp;
}

bool Wildcard(const std::string& host) {
  if (host.empty()) return true;
  std::optional<Address> a = AsAddress(host);
  if (!a) return false;
  const Address any6{};
  std::optional<Address> any4 = AsAddress("0.0.0.0");
  return *a == any6 || *a == *any4;
}

std::string Quoted(const std::string& s) {
  // Short and one line: the value is the client's.
  std::string out;
  for (char c : s.substr(0, 100)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return "'" + out + (s.size() > 100 ? "...'" : "'");
}

}  // namespace

RequestRules::RequestRules(std::string bound_host, int port) : port_(port) {
  if (bound_host.size() >= 2 && bound_host.front() == '[' && bound_host.back() == ']') {
    bound_host = bound_host.substr(1, bound_host.size() - 2);
  }
  bound_host_ = Lower(bound_host);
  wildcard_ = Wildcard(bound_host_);
  if (wildcard_) {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) == 0) machine_name_ = Lower(name);
  }
  const std::string shown = wildcard_ ? "127.0.0.1" : bound_host_;
  const bool v6 = shown.find(':') != std::string::npos;
  url_ = "http://" + (v6 ? "[" + shown + "]" : shown) + ":" + std::to_string(port_) + "/";
}

bool RequestRules::HostAllowed(const std::string& host, const std::string& local_addr) const {
  std::optional<HostPort> hp = ParseHost(host);
  if (!hp || hp->port != port_) return false;
  std::optional<Address> address = AsAddress(hp->name);
  // An IPv6 literal must be bracketed, an IPv4 one must not.
  if (address && hp->bracketed != (hp->name.find(':') != std::string::npos)) return false;
  if (!address && hp->bracketed) return false;
  if (address) {
    if (*address == *Loopback4() || *address == *Loopback6()) return true;
    std::optional<Address> bound = AsAddress(bound_host_);
    if (bound && *address == *bound) return true;
    if (wildcard_) {
      std::optional<Address> local = AsAddress(local_addr);
      if (local && *address == *local) return true;
    }
    return false;
  }
  if (hp->name == "localhost" || hp->name == bound_host_) return true;
  return wildcard_ && !machine_name_.empty() && hp->name == machine_name_;
}

std::optional<Refusal> RequestRules::Check(const RequestFacts& facts) const {
  if (facts.hosts.size() != 1) {
    return Refusal{400, "expected one Host header, got " + std::to_string(facts.hosts.size())};
  }
  const std::string& host = facts.hosts[0];
  if (!HostAllowed(host, facts.local_addr)) {
    return Refusal{403, "Host " + Quoted(host) + " is not an address of this dashboard (open " + url_ +
                            "; a page of another site cannot read it)"};
  }
  for (const std::string& origin : facts.origins) {
    if (strcasecmp(origin.c_str(), ("http://" + host).c_str()) != 0) {
      return Refusal{403, "Origin " + Quoted(origin) + " is another site: the dashboard answers its own page only"};
    }
  }
  if (facts.method != "GET" && facts.method != "HEAD") {
    return Refusal{405, "the dashboard is read-only: it answers GET and HEAD, not " + Quoted(facts.method)};
  }
  const bool body = facts.has_transfer_encoding ||
                    std::any_of(facts.content_lengths.begin(), facts.content_lengths.end(),
                                [](const std::string& v) { return v != "0"; });
  if (body) return Refusal{413, "the dashboard takes no request body"};
  return std::nullopt;
}

}  // namespace tune
