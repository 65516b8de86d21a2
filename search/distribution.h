// Distribution: the domain of one hyperparameter.
//
// Every experiment.json parameter type maps onto one of three shapes, as in
// Optuna. Bounds are inclusive and already validated (low < high, log bounds
// > 0, step > 0, choices non-empty) by the spec parser: code here may assume
// them. Values also have an internal float representation (Optuna's
// to_internal_repr): the value itself for numbers, the index for choices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/param.h"

namespace tune {

// uniform, loguniform, quniform (step), qloguniform (step + log).
// Quantised values are low + k*step (Optuna's semantics), never above high.
struct FloatDistribution {
  double low = 0, high = 1;
  bool log = false;
  std::optional<double> step;
};

// randint, qrandint (step), lograndint (log). Both bounds inclusive here:
// the parser turns Ray's exclusive `high` of randint/lograndint into high-1.
// Values are low + k*step.
struct IntDistribution {
  int64_t low = 0, high = 1;
  bool log = false;
  int64_t step = 1;
};

// choice and grid. `grid`: every value must be tried (cross product with the
// other grid parameters); samplers treat it as a plain choice otherwise.
struct CategoricalDistribution {
  std::vector<ParamValue> choices;
  bool grid = false;
};

using Distribution = std::variant<FloatDistribution, IntDistribution, CategoricalDistribution>;

// Internal float representation: the number itself for Float/Int, the choice
// index for Categorical. Returns nullopt if `value` is not in the domain.
std::optional<double> ToInternal(const Distribution& d, const ParamValue& value);
// Inverse of ToInternal. `internal` must lie in the domain (after rounding).
ParamValue FromInternal(const Distribution& d, double internal);
// True if `value` has the right type and lies in the domain.
bool Contains(const Distribution& d, const ParamValue& value);
// Number of distinct values, or nullopt for a continuous domain.
std::optional<int64_t> Cardinality(const Distribution& d);
// The i-th distinct value, 0 <= i < *Cardinality(d), in increasing order.
ParamValue NthValue(const Distribution& d, int64_t i);
// Human-readable form for errors and `tune validate`: "loguniform(1e-05, 0.01)".
std::string Describe(const Distribution& d);

}  // namespace tune
