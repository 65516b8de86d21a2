#include "tuner/trial_values.h"

#include <cmath>
#include <map>
#include <optional>

namespace tune {
namespace {

// metric -> step -> value over the counted reports (a later report of the
// same step replaces an earlier one, as Trial::intermediate does).
using Series = std::map<int64_t, double>;

std::optional<double> Scoped(const Series& s, Scope scope, Mode mode) {
  if (s.empty()) return std::nullopt;
  if (scope == Scope::kLast) return s.rbegin()->second;
  std::optional<double> best;
  for (const auto& [step, v] : s) {
    if (std::isnan(v)) continue;
    if (!best || (mode == Mode::kMin ? v < *best : v > *best)) best = v;
  }
  // Every report NaN: the value is NaN (stored as NULL).
  return best ? best : std::optional<double>(s.rbegin()->second);
}

}  // namespace

TrialValues ComputeTrialValues(const ExperimentSpec& spec, const std::vector<StoredReport>& reports, int attempt) {
  std::map<std::string, Series> series;
  for (const StoredReport& r : reports) {
    if (r.attempt != attempt || !r.excluded.empty()) continue;
    for (const auto& [name, v] : r.report.values) series[name][r.report.step] = v;
  }
  TrialValues out;
  for (const ObjectiveSpec& o : spec.objectives) {
    auto it = series.find(o.metric);
    std::optional<double> v = it == series.end() ? std::nullopt : Scoped(it->second, o.scope, o.mode);
    if (!v) {
      if (out.missing.empty()) out.missing = "the objective metric '" + o.metric + "'";
      continue;
    }
    out.values.push_back(*v);
  }
  for (const ConstraintSpec& c : spec.constraints) {
    auto it = series.find(c.metric);
    if (it == series.end() || it->second.empty()) {
      if (out.missing.empty()) out.missing = "the constraint metric '" + c.metric + "'";
      continue;
    }
    out.constraints.push_back(ConstraintValue(c, it->second.rbegin()->second));
  }
  // With one objective Trial::value is the value; Trial::values stays empty.
  if (!IsMultiObjective(spec)) out.values.clear();
  return out;
}

}  // namespace tune
