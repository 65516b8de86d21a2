#include "search/ped_anova.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <variant>

#include "search/distribution.h"
#include "search/truncnorm.h"

namespace tune {
namespace {

// Where a parameter's values fall on its grid: `size` points, counts per point.
struct GridCounts {
  int size = 0;
  std::vector<int64_t> counts;
};

// A numeric parameter's grid: its size and the bounds it spans (in log
// space for log parameters).
struct NumericGrid {
  int size = 0;
  bool log = false;
  double low = 0, high = 1;
};

NumericGrid GridOf(const Distribution& dist, int n_steps) {
  NumericGrid g;
  if (const auto* f = std::get_if<FloatDistribution>(&dist)) {
    g.log = f->log;
    g.low = f->log ? std::log(f->low) : f->low;
    g.high = f->log ? std::log(f->high) : f->high;
    g.size = n_steps;
    if (f->step && !f->log)
      g.size = std::min(static_cast<int>(std::round((f->high - f->low) / *f->step)) + 1, n_steps);
    return g;
  }
  const auto& d = std::get<IntDistribution>(dist);
  g.log = d.log;
  g.low = d.log ? std::log(static_cast<double>(d.low)) : static_cast<double>(d.low);
  g.high = d.log ? std::log(static_cast<double>(d.high)) : static_cast<double>(d.high);
  const double range = static_cast<double>(d.high - d.low);
  if (d.log) {
    const int log2_size = static_cast<int>(std::ceil(std::log(range + 1) / std::log(2.0))) + 1;
    g.size = std::min(log2_size, n_steps);
  } else {
    g.size = std::min(static_cast<int>(std::round(range / static_cast<double>(d.step))) + 1, n_steps);
  }
  return g;
}

// Counts of `trials`' values of `name` per grid point; nullopt if a trial
// lacks the parameter or holds a value outside `dist`.
std::optional<GridCounts> Count(const std::string& name, const Distribution& dist,
                                const std::vector<const Trial*>& trials, int n_steps) {
  GridCounts out;
  const auto* cat = std::get_if<CategoricalDistribution>(&dist);
  NumericGrid grid;
  if (cat) {
    out.size = static_cast<int>(cat->choices.size());
  } else {
    grid = GridOf(dist, n_steps);
    out.size = grid.size;
  }
  out.counts.assign(static_cast<size_t>(out.size), 0);
  const double step = cat ? 0 : (grid.high - grid.low) / (grid.size - 1);
  for (const Trial* t : trials) {
    auto it = t->params.find(name);
    if (it == t->params.end()) return std::nullopt;
    // The choice's index, or the number itself (ToInternal's representation).
    const auto internal = ToInternal(dist, it->second);
    if (!internal) return std::nullopt;
    int64_t index = 0;
    if (cat) {
      index = static_cast<int64_t>(*internal);
    } else {
      const double x = grid.log ? std::log(*internal) : *internal;
      // Ties at a midpoint go to the lower point.
      index = static_cast<int64_t>(std::ceil((x - grid.low) / step - 0.5));
      index = std::clamp<int64_t>(index, 0, grid.size - 1);
    }
    ++out.counts[static_cast<size_t>(index)];
  }
  return out;
}

// The Parzen estimator's probability of each grid point: one kernel per
// occupied point (weighted by its count) plus a prior kernel. Choices get
// Optuna's categorical kernels; numeric grids discretised truncated normals
// on 0..size-1 with a Scott's-rule bandwidth.
std::vector<double> GridPdf(const GridCounts& g, bool categorical, double prior_weight) {
  std::vector<double> obs, w;
  for (int i = 0; i < g.size; ++i) {
    if (g.counts[static_cast<size_t>(i)] == 0) continue;
    obs.push_back(i);
    w.push_back(static_cast<double>(g.counts[static_cast<size_t>(i)]));
  }
  const int n = static_cast<int>(obs.size());
  std::vector<double> mix(w);  // kernel weights, the prior's last
  mix.push_back(prior_weight);
  double mix_total = 0;
  for (double m : mix) mix_total += m;
  for (double& m : mix) m /= mix_total;
  std::vector<double> pdf(static_cast<size_t>(g.size), 0.0);

  if (categorical) {
    const double kernels = n + 1, base = prior_weight / kernels;
    const double row_total = g.size * base + 1;
    for (int k = 0; k < n; ++k)
      for (int x = 0; x < g.size; ++x)
        pdf[static_cast<size_t>(x)] += mix[static_cast<size_t>(k)] * (base + (x == obs[static_cast<size_t>(k)])) / row_total;
    const double prior_total = g.size * base;
    if (prior_total > 0)
      for (int x = 0; x < g.size; ++x) pdf[static_cast<size_t>(x)] += mix.back() * base / prior_total;
    return pdf;
  }

  // Scott's rule on the occupied points: the smaller of the standard
  // deviation and IQR/1.34, times 1.059 n^-1/5, at least 0.5/1.64 (so that
  // 90% of a kernel's mass fits a grid cell).
  const int64_t total = std::accumulate(g.counts.begin(), g.counts.end(), int64_t{0});
  double mean = 0, var = 0;
  for (int k = 0; k < n; ++k) mean += obs[static_cast<size_t>(k)] * w[static_cast<size_t>(k)];
  mean /= static_cast<double>(total);
  for (int k = 0; k < n; ++k) {
    const double d = obs[static_cast<size_t>(k)] - mean;
    var += d * d * w[static_cast<size_t>(k)];
  }
  const double sd = std::sqrt(var / static_cast<double>(std::max<int64_t>(1, total - 1)));
  std::vector<int64_t> cum;  // cumulative counts over the occupied points
  int64_t running = 0;
  for (double count : w) cum.push_back(running += static_cast<int64_t>(count));
  const int64_t q1_target = total / 4, q3_target = total * 3 / 4;
  const int q1 = static_cast<int>(std::lower_bound(cum.begin(), cum.end(), q1_target) - cum.begin());
  const int q3 = static_cast<int>(std::upper_bound(cum.begin(), cum.end(), q3_target) - cum.begin());
  const double iqr = obs[static_cast<size_t>(std::min(n - 1, q3))] - obs[static_cast<size_t>(std::min(n - 1, q1))];
  double sigma = 1.059 * std::min(iqr / 1.34, sd) * std::pow(static_cast<double>(total), -0.2);
  sigma = std::max(sigma, 0.5 / 1.64);

  const double low = 0, high = g.size - 1;
  auto add_kernel = [&](double weight, double mu, double s) {
    const double norm = truncnorm::LogGaussMass((low - 0.5 - mu) / s, (high + 0.5 - mu) / s);
    for (int x = 0; x < g.size; ++x) {
      const double mass = truncnorm::LogGaussMass((x - 0.5 - mu) / s, (x + 0.5 - mu) / s);
      pdf[static_cast<size_t>(x)] += weight * std::exp(mass - norm);
    }
  };
  for (int k = 0; k < n; ++k) add_kernel(mix[static_cast<size_t>(k)], obs[static_cast<size_t>(k)], sigma);
  add_kernel(mix.back(), (low + high) / 2, high - low + 1);
  return pdf;
}

}  // namespace

Result<PedAnovaResult> PedAnovaImportances(const SearchSpace& space, const History& trials, bool maximize,
                                           const PedAnovaOptions& options) {
  if (!(options.target_quantile > 0 && options.target_quantile < 1))
    return Status::InvalidArgument("target_quantile must lie in (0, 1)");
  if (options.n_steps < 2) return Status::InvalidArgument("n_steps must be at least 2");
  if (!(options.prior_weight >= 0)) return Status::InvalidArgument("prior_weight must not be negative");

  std::vector<const Trial*> all;
  for (const Trial& t : trials)
    if (t.state == TrialState::kCompleted && t.value && std::isfinite(*t.value)) all.push_back(&t);
  if (all.size() < 2) {
    return Status::FailedPrecondition("importances need at least 2 completed trials with a finite value, got " +
                                      std::to_string(all.size()));
  }
  // The top quantile by value, ties at the cutoff kept (Optuna's filter).
  const double sign = maximize ? -1.0 : 1.0;
  std::vector<double> losses;
  for (const Trial* t : all) losses.push_back(sign * *t->value);
  const size_t cutoff_index =
      static_cast<size_t>(std::ceil(options.target_quantile * static_cast<double>(losses.size()))) - 1;
  std::vector<double> sorted = losses;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(cutoff_index), sorted.end());
  const double cutoff = sorted[cutoff_index];
  std::vector<const Trial*> top;
  for (size_t i = 0; i < all.size(); ++i)
    if (losses[i] <= cutoff) top.push_back(all[i]);
  const double quantile = static_cast<double>(top.size()) / static_cast<double>(all.size());

  std::vector<ParamImportance> out;
  double sum = 0;
  for (const auto& [name, dist] : space) {
    ParamImportance p{name, 0.0};
    if (Cardinality(dist).value_or(2) > 1) {
      const bool categorical = std::holds_alternative<CategoricalDistribution>(dist);
      auto top_counts = Count(name, dist, top, options.n_steps);
      auto all_counts = Count(name, dist, all, options.n_steps);
      if (!top_counts || !all_counts)
        return Status::InvalidArgument("a completed trial has no value of '" + name + "' within " + Describe(dist));
      const std::vector<double> p_top = GridPdf(*top_counts, categorical, options.prior_weight);
      const std::vector<double> p_all = GridPdf(*all_counts, categorical, options.prior_weight);
      double divergence = 0;
      for (size_t g = 0; g < p_top.size(); ++g) {
        const double pt = p_top[g] + 1e-12, pa = p_all[g] + 1e-12;
        divergence += pa * (pt / pa - 1) * (pt / pa - 1);
      }
      p.importance = quantile * quantile * divergence;
    }
    sum += p.importance;
    out.push_back(p);
  }
  for (ParamImportance& p : out) p.importance = sum > 0 ? p.importance / sum : 1.0 / static_cast<double>(out.size());
  std::stable_sort(out.begin(), out.end(),
                   [](const ParamImportance& a, const ParamImportance& b) { return a.importance > b.importance; });
  PedAnovaResult result;
  result.importances = std::move(out);
  result.trials = static_cast<int>(all.size());
  result.top_trials = static_cast<int>(top.size());
  return result;
}

}  // namespace tune
