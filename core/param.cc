#include "core/param.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tune {
namespace {

std::string DoubleToString(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  // Shortest representation that round-trips.
  for (int prec = 6; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

std::string JsonEscape(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string ParamToString(const ParamValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return DoubleToString(*d);
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  return std::get<bool>(v) ? "true" : "false";
}

std::string ParamToJson(const ParamValue& v) {
  if (auto* s = std::get_if<std::string>(&v)) return JsonEscape(*s);
  if (auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) return "null";
    std::string t = DoubleToString(*d);
    // Keep doubles recognisable as floats in JSON (1 -> 1.0).
    if (t.find_first_of(".eE") == std::string::npos) t += ".0";
    return t;
  }
  return ParamToString(v);
}

std::string ParamsToJson(const ParamMap& params) {
  std::string out = "{";
  bool first = true;
  for (const auto& [name, value] : params) {
    if (!first) out += ", ";
    first = false;
    out += JsonEscape(name) + ": " + ParamToJson(value);
  }
  return out + "}";
}

bool ParamEquals(const ParamValue& a, const ParamValue& b) { return a == b; }

}  // namespace tune
