#include "import/katib_yaml.h"

#include "core/json_text.h"
#include "core/one_line.h"
#include "core/read_file.h"
#include "import/katib_import.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// The walk of CheckExpansion. The path of the node being visited is kept
// in one string, and each ancestor with the length of its path.
class ExpansionCheck {
 public:
  explicit ExpansionCheck(const std::string& file) : file_(file) {}

  // `line` (0-based) is where `n` stands in the text: its key's line in a
  // map, else its parent's (an aliased node's own mark is its anchor's).
  Status Walk(const YAML::Node& n, int line) {
    if (++nodes_ > kKatibMaxNodes) {
      return Fail(line, "at most " + std::to_string(kKatibMaxNodes) + " nodes with aliases expanded, got more");
    }
    if (n.IsScalar()) {
      text_bytes_ += n.Scalar().size();
      if (text_bytes_ > kKatibMaxTextBytes) {
        return Fail(line, "at most " + ByteCount(kKatibMaxTextBytes) + " of scalar text with aliases expanded, got more");
      }
      return Status::Ok();
    }
    if (!n.IsMap() && !n.IsSequence()) return Status::Ok();
    for (const auto& [ancestor, path_size] : ancestors_) {
      if (!ancestor.is(n)) continue;
      std::string holder = path_size == 0 ? "the document" : path_.substr(0, path_size);
      return Fail(line, "a value, got an alias to " + ::tune::OneLine(holder, 200) + ", which holds it");
    }
    if (ancestors_.size() >= static_cast<size_t>(kKatibMaxDepth)) {
      return Fail(line, "at most " + std::to_string(kKatibMaxDepth) + " levels of nesting with aliases expanded, got more");
    }
    ancestors_.emplace_back(n, path_.size());
    const size_t size = path_.size();
    const int own_line = n.Mark().is_null() ? line : n.Mark().line;
    size_t i = 0;
    for (const auto& item : n) {
      if (n.IsMap()) {
        const int key_line = item.first.Mark().is_null() ? own_line : item.first.Mark().line;
        path_ = Child(path_, item.first.IsScalar() ? item.first.Scalar() : "?");
        TUNE_RETURN_IF_ERROR(Walk(item.first, key_line));
        TUNE_RETURN_IF_ERROR(Walk(item.second, key_line));
      } else {
        path_ = Index(path_, i++);
        TUNE_RETURN_IF_ERROR(Walk(item, own_line));
      }
      path_.resize(size);
    }
    ancestors_.pop_back();
    return Status::Ok();
  }

 private:
  Status Fail(int line, const std::string& expected_got) const {
    std::string path = path_.empty() ? "the document" : ::tune::OneLine(path_, 200);
    return Status::InvalidArgument(file_ + ": line " + std::to_string(line + 1) + ": " + path + ": expected " +
                                   expected_got);
  }

  const std::string& file_;
  std::string path_;
  std::vector<std::pair<YAML::Node, size_t>> ancestors_;
  size_t nodes_ = 0, text_bytes_ = 0;
};

}  // namespace

Status CheckExpansion(const YAML::Node& doc, const std::string& file) {
  ExpansionCheck check(file);
  return check.Walk(doc, doc.Mark().is_null() ? 0 : doc.Mark().line);
}

Status ExpandMerges(const Ctx& ctx, const YAML::Node& n, const std::string& path) {
  if (n.IsSequence()) {
    size_t i = 0;
    for (const auto& item : n) TUNE_RETURN_IF_ERROR(ExpandMerges(ctx, item, Index(path, i++)));
    return Status::Ok();
  }
  if (!n.IsMap()) return Status::Ok();
  // The merged maps first (they may merge in turn), then this one.
  std::vector<YAML::Node> merge_keys, sources;
  for (const auto& kv : n) {
    const bool merge = kv.first.IsScalar() && kv.first.Scalar() == "<<" && Plain(kv.first);
    const std::string child = Child(path, kv.first.IsScalar() ? kv.first.Scalar() : "?");
    TUNE_RETURN_IF_ERROR(ExpandMerges(ctx, kv.second, child));
    if (!merge) continue;
    merge_keys.push_back(kv.first);
    if (kv.second.IsMap()) {
      sources.push_back(kv.second);
      continue;
    }
    if (!kv.second.IsSequence()) return ctx.FailNode(kv.second, child, "a map or a list of maps to merge");
    size_t i = 0;
    for (const auto& item : kv.second) {
      if (!item.IsMap()) return ctx.FailNode(item, Index(child, i), "a map to merge");
      sources.push_back(item);
      ++i;
    }
  }
  if (merge_keys.empty()) return Status::Ok();
  YAML::Node map = n;  // the same node, not a copy
  for (const YAML::Node& key : merge_keys) map.remove(key);
  for (const YAML::Node& source : sources) {
    for (const auto& kv : source) {
      if (!kv.first.IsScalar() || Get(map, kv.first.Scalar()).IsDefined()) continue;
      map[kv.first.Scalar()] = kv.second;  // shared, as an alias is
    }
  }
  return Status::Ok();
}

std::string Child(const std::string& path, const std::string& key) {
  std::string k = IsWord(key) ? key : "[" + Quote(key) + "]";
  if (path.empty()) return k;
  return k[0] == '[' ? path + k : path + "." + k;
}

std::string Index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string Quote(const std::string& s) {
  std::string cut = s.size() > 60 ? s.substr(0, 57) + "..." : s;
  // Invalid UTF-8 is replaced rather than thrown on.
  return DumpJson(Json(cut));
}

std::string Word(const std::string& s) {
  if (s.empty() || s.size() > 60) return Quote(s);
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("_.-/:", c)) return Quote(s);
  }
  return s;
}

std::string Show(const YAML::Node& n) {
  if (!Present(n)) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return Quote(n.Scalar());
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

std::string OneLine(const std::string& msg) {
  std::string out;
  for (char c : msg) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

Status CheckText(const std::string& s, const std::string& path) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    uint32_t cp = len == 1 ? b : len == 2 ? b & 0x1f : len == 3 ? b & 0x0f : b & 0x07;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      ok = (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3f);
    }
    // No overlong forms, surrogates or code points past U+10FFFF.
    ok = ok && !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
         cp <= 0x10ffff;
    bool printable = cp == 0x09 || cp == 0x0a || cp == 0x0d || (cp >= 0x20 && cp <= 0x7e) || cp == 0x85 ||
                     (cp >= 0xa0 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || cp >= 0x10000;
    if (!ok || !printable) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", b);
      return Status::InvalidArgument(path + ": line " + std::to_string(line) + ", column " + std::to_string(column) +
                                     ": expected YAML text (printable UTF-8), got " +
                                     (ok ? "the control character " : "the byte ") + buf);
    }
    if (cp == 0x0a) {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += len;
  }
  return Status::Ok();
}

int SecondDocumentLine(const std::string& s) {
  bool content = false;
  int line = 0;
  for (size_t pos = 0; pos < s.size();) {
    size_t end = s.find('\n', pos);
    if (end == std::string::npos) end = s.size();
    std::string l = s.substr(pos, end - pos);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    ++line;
    bool marker = l.rfind("---", 0) == 0 && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
    if (marker && content) return line;
    if (marker && l.find_first_not_of(" \t", 3) != std::string::npos && l[l.find_first_not_of(" \t", 3)] != '#') {
      content = true;  // "--- {a: 1}": content on the marker's line
    }
    size_t first = l.find_first_not_of(" \t");
    if (!marker && first != std::string::npos && l[first] != '#' && l[first] != '%' && l != "...") content = true;
    pos = end + 1;
  }
  return 0;
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
