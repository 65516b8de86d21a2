// Internal to tune_spec (experiment_spec*.cc): reading a JSON document while
// keeping track of the JSON path of every value, so that every error is one
// sentence "<file>: <json.path>: expected <what>, got <what was there>".
//
// Not a public header: it includes nlohmann/json, which tune_spec links
// PRIVATE. Nothing here is thread-safe or needs to be.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "spec/experiment_spec.h"

namespace tune {
namespace spec_internal {

using Json = nlohmann::json;

// "parameters" + "lr" -> "parameters.lr"; keys that are not plain words are
// quoted: backend.labels["app.kubernetes.io/name"].
std::string JoinPath(const std::string& path, const std::string& key);
// "trial.command" + 3 -> "trial.command[3]".
std::string IndexPath(const std::string& path, size_t index);
// A short human form of a JSON value for "got ...": 0.5, "abc", true, null,
// [1,2] or {"a":1} (long ones cut with "...").
std::string Show(const Json& v);
// JSON-quoted string, cut when long.
std::string Quote(const std::string& s);
// `"a", "b" or "c"`.
std::string OneOf(const std::vector<std::string>& words);

// Builds the error sentences of one file.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }

  // InvalidArgument "<file>: <path>: expected <expected>, got <got>".
  Status Fail(const std::string& path, const std::string& expected, const std::string& got) const;
  Status FailValue(const std::string& path, const std::string& expected, const Json& got) const {
    return Fail(path, expected, Show(got));
  }
  Status Missing(const std::string& path, const std::string& expected) const {
    return Fail(path, expected, "nothing (the key is missing)");
  }

 private:
  std::string file_;
};

enum class Need { kOptional, kRequired };

// One JSON object and its path. Typed getters leave *out unchanged when an
// optional key is absent, and fail (wrong type, out of range) with the key's
// path. The referenced Reader and Json must outlive the ObjectReader.
class ObjectReader {
 public:
  // Fails unless `v` is an object; `expected` describes what was wanted.
  static Result<ObjectReader> Make(const Reader& r, const Json& v, const std::string& path,
                                   const std::string& expected = "an object");

  const std::string& path() const { return path_; }
  const Reader& reader() const { return *reader_; }
  const Json& json() const { return *v_; }
  std::string PathOf(const std::string& key) const { return JoinPath(path_, key); }
  bool Has(const std::string& key) const { return v_->contains(key); }
  const Json* Find(const std::string& key) const;

  // Fails on the first key (in document order) not in `allowed`, suggesting
  // the nearest allowed key.
  Status AllowOnly(const std::vector<std::string>& allowed, const std::string& context = "") const;

  Status Double(const std::string& key, double* out, Need need = Need::kOptional) const;
  Status Int(const std::string& key, int64_t* out, Need need = Need::kOptional) const;
  Status Int(const std::string& key, int* out, Need need = Need::kOptional) const;
  Status Bool(const std::string& key, bool* out, Need need = Need::kOptional) const;
  Status String(const std::string& key, std::string* out, Need need = Need::kOptional) const;
  // An object of string values.
  Status StringMap(const std::string& key, std::map<std::string, std::string>* out) const;
  // A duration in seconds: above 0 and at most kMaxSeconds; `hint` (e.g.
  // "leave the key out for no limit") ends the error's expectation.
  Status Seconds(const std::string& key, double* out, const std::string& hint = "") const;
  // A string out of a fixed set.
  Status Enum(const std::string& key, const std::vector<std::string>& allowed, std::string* out,
              Need need = Need::kOptional) const;

  // If !ok: fails at `key` with `expected`, showing the key's value.
  Status Expect(bool ok, const std::string& key, const std::string& expected) const;

 private:
  ObjectReader(const Reader* r, const Json* v, std::string path)
      : reader_(r), v_(v), path_(std::move(path)) {}

  const Reader* reader_;
  const Json* v_;
  std::string path_;
};

// The longest duration a spec may give (about 31.7 years): durations
// become std::chrono nanoseconds, which end at about 292 years.
constexpr double kMaxSeconds = 1e9;

// A JSON number that is an integer (integral floats such as 1e3 included)
// within int64; nullopt otherwise.
std::optional<int64_t> AsInt64(const Json& v);
// A finite JSON number; nullopt otherwise.
std::optional<double> AsDouble(const Json& v);

// std::regex_match against `pattern` (a string literal), compiled once per
// thread: compiling dominates the cost of a parse otherwise.
bool Matches(const std::string& s, const char* pattern);

// The sections, one file each (experiment_spec_<section>.cc).
Status ParseParameters(const Reader& r, const Json& v, SearchSpace* out);
// search.points_to_evaluate: an array of objects naming parameters of
// `params` with values in their domains.
Status ParsePoints(const Reader& r, const Json& v, const std::string& path, const SearchSpace& params,
                   std::vector<ParamMap>* out);
Status ParseTrial(const Reader& r, const Json& v, const SearchSpace& params,
                  const std::string& base_dir, TrialTemplate* out);
Status ParseBackend(const Reader& r, const Json& v, const std::string& base_dir, BackendSpec* out);
// `tracking`: which outside trackers get the trials.
Status ParseTracking(const Reader& r, const Json& v, TrackingSpec* out);
// One distribution object as in `parameters` ({"type": "uniform", ...}) at
// `path`.
Status ParseDistribution(const Reader& r, const Json& v, const std::string& path, Distribution* out);
// scheduler of type "pbt" (experiment_spec_pbt.cc): its keys but
// hyperparam_mutations, with the unknown keys refused.
Status ParsePbtKeys(const ObjectReader& s, SchedulerSpec* out);
// scheduler.hyperparam_mutations of a pbt scheduler (`scheduler`: the
// scheduler object, or null): every parameter of `params` when absent.
Status ParsePbtMutations(const Reader& r, const Json* scheduler, const SearchSpace& params, SchedulerSpec* out);
// Refuses a pbt experiment that mutates the parameter trial.command passes
// to lora_train as --lora-r (a checkpoint holds adapters of one rank).
Status CheckPbtLoraRank(const Reader& r, const ExperimentSpec& spec);
// Checks between sections that depend on the backend type (image for
// kubernetes; slots and GPUs for local).
Status CheckBackendNeeds(const Reader& r, const ExperimentSpec& spec);

}  // namespace spec_internal
}  // namespace tune
