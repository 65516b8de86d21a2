#include "search/gp_space.h"

#include <algorithm>
#include <cmath>

#include "search/sobol.h"

namespace tune {
namespace {

// Above this many values a stepped number is searched as continuous and
// rounded at the end (its grid would cost more memory than it is worth).
constexpr int64_t kMaxGrid = 1 << 16;

double AsNumber(const ParamValue& v) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return NAN;
}

}  // namespace

GpSpace::GpSpace(const SearchSpace& space) {
  for (const auto& [name, dist] : space) {
    Param p;
    p.dist = dist;
    double low = 0, high = 0;
    bool log = false;
    if (auto* f = std::get_if<FloatDistribution>(&dist)) {
      low = f->low, high = f->high, log = f->log;
      p.step = f->step.value_or(0.0);
    } else if (auto* i = std::get_if<IntDistribution>(&dist)) {
      low = static_cast<double>(i->low), high = static_cast<double>(i->high), log = i->log;
      p.step = static_cast<double>(i->step);
    } else {
      p.kind = Param::kCategorical;
      p.step = 1;
      int64_t n = static_cast<int64_t>(std::get<CategoricalDistribution>(dist).choices.size());
      for (int64_t k = 0; k < n; ++k) p.choices.push_back(static_cast<double>(k));
    }
    if (p.kind != Param::kCategorical) {
      p.kind = log ? Param::kLog : Param::kLinear;
      // Optuna's _normalize_one_param: bounds widened by half a step; a log
      // domain whose widened low bound would not be positive is not widened.
      double wlow = low - 0.5 * p.step, whigh = high + 0.5 * p.step;
      if (log && wlow <= 0) wlow = low, whigh = high;
      p.lo = log ? std::log(wlow) : wlow;
      p.hi = log ? std::log(whigh) : whigh;
      auto card = Cardinality(dist);
      if (p.step > 0 && card && *card <= kMaxGrid) {
        for (int64_t k = 0; k < *card; ++k) p.choices.push_back(Scale(p, AsNumber(NthValue(dist, k))));
      } else {
        p.step = 0;  // searched as continuous, rounded by Unnormalize
      }
    }
    int index = static_cast<int>(params_.size());
    (p.choices.empty() ? continuous_ : discrete_).push_back(index);
    is_categorical_.push_back(p.kind == Param::kCategorical);
    names_.push_back(name);
    params_.push_back(std::move(p));
  }
}

double GpSpace::Scale(const Param& p, double value) const {
  double v = p.kind == Param::kLog ? std::log(value) : value;
  if (p.hi == p.lo) return 0.5;
  return (v - p.lo) / (p.hi - p.lo);
}

double GpSpace::Unscale(const Param& p, double u) const {
  double v = p.lo + u * (p.hi - p.lo);
  return p.kind == Param::kLog ? std::exp(v) : v;
}

std::optional<std::vector<double>> GpSpace::Normalize(const ParamMap& params) const {
  std::vector<double> x(params_.size());
  for (size_t j = 0; j < params_.size(); ++j) {
    auto it = params.find(names_[j]);
    if (it == params.end() || !Contains(params_[j].dist, it->second)) return std::nullopt;
    if (params_[j].kind == Param::kCategorical) {
      x[j] = *ToInternal(params_[j].dist, it->second);
    } else {
      x[j] = Scale(params_[j], AsNumber(it->second));
    }
  }
  return x;
}

double GpSpace::Round(int index, double u) const {
  const Param& p = params_[index];
  if (p.choices.empty()) return u;
  int64_t n = static_cast<int64_t>(p.choices.size());
  if (p.kind == Param::kCategorical) {
    return p.choices[std::clamp<int64_t>(static_cast<int64_t>(std::floor(u * n)), 0, n - 1)];
  }
  // Nearest grid value in the parameter's own units (Optuna rounds there).
  double low = AsNumber(NthValue(p.dist, 0));
  double k = std::floor((Unscale(p, u) - low) / p.step + 0.5);
  return p.choices[std::clamp<int64_t>(static_cast<int64_t>(k), 0, n - 1)];
}

ParamMap GpSpace::Unnormalize(const double* x) const {
  ParamMap out;
  for (size_t j = 0; j < params_.size(); ++j) {
    const Param& p = params_[j];
    if (p.kind == Param::kCategorical) {  // the coordinate is the choice's index
      int64_t n = static_cast<int64_t>(p.choices.size());
      out[names_[j]] = NthValue(p.dist, std::clamp<int64_t>(std::llround(x[j]), 0, n - 1));
      continue;
    }
    double u = std::clamp(x[j], 0.0, 1.0);
    auto card = Cardinality(p.dist);
    if (!card) {
      const auto& f = std::get<FloatDistribution>(p.dist);
      out[names_[j]] = std::clamp(Unscale(p, u), f.low, f.high);
      continue;
    }
    // Stepped: the nearest grid value.
    double low = AsNumber(NthValue(p.dist, 0));
    double step = p.choices.empty() ? (std::holds_alternative<IntDistribution>(p.dist)
                                           ? static_cast<double>(std::get<IntDistribution>(p.dist).step)
                                           : *std::get<FloatDistribution>(p.dist).step)
                                    : p.step;
    double k = std::floor((Unscale(p, u) - low) / step + 0.5);
    out[names_[j]] = NthValue(p.dist, std::clamp<int64_t>(static_cast<int64_t>(k), 0, *card - 1));
  }
  return out;
}

std::vector<double> GpSpace::Sample(int n, uint64_t seed) const {
  const int d = dim();
  std::vector<double> x = ScrambledSobol(d, n, seed);
  for (int i = 0; i < n; ++i) {
    for (int j : discrete_) x[static_cast<size_t>(i) * d + j] = Round(j, x[static_cast<size_t>(i) * d + j]);
  }
  return x;
}

}  // namespace tune
