// GpSpace: the Gaussian-process sampler's view of a search space (Optuna's
// optuna/_gp/search_space.py, SearchSpace).
//
// Every parameter becomes one coordinate in [0, 1]: numbers scaled linearly
// between their bounds, in log space for log domains, with the bounds of a
// stepped domain (ints, quantised floats) widened by half a step
// (_normalize_one_param); a choice becomes its index, compared only for
// equality by the kernel. Stepped numbers and choices are "discrete": their
// coordinate takes only the values DiscreteChoices lists.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "search/search_space.h"

namespace tune {

class GpSpace {
 public:
  explicit GpSpace(const SearchSpace& space);

  int dim() const { return static_cast<int>(params_.size()); }
  const std::vector<std::string>& names() const { return names_; }
  // Per coordinate: 1 for a choice (Hamming term in the kernel), else 0.
  const std::vector<char>& is_categorical() const { return is_categorical_; }
  const std::vector<int>& continuous_indices() const { return continuous_; }
  const std::vector<int>& discrete_indices() const { return discrete_; }
  // The sorted coordinate values of discrete coordinate `index`.
  const std::vector<double>& DiscreteChoices(int index) const { return params_[index].choices; }

  // The coordinates of `params`, or nullopt if one is missing or outside its
  // distribution.
  std::optional<std::vector<double>> Normalize(const ParamMap& params) const;
  // The parameters at coordinates `x` (dim() values), each inside its
  // distribution: clipped, discrete ones at the nearest value.
  ParamMap Unnormalize(const double* x) const;
  // `u` in [0, 1] moved to the nearest value coordinate `index` can take
  // (Optuna's _round_one_normalized_param; choices: floor(u * n)).
  double Round(int index, double u) const;
  // n scrambled Sobol points, rounded, row-major (Optuna's
  // _sample_normalized_params).
  std::vector<double> Sample(int n, uint64_t seed) const;

 private:
  struct Param {
    Distribution dist;
    enum Kind { kLinear, kLog, kCategorical } kind = kLinear;
    double lo = 0, hi = 1;  // widened (and logged) bounds of the scaled value
    double step = 0;        // 0: continuous
    std::vector<double> choices;
  };
  double Scale(const Param& p, double value) const;
  double Unscale(const Param& p, double u) const;
  std::vector<Param> params_;
  std::vector<std::string> names_;
  std::vector<char> is_categorical_;
  std::vector<int> continuous_, discrete_;
};

}  // namespace tune
