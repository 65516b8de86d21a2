// JSON-path-aware reading for the experiment.json parser.
#include "spec/experiment_spec_reader.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "core/json_text.h"

namespace tune {
namespace spec_internal {
namespace {

constexpr size_t kMaxShown = 48;

bool IsPlainWord(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string Cut(std::string s) {
  if (s.size() <= kMaxShown) return s;
  return s.substr(0, kMaxShown - 3) + "...";
}

// Edit distance with transpositions (optimal string alignment), for "did
// you mean": "nmae" is one edit from "name".
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string JoinPath(const std::string& path, const std::string& key) {
  std::string k = IsPlainWord(key)
                      ? key
                      : "[" + DumpJson(Json(key)) + "]";
  if (path.empty()) return k;
  return IsPlainWord(key) ? path + "." + k : path + k;
}

std::string IndexPath(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string Quote(const std::string& s) {
  std::string q = DumpJson(Json(s));
  if (q.size() <= kMaxShown) return q;
  return q.substr(0, kMaxShown - 4) + "...\"";
}

std::string Show(const Json& v) {
  if (v.is_string()) return Quote(v.get<std::string>());
  return Cut(DumpJson(v));
}

std::string OneOf(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += (i + 1 == words.size()) ? " or " : ", ";
    out += Quote(words[i]);
  }
  return out;
}

Status Reader::Fail(const std::string& path, const std::string& expected,
                    const std::string& got) const {
  return Status::InvalidArgument(file_ + ": " + (path.empty() ? "top level" : path) +
                                 ": expected " + expected + ", got " + got);
}

std::optional<int64_t> AsInt64(const Json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    // 2^63 is the first double above int64's range.
    if (!std::isfinite(d) || d != std::floor(d) || d < -9.2233720368547758e18 ||
        d >= 9.2233720368547758e18) {
      return std::nullopt;
    }
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

bool Matches(const std::string& s, const char* pattern) {
  thread_local std::map<std::string, std::regex> compiled;
  auto it = compiled.find(pattern);
  if (it == compiled.end()) it = compiled.emplace(pattern, std::regex(pattern)).first;
  return std::regex_match(s, it->second);
}

std::optional<double> AsDouble(const Json& v) {
  if (!v.is_number()) return std::nullopt;
  double d = v.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

Result<ObjectReader> ObjectReader::Make(const Reader& r, const Json& v, const std::string& path,
                                        const std::string& expected) {
  if (!v.is_object()) return r.FailValue(path, expected, v);
  return ObjectReader(&r, &v, path);
}

const Json* ObjectReader::Find(const std::string& key) const {
  auto it = v_->find(key);
  return it == v_->end() ? nullptr : &*it;
}

Status ObjectReader::AllowOnly(const std::vector<std::string>& allowed,
                               const std::string& context) const {
  for (const auto& [key, value] : v_->items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string got = "the unknown key " + Quote(key);
    std::string best;
    size_t best_d = 3;
    for (const auto& a : allowed) {
      size_t d = EditDistance(key, a);
      if (d < best_d && d <= std::max<size_t>(1, a.size() / 3)) {
        best_d = d;
        best = a;
      }
    }
    if (!best.empty()) got += " (did you mean " + Quote(best) + "?)";
    std::string expected =
        allowed.size() == 1 ? "only the key " + Quote(allowed[0]) : "one of the keys " + OneOf(allowed);
    if (!context.empty()) expected += " " + context;
    return reader_->Fail(PathOf(key), expected, got);
  }
  return Status::Ok();
}

Status ObjectReader::Expect(bool ok, const std::string& key, const std::string& expected) const {
  if (ok) return Status::Ok();
  const Json* v = Find(key);
  if (!v) return reader_->Missing(PathOf(key), expected);
  return reader_->FailValue(PathOf(key), expected, *v);
}

Status ObjectReader::Double(const std::string& key, double* out, Need need) const {
  const Json* v = Find(key);
  if (!v) return need == Need::kRequired ? reader_->Missing(PathOf(key), "a number") : Status::Ok();
  auto d = AsDouble(*v);
  if (!d) return reader_->FailValue(PathOf(key), "a number", *v);
  *out = *d;
  return Status::Ok();
}

Status ObjectReader::Seconds(const std::string& key, double* out, const std::string& hint) const {
  if (!Has(key)) return Status::Ok();
  double seconds = 0;
  TUNE_RETURN_IF_ERROR(Double(key, &seconds));
  TUNE_RETURN_IF_ERROR(Expect(seconds > 0 && seconds <= kMaxSeconds, key,
                              "a number of seconds above 0 and at most 1e9" +
                                  (hint.empty() ? std::string() : " (" + hint + ")")));
  *out = seconds;
  return Status::Ok();
}

namespace {
// An integer JSON number, or a finite float with an integral value (1e3).
bool IsIntegral(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d);
}
}  // namespace

Status ObjectReader::Int(const std::string& key, int64_t* out, Need need) const {
  const Json* v = Find(key);
  if (!v) return need == Need::kRequired ? reader_->Missing(PathOf(key), "an integer") : Status::Ok();
  auto i = AsInt64(*v);
  if (!i) {
    return reader_->FailValue(PathOf(key),
                              IsIntegral(*v) ? "an integer from -2^63 to 2^63-1" : "an integer", *v);
  }
  *out = *i;
  return Status::Ok();
}

Status ObjectReader::Int(const std::string& key, int* out, Need need) const {
  const Json* v = Find(key);
  auto i = v ? AsInt64(*v) : std::nullopt;
  if (v && IsIntegral(*v) &&
      (!i || *i < std::numeric_limits<int>::min() || *i > std::numeric_limits<int>::max())) {
    return reader_->FailValue(PathOf(key), "an integer from -2147483648 to 2147483647", *v);
  }
  int64_t wide = *out;
  TUNE_RETURN_IF_ERROR(Int(key, &wide, need));
  *out = static_cast<int>(wide);
  return Status::Ok();
}

Status ObjectReader::Bool(const std::string& key, bool* out, Need need) const {
  const Json* v = Find(key);
  if (!v) return need == Need::kRequired ? reader_->Missing(PathOf(key), "true or false") : Status::Ok();
  if (!v->is_boolean()) return reader_->FailValue(PathOf(key), "true or false", *v);
  *out = v->get<bool>();
  return Status::Ok();
}

Status ObjectReader::String(const std::string& key, std::string* out, Need need) const {
  const Json* v = Find(key);
  if (!v) return need == Need::kRequired ? reader_->Missing(PathOf(key), "a string") : Status::Ok();
  if (!v->is_string()) return reader_->FailValue(PathOf(key), "a string", *v);
  *out = v->get<std::string>();
  return Status::Ok();
}

Status ObjectReader::StringMap(const std::string& key, std::map<std::string, std::string>* out) const {
  const Json* v = Find(key);
  if (!v) return Status::Ok();
  TUNE_ASSIGN_OR_RETURN(ObjectReader obj,
                        Make(*reader_, *v, PathOf(key), "an object of strings"));
  std::map<std::string, std::string> result;
  for (const auto& [k, value] : v->items()) {
    if (!value.is_string()) return reader_->FailValue(obj.PathOf(k), "a string", value);
    result[k] = value.get<std::string>();
  }
  *out = std::move(result);
  return Status::Ok();
}

Status ObjectReader::Enum(const std::string& key, const std::vector<std::string>& allowed,
                          std::string* out, Need need) const {
  const Json* v = Find(key);
  if (!v) return need == Need::kRequired ? reader_->Missing(PathOf(key), OneOf(allowed)) : Status::Ok();
  if (!v->is_string() ||
      std::find(allowed.begin(), allowed.end(), v->get<std::string>()) == allowed.end()) {
    return reader_->FailValue(PathOf(key), OneOf(allowed), *v);
  }
  *out = v->get<std::string>();
  return Status::Ok();
}

}  // namespace spec_internal
}  // namespace tune
