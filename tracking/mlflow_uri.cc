#include "tracking/mlflow_uri.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace tune::tracking {
namespace {

constexpr char kUrl[] = "an http:// or https:// URL of an MLflow tracking server";

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int HexValue(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

// %XX escapes decoded; false on a malformed one.
bool PercentDecode(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      *out += in[i];
      continue;
    }
    if (i + 2 >= in.size() || !IsHex(in[i + 1]) || !IsHex(in[i + 2])) return false;
    *out += static_cast<char>(HexValue(in[i + 1]) * 16 + HexValue(in[i + 2]));
    i += 2;
  }
  return true;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string Lower(std::string s) {
  for (char& c : s) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return s;
}

}  // namespace

std::string MlflowUri::WithoutCredentials() const {
  std::string out = scheme + "://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host);
  if (port_written) out += ":" + std::to_string(port);
  return out + path;
}

bool MlflowUri::IsLoopback() const {
  if (Lower(host) == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0) return true;
    // ::ffff:127.x.y.z
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(v6.s6_addr, kMapped, 12) == 0 && v6.s6_addr[12] == 127;
  }
  return false;
}

Result<MlflowUri> ParseMlflowUri(const std::string& text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Status::InvalidArgument(std::string(kUrl) + " without spaces or control characters");
    }
  }
  MlflowUri u;
  const size_t sep = text.find("://");
  if (sep == std::string::npos) return Status::InvalidArgument(kUrl);
  u.scheme = Lower(text.substr(0, sep));
  if (u.scheme != "http" && u.scheme != "https") return Status::InvalidArgument(kUrl);
  const size_t start = sep + 3;
  size_t end = text.find_first_of("/?#", start);
  if (end == std::string::npos) end = text.size();
  const std::string authority = text.substr(start, end - start);
  std::string rest = text.substr(end);
  if (rest.find_first_of("?#") != std::string::npos) {
    return Status::InvalidArgument(std::string(kUrl) + " without a query (?) or fragment (#)");
  }
  std::string hostport = authority;
  if (const size_t at = authority.rfind('@'); at != std::string::npos) {
    u.has_userinfo = true;
    const std::string userinfo = authority.substr(0, at);
    hostport = authority.substr(at + 1);
    const size_t colon = userinfo.find(':');
    if (!PercentDecode(userinfo.substr(0, colon), &u.username) ||
        (colon != std::string::npos && !PercentDecode(userinfo.substr(colon + 1), &u.password))) {
      return Status::InvalidArgument(std::string(kUrl) + " whose user:password@ has only valid %XX escapes");
    }
  }
  std::string port_text;
  bool has_port = false;
  if (!hostport.empty() && hostport[0] == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string::npos) return Status::InvalidArgument(std::string(kUrl) + " with a closed [IPv6] host");
    u.host = hostport.substr(1, close - 1);
    in6_addr v6{};
    if (inet_pton(AF_INET6, u.host.c_str(), &v6) != 1) {
      return Status::InvalidArgument(std::string(kUrl) + " whose [host] is an IPv6 address");
    }
    const std::string after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return Status::InvalidArgument(std::string(kUrl) + " with :port right after the [IPv6] host");
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = hostport.find(':');
    if (colon != std::string::npos) {
      if (hostport.find(':', colon + 1) != std::string::npos) {
        return Status::InvalidArgument(std::string(kUrl) + " with an IPv6 host in brackets ([::1])");
      }
      has_port = true;
      port_text = hostport.substr(colon + 1);
    }
    u.host = hostport.substr(0, colon);
    if (u.host.empty()) return Status::InvalidArgument(std::string(kUrl) + " with a host");
    for (char c : u.host) {
      if (!IsNameChar(c)) {
        return Status::InvalidArgument(std::string(kUrl) +
                                       " whose host is a name (letters, digits, '-', '.', '_', '~') or an IP address");
      }
    }
  }
  if (u.host.empty()) return Status::InvalidArgument(std::string(kUrl) + " with a host");
  if (has_port) {
    // At most 5 digits: the value cannot overflow, and leading zeros of a
    // longer text are refused rather than read.
    bool digits = !port_text.empty() && port_text.size() <= 5;
    int port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9') digits = false;
      if (digits) port = port * 10 + (c - '0');
    }
    if (!digits || port < 1 || port > 65535) {
      return Status::InvalidArgument(std::string(kUrl) + " with a port from 1 to 65535 after the host");
    }
    u.port = port;
    u.port_written = true;
  } else {
    u.port = u.scheme == "https" ? 443 : 80;
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  u.path = rest;
  return u;
}

std::string MaskCredentials(const std::string& text) {
  size_t start = text.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = text.find_first_of("/?#", start);
  if (end == std::string::npos) end = text.size();
  const size_t at = text.find_last_of('@', end == 0 ? 0 : end - 1);
  if (at == std::string::npos || at < start || at >= end) return text;
  return text.substr(0, start) + "***" + text.substr(at);
}

}  // namespace tune::tracking
