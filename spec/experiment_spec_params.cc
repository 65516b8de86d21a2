// experiment.json `parameters`: every parameter type of docs/experiment.md mapped
// onto the three Distribution shapes, with Ray Tune's bound conventions.
#include <cctype>
#include <cmath>
#include <set>

#include "spec/experiment_spec_reader.h"

namespace tune {
namespace spec_internal {
namespace {

// Integers beyond 2^53 do not survive the float internal representation
// (search/distribution.h), so integer bounds stay within it.
constexpr int64_t kMaxIntBound = int64_t{1} << 53;

const std::vector<std::string> kTypes = {"uniform", "loguniform", "quniform", "qloguniform",
                                         "randint", "qrandint",   "lograndint", "choice",
                                         "grid"};
// Names the command line can use besides the parameters.
const std::vector<std::string> kReservedNames = {"trial_id", "experiment", "trial_dir", "resume_from"};

bool IsIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Status ParseFloat(const ObjectReader& p, const std::string& type, Distribution* out) {
  FloatDistribution f;
  f.log = (type == "loguniform" || type == "qloguniform");
  bool quantized = (type == "quniform" || type == "qloguniform");
  TUNE_RETURN_IF_ERROR(p.Double("low", &f.low, Need::kRequired));
  TUNE_RETURN_IF_ERROR(p.Double("high", &f.high, Need::kRequired));
  const std::string high = Show(*p.Find("high"));
  if (f.log) {
    TUNE_RETURN_IF_ERROR(
        p.Expect(f.low > 0, "low", "a number above 0 (" + type + " needs positive bounds)"));
  }
  TUNE_RETURN_IF_ERROR(p.Expect(f.low < f.high, "low", "a number below high (" + high + ")"));
  // Samples are drawn as low + u * (high - low): the width must be a number.
  TUNE_RETURN_IF_ERROR(p.Expect(std::isfinite(f.high - f.low), "high",
                                "a number whose distance from low is finite (at most about 1.8e308)"));
  if (quantized) {
    double q = 0;
    TUNE_RETURN_IF_ERROR(p.Double("q", &q, Need::kRequired));
    TUNE_RETURN_IF_ERROR(p.Expect(q > 0, "q", "a number above 0"));
    TUNE_RETURN_IF_ERROR(p.Expect(q <= f.high - f.low, "q",
                                  "a step no larger than high - low (" +
                                      ParamToString(f.high - f.low) + ")"));
    f.step = q;
  }
  *out = f;
  return Status::Ok();
}

Status ParseInt(const ObjectReader& p, const std::string& type, Distribution* out) {
  IntDistribution d;
  int64_t low = 0, high = 0;
  TUNE_RETURN_IF_ERROR(p.Int("low", &low, Need::kRequired));
  TUNE_RETURN_IF_ERROR(p.Int("high", &high, Need::kRequired));
  const std::string in_range = "an integer between -2^53 and 2^53";
  TUNE_RETURN_IF_ERROR(p.Expect(low >= -kMaxIntBound && low <= kMaxIntBound, "low", in_range));
  TUNE_RETURN_IF_ERROR(p.Expect(high >= -kMaxIntBound && high <= kMaxIntBound, "high", in_range));
  const std::string shown_high = Show(*p.Find("high"));
  if (type == "lograndint") {
    TUNE_RETURN_IF_ERROR(
        p.Expect(low > 0, "low", "an integer above 0 (lograndint needs positive bounds)"));
  }
  if (type == "qrandint") {
    // Ray's qrandint: high is inclusive.
    int64_t q = 1;
    TUNE_RETURN_IF_ERROR(p.Int("q", &q));
    TUNE_RETURN_IF_ERROR(p.Expect(low < high, "low", "an integer below high (" + shown_high + ")"));
    TUNE_RETURN_IF_ERROR(p.Expect(q > 0, "q", "an integer above 0"));
    TUNE_RETURN_IF_ERROR(p.Expect(q <= high - low, "q",
                                  "a step no larger than high - low (" +
                                      std::to_string(high - low) + ")"));
    d.low = low;
    d.high = high;
    d.step = q;
  } else {
    // Ray's randint and lograndint: high is exclusive.
    TUNE_RETURN_IF_ERROR(p.Expect(low < high, "low",
                                  "an integer below high (" + shown_high + "; " + type +
                                      "'s high is exclusive)"));
    d.low = low;
    d.high = high - 1;
    d.log = (type == "lograndint");
  }
  *out = d;
  return Status::Ok();
}

// Numbers compare by value (1 and 1.0 are the same choice); strings and
// booleans by identity.
bool SameChoice(const ParamValue& a, const ParamValue& b) {
  auto num = [](const ParamValue& v) -> std::optional<double> {
    if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    if (auto* d = std::get_if<double>(&v)) return *d;
    return std::nullopt;
  };
  auto na = num(a), nb = num(b);
  if (na || nb) return na && nb && *na == *nb;
  return a == b;
}

// A choice value as written: bool, string, float or integer.
Result<ParamValue> ChoiceValue(const Reader& r, const std::string& path, const Json& v) {
  if (v.is_boolean()) return ParamValue(v.get<bool>());
  if (v.is_string()) return ParamValue(v.get<std::string>());
  if (v.is_number_float()) {
    auto d = AsDouble(v);
    if (!d) return r.FailValue(path, "a finite number", v);
    return ParamValue(*d);
  }
  if (v.is_number()) {
    auto n = AsInt64(v);
    if (!n) return r.FailValue(path, "an integer within 64 bits", v);
    return ParamValue(*n);
  }
  return r.FailValue(path, "a number, a string or a boolean", v);
}

Status ParseCategorical(const ObjectReader& p, const std::string& type, Distribution* out) {
  const Reader& r = p.reader();
  const std::string path = p.PathOf("values");
  const Json* values = p.Find("values");
  if (!values) return r.Missing(path, "a non-empty array of values");
  if (!values->is_array() || values->empty()) {
    return r.FailValue(path, "a non-empty array of values", *values);
  }
  CategoricalDistribution c;
  c.grid = (type == "grid");
  for (size_t i = 0; i < values->size(); ++i) {
    const Json& v = (*values)[i];
    TUNE_ASSIGN_OR_RETURN(ParamValue value, ChoiceValue(r, IndexPath(path, i), v));
    for (size_t j = 0; j < c.choices.size(); ++j) {
      if (SameChoice(c.choices[j], value)) {
        return r.FailValue(IndexPath(path, i),
                           "distinct values (this one repeats values[" + std::to_string(j) + "])",
                           v);
      }
    }
    c.choices.push_back(std::move(value));
  }
  *out = std::move(c);
  return Status::Ok();
}

Status ParseOne(const Reader& r, const Json& v, const std::string& path, Distribution* out) {
  TUNE_ASSIGN_OR_RETURN(
      ObjectReader p,
      ObjectReader::Make(r, v, path,
                         "an object such as {\"type\": \"uniform\", \"low\": 0, \"high\": 1}"));
  std::string type;
  TUNE_RETURN_IF_ERROR(p.Enum("type", kTypes, &type, Need::kRequired));
  const std::string context = "for type " + Quote(type);
  if (type == "uniform" || type == "loguniform" || type == "randint" || type == "lograndint") {
    TUNE_RETURN_IF_ERROR(p.AllowOnly({"type", "low", "high"}, context));
  } else if (type == "choice" || type == "grid") {
    TUNE_RETURN_IF_ERROR(p.AllowOnly({"type", "values"}, context));
  } else {
    TUNE_RETURN_IF_ERROR(p.AllowOnly({"type", "low", "high", "q"}, context));
  }
  if (type == "choice" || type == "grid") return ParseCategorical(p, type, out);
  if (type == "randint" || type == "qrandint" || type == "lograndint") return ParseInt(p, type, out);
  return ParseFloat(p, type, out);
}

}  // namespace

Status ParseDistribution(const Reader& r, const Json& v, const std::string& path, Distribution* out) {
  return ParseOne(r, v, path, out);
}

Status ParseParameters(const Reader& r, const Json& v, SearchSpace* out) {
  const std::string path = "parameters";
  if (!v.is_object() || v.empty()) {
    return r.FailValue(path, "an object with at least one parameter", v);
  }
  SearchSpace space;
  std::map<std::string, std::string> upper_names;  // TUNE_PARAM_<NAME> must be unique
  for (const auto& [name, value] : v.items()) {
    const std::string p = JoinPath(path, name);
    if (!IsIdentifier(name)) {
      return r.Fail(p,
                    "a parameter name of at most 64 letters, digits and '_', not starting with a "
                    "digit (it is used as ${name} and TUNE_PARAM_<NAME>)",
                    Quote(name));
    }
    for (const auto& reserved : kReservedNames) {
      if (name == reserved) {
        return r.Fail(p, "a name other than " + OneOf(kReservedNames) + " (the tuner sets those)",
                      Quote(name));
      }
    }
    auto [it, inserted] = upper_names.emplace(Upper(name), name);
    if (!inserted) {
      return r.Fail(p,
                    "a name that differs from " + Quote(it->second) +
                        " in more than case (both would be TUNE_PARAM_" + it->first + ")",
                    Quote(name));
    }
    Distribution d;
    TUNE_RETURN_IF_ERROR(ParseOne(r, value, p, &d));
    space.emplace(name, std::move(d));
  }
  *out = std::move(space);
  return Status::Ok();
}

namespace {

// One value of a point at `path`, as its parameter's domain takes it: the
// choice it equals (1 and 1.0 alike), an integer for int parameters, a
// number for float ones; an error naming the domain otherwise.
Result<ParamValue> PointValue(const Reader& r, const std::string& path, const Distribution& dist, const Json& v) {
  const std::string expected = "a value of " + Describe(dist);
  if (const auto* c = std::get_if<CategoricalDistribution>(&dist)) {
    TUNE_ASSIGN_OR_RETURN(ParamValue value, ChoiceValue(r, path, v));
    for (const ParamValue& choice : c->choices)
      if (SameChoice(choice, value)) return choice;
    return r.FailValue(path, expected, v);
  }
  std::optional<ParamValue> value;
  if (std::holds_alternative<IntDistribution>(dist)) {
    if (auto n = v.is_number() ? AsInt64(v) : std::nullopt) value = *n;
  } else if (auto d = v.is_number() ? AsDouble(v) : std::nullopt) {
    value = *d;
  }
  if (!value || !Contains(dist, *value)) return r.FailValue(path, expected, v);
  return *value;
}

}  // namespace

Status ParsePoints(const Reader& r, const Json& v, const std::string& path, const SearchSpace& params,
                   std::vector<ParamMap>* out) {
  if (!v.is_array()) return r.FailValue(path, "an array of objects such as {\"learning_rate\": 0.001}", v);
  std::vector<std::string> names;
  for (const auto& [name, dist] : params) names.push_back(name);
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = IndexPath(path, i);
    const Json& point = v[i];
    if (!point.is_object()) return r.FailValue(at, "an object mapping parameter names to values", point);
    ParamMap values;
    for (const auto& [name, value] : point.items()) {
      auto it = params.find(name);
      if (it == params.end()) return r.Fail(at, "parameter names (" + OneOf(names) + ")", Quote(name));
      TUNE_ASSIGN_OR_RETURN(values[name], PointValue(r, JoinPath(at, name), it->second, value));
    }
    out->push_back(std::move(values));
  }
  return Status::Ok();
}

}  // namespace spec_internal
}  // namespace tune
