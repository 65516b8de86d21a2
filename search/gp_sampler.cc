#include "search/gp_sampler.h"

#include <algorithm>
#include <cmath>

#include "search/gp_fit.h"
#include "search/gp_optimize_acqf.h"
#include "search/gp_space.h"
#include "search/random_sampler.h"

namespace tune {
namespace {

// Optuna's _standardize_values (with warn_and_convert_inf): larger is better.
Eigen::VectorXd Standardize(std::vector<double> values) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (!std::isfinite(lo)) lo = hi = 0;
  Eigen::VectorXd y(values.size());
  for (size_t i = 0; i < values.size(); ++i) y[i] = std::clamp(values[i], lo, hi);
  double mean = y.mean();
  double sd = std::sqrt((y.array() - mean).square().mean());
  return (y.array() - mean) / std::max(1e-10, sd);
}

bool InFlight(TrialState s) { return s == TrialState::kRunning || s == TrialState::kPaused; }

}  // namespace

GpSampler::GpSampler(const GpSamplerOptions& options) : options_(options), rng_(options.seed) {}

SearchSpace GpSampler::RelativeSpace(const SearchSpace& space, const History& history) {
  (void)history;
  SearchSpace out;
  for (const auto& [name, dist] : space) {
    auto card = Cardinality(dist);
    if (!card || *card > 1) out.emplace(name, dist);
  }
  return out;
}

ParamMap GpSampler::SampleRelative(const SearchSpace& relative, const History& history) {
  if (relative.empty()) return {};
  const GpSpace space(relative);
  const int d = space.dim();
  std::vector<double> rows, running_rows, values;
  std::vector<int> numbers;
  for (const Trial& t : history) {
    bool done = t.state == TrialState::kCompleted && t.value && !std::isnan(*t.value);
    if (!done && !InFlight(t.state)) continue;
    auto x = space.Normalize(t.params);
    if (!x) continue;
    if (done) {
      rows.insert(rows.end(), x->begin(), x->end());
      values.push_back(options_.maximize ? *t.value : -*t.value);
      numbers.push_back(t.number);
    } else {
      running_rows.insert(running_rows.end(), x->begin(), x->end());
    }
  }
  const Eigen::Index n = static_cast<Eigen::Index>(values.size());
  if (n < options_.n_startup_trials || n == 0) return {};
  GpMatrix x = Eigen::Map<GpMatrix>(rows.data(), n, d);
  Eigen::VectorXd y = Standardize(values);
  Eigen::Index best_i = 0;
  double threshold = y.maxCoeff(&best_i);
  GpRegressor gpr = FitChained(space, rows, values, numbers);
  if (!running_rows.empty()) {
    const Eigen::Index r = static_cast<Eigen::Index>(running_rows.size()) / d;
    gpr.AppendRunning(Eigen::Map<GpMatrix>(running_rows.data(), r, d));
  }
  LogEI acqf(gpr, threshold);
  AcqfOptimizerOptions opt{options_.n_preliminary_samples, options_.n_local_search, options_.tol};
  std::vector<std::vector<double>> warm{std::vector<double>(rows.begin() + best_i * d, rows.begin() + (best_i + 1) * d)};
  std::vector<double> best = OptimizeAcqf(acqf, space, warm, opt, rng_);
  return space.Unnormalize(best.data());
}

GpRegressor GpSampler::FitChained(const GpSpace& space, const std::vector<double>& rows,
                                  const std::vector<double>& values, const std::vector<int>& numbers) {
  const int n = static_cast<int>(values.size()), d = space.dim();
  if (space.names() != fits_space_ || fits_.size() > 100000) fits_.clear(), fits_space_ = space.names();
  // The chain's first link, then the longest prefix already fitted.
  const int first = std::max(1, std::min(n, options_.n_startup_trials));
  int k = first;
  const std::vector<double>* init = nullptr;
  for (int j = n - 1; j >= first; --j) {
    auto it = fits_.find(std::vector<int>(numbers.begin(), numbers.begin() + j));
    if (it != fits_.end()) {
      k = j + 1, init = &it->second;
      break;
    }
  }
  for (;; ++k) {
    GpKernelParams start;
    if (init) {
      start.inverse_squared_lengthscales = Eigen::Map<const Eigen::VectorXd>(init->data(), d);
      start.kernel_scale = (*init)[d];
      start.noise_var = (*init)[d + 1];
    }
    GpMatrix x = Eigen::Map<const GpMatrix>(rows.data(), k, d);
    Eigen::VectorXd y = Standardize(std::vector<double>(values.begin(), values.begin() + k));
    GpRegressor gpr = FitGpRegressor(x, y, space.is_categorical(), kGpMinimumNoise,
                                     options_.deterministic_objective, 1e-2, init ? &start : nullptr);
    const GpKernelParams& p = gpr.params();
    std::vector<double> fitted(p.inverse_squared_lengthscales.data(), p.inverse_squared_lengthscales.data() + d);
    fitted.push_back(p.kernel_scale);
    fitted.push_back(p.noise_var);
    init = &(fits_[std::vector<int>(numbers.begin(), numbers.begin() + k)] = std::move(fitted));
    if (k == n) return gpr;
  }
}

ParamValue GpSampler::SampleIndependent(const std::string& name, const Distribution& dist,
                                        const History& history) {
  (void)name; (void)history;
  return SampleUniform(dist, rng_);
}

}  // namespace tune
