#include "tuner/import/katib_yaml.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>

namespace tune {
namespace katib_internal {

namespace {

bool IsWord(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// Only plain (unquoted, untagged) scalars are resolved; yaml-cpp tags a
// quoted scalar "!".
bool Plain(const YAML::Node& n) { return n.Tag() == "?" || n.Tag().empty(); }

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return false;
  // strtod also reads hex floats, "inf" and "nan": not numbers in YAML.
  if (s.find_first_of("xXnN") != std::string::npos) return false;
  *out = v;
  return true;
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size() || errno == ERANGE) return false;
  *out = v;
  return true;
}

}  // namespace

std::string Child(const std::string& path, const std::string& key) {
  std::string k = IsWord(key) ? key : "[" + Json(key).dump() + "]";
  if (path.empty()) return k;
  return k[0] == '[' ? path + k : path + "." + k;
}

std::string Index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string Show(const YAML::Node& n) {
  if (!Present(n)) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  std::string s = n.Scalar();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return Json(s).dump();
}

YAML::Node Get(const YAML::Node& map, const std::string& key) {
  if (!map.IsDefined() || !map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& m = map;  // const: operator[] must not insert
  return m[key];
}

bool Present(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

Status Ctx::Fail(const YAML::Node& at, const std::string& path, const std::string& expected,
                 const std::string& got) const {
  std::string where = file_ + ": ";
  if (at.IsDefined() && !at.Mark().is_null()) where += "line " + std::to_string(at.Mark().line + 1) + ": ";
  return Status::InvalidArgument(where + path + ": expected " + expected + ", got " + got);
}

void Ctx::NoteOthers(const YAML::Node& m, const std::string& path, const std::set<std::string>& handled,
                     const std::map<std::string, std::string>& why) {
  if (!m.IsDefined() || !m.IsMap()) return;
  for (const auto& kv : m) {
    std::string key = kv.first.Scalar();
    if (handled.count(key) || !Present(kv.second)) continue;
    auto it = why.find(key);
    Note(Child(path, key), it != why.end() ? it->second : "not carried over (tune has no counterpart)");
  }
}

Status Ctx::Map(const YAML::Node& n, const std::string& path) const {
  return n.IsMap() ? Status::Ok() : FailNode(n, path, "a map");
}

Status Ctx::Seq(const YAML::Node& n, const std::string& path) const {
  return n.IsSequence() ? Status::Ok() : FailNode(n, path, "a list");
}

Status Ctx::String(const YAML::Node& n, const std::string& path, std::string* out) const {
  if (!n.IsScalar()) return FailNode(n, path, "a string");
  *out = n.Scalar();
  return Status::Ok();
}

Status Ctx::Number(const YAML::Node& n, const std::string& path, double* out) const {
  if (!n.IsScalar() || !ParseDouble(n.Scalar(), out)) return FailNode(n, path, "a number");
  return Status::Ok();
}

Status Ctx::Integer(const YAML::Node& n, const std::string& path, int64_t* out) const {
  if (!n.IsScalar() || !ParseInt(n.Scalar(), out)) return FailNode(n, path, "an integer");
  return Status::Ok();
}

Status Ctx::Bool(const YAML::Node& n, const std::string& path, bool* out) const {
  if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "True" || n.Scalar() == "TRUE")) {
    *out = true;
  } else if (n.IsScalar() && (n.Scalar() == "false" || n.Scalar() == "False" || n.Scalar() == "FALSE")) {
    *out = false;
  } else {
    return FailNode(n, path, "true or false");
  }
  return Status::Ok();
}

Json Ctx::ToJson(const YAML::Node& n) {
  if (!Present(n)) return nullptr;
  if (n.IsSequence()) {
    Json a = Json::array();
    for (const auto& item : n) a.push_back(ToJson(item));
    return a;
  }
  if (n.IsMap()) {
    Json o = Json::object();
    for (const auto& kv : n) o[kv.first.Scalar()] = ToJson(kv.second);
    return o;
  }
  const std::string& s = n.Scalar();
  if (!Plain(n)) return s;
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i = 0;
  double d = 0;
  if (std::regex_match(s, kInt) && ParseInt(s, &i)) return i;
  if (std::regex_match(s, kFloat) && ParseDouble(s, &d)) return d;
  return s;
}

}  // namespace katib_internal
}  // namespace tune
