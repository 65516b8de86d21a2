// Metric line parsing: Katib text form and JSON form (see metric_parser.h).
//
// The text form is scanned by hand rather than with std::regex: every '=' is
// a candidate, the name is the run of name characters just before it and the
// value the token just after it. This is linear in the line length and keeps
// the rules of the header contract visible in code.
#include "trial_runner/metric_parser.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include <nlohmann/json.hpp>

namespace tune {
namespace {

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
         c == '/';
}

// Characters that may stand before a name and that end a value.
bool IsSeparator(char c) { return c == ' ' || c == ',' || c == '\t'; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// A decimal or scientific number ([+-]? (d+ (.d*)? | .d+) ([eE][+-]?d+)?),
// or nan / inf / infinity with an optional sign, in any case.
std::optional<double> ParseNumber(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (EqualsIgnoreCase(s, "nan")) return std::numeric_limits<double>::quiet_NaN();
  if (EqualsIgnoreCase(s, "inf") || EqualsIgnoreCase(s, "infinity")) {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  // Check the grammar first: std::from_chars alone would accept "nan(...)"
  // and hexadecimal-looking prefixes in some modes.
  size_t i = 0, digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    // Overflow saturates to infinity; underflow is zero.
    bool big = false;
    for (char c : s) {
      if (c == 'e' || c == 'E') break;
      if (c >= '1' && c <= '9') {
        big = true;
        break;
      }
    }
    size_t e = s.find_first_of("eE");
    big = big && (e == std::string_view::npos || s[e + 1] != '-');
    v = big ? std::numeric_limits<double>::infinity() : 0.0;
  } else if (ec != std::errc() || ptr != s.data() + s.size()) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// JSON form. Returns nullopt if `line` is not a JSON object; an empty map if
// it is one without numeric members.
std::optional<std::map<std::string, double>> ParseJsonLine(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  std::map<std::string, double> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const nlohmann::json& v = it.value();
    if (v.is_boolean()) {
      out[it.key()] = v.get<bool>() ? 1.0 : 0.0;
    } else if (v.is_number()) {
      out[it.key()] = v.get<double>();
    }
  }
  return out;
}

std::map<std::string, double> ParseTextLine(std::string_view line) {
  std::map<std::string, double> out;
  for (size_t eq = line.find('='); eq != std::string_view::npos; eq = line.find('=', eq + 1)) {
    size_t begin = eq;
    while (begin > 0 && IsNameChar(line[begin - 1])) --begin;
    if (begin == eq) continue;                                 // empty name
    if (begin > 0 && !IsSeparator(line[begin - 1])) continue;  // e.g. "?x=1"
    size_t end = eq + 1;
    while (end < line.size() && !IsSeparator(line[end])) ++end;
    std::optional<double> value = ParseNumber(line.substr(eq + 1, end - eq - 1));
    if (!value) continue;
    out[std::string(line.substr(begin, eq - begin))] = *value;
  }
  return out;
}

}  // namespace

std::optional<std::map<std::string, double>> ParseMetricLine(std::string_view line) {
  std::string_view trimmed = Trim(line);
  if (trimmed.empty()) return std::nullopt;
  if (trimmed.front() == '{' && trimmed.back() == '}') {
    if (auto json = ParseJsonLine(trimmed)) {
      if (json->empty()) return std::nullopt;
      return json;
    }
  }
  std::map<std::string, double> text = ParseTextLine(trimmed);
  if (text.empty()) return std::nullopt;
  return text;
}

}  // namespace tune
