#include "search/parzen_estimator.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "core/status.h"
#include "search/parzen_chunk.h"
#include "search/truncnorm.h"

namespace tune {
namespace {

constexpr double kEps = 1e-12;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;
constexpr double kSigma0Magnitude = 0.2;

using ArrayMap = Eigen::Map<Eigen::ArrayXd>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXd>;

// A uniform double in (0, 1) from 53 random bits.
double Uniform(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
}

// A discrete dimension's coordinate of grid-scale value v, and back.
double GridCoordinate(const ParzenDimension& d, double v) { return d.log ? std::log(v) : v; }
double GridValue(const ParzenDimension& d, double x) { return d.log ? std::exp(x) : x; }

// The interval the kernels of a numerical dimension live on.
double LowerEdge(const ParzenDimension& d) {
  return d.kind == ParzenDimension::Kind::kDiscrete ? GridCoordinate(d, d.low - 0.5 * d.step) : d.low;
}
double UpperEdge(const ParzenDimension& d) {
  return d.kind == ParzenDimension::Kind::kDiscrete ? GridCoordinate(d, d.high + 0.5 * d.step)
                                                    : d.high;
}

// The grid point nearest to coordinate x, on the grid's own scale (rounded
// there, as Optuna rounds after undoing the log), and its coordinate.
double NearestGridValue(const ParzenDimension& d, double x) {
  double v = d.low + std::round((GridValue(d, x) - d.low) / d.step) * d.step;
  return std::clamp(v, d.low, d.high);
}
double SnapToGrid(const ParzenDimension& d, double x) {
  return GridCoordinate(d, NearestGridValue(d, x));
}

// Coordinates of the edges of grid point x's cell, inside [lo, hi].
void CellEdges(const ParzenDimension& d, double x, double lo, double hi, double* cell_lo,
               double* cell_hi) {
  if (d.log) {
    const double v = NearestGridValue(d, x);
    *cell_lo = std::max(std::log(v - 0.5 * d.step), lo);
    *cell_hi = std::min(std::log(v + 0.5 * d.step), hi);
  } else {
    *cell_lo = std::max(x - 0.5 * d.step, lo);
    *cell_hi = std::min(x + 0.5 * d.step, hi);
  }
}

bool IsLogScaled(const Distribution& dist) {
  if (auto* f = std::get_if<FloatDistribution>(&dist)) return f->log;
  if (auto* i = std::get_if<IntDistribution>(&dist)) return i->log;
  return false;
}

}  // namespace

ParzenDimension ParzenDimensionOf(const Distribution& dist, ParzenRules rules) {
  ParzenDimension d;
  if (auto* c = std::get_if<CategoricalDistribution>(&dist)) {
    d.kind = ParzenDimension::Kind::kCategorical;
    d.n_choices = static_cast<int>(c->choices.size());
    return d;
  }
  double low, high, step = 0;
  if (auto* f = std::get_if<FloatDistribution>(&dist)) {
    low = f->low;
    high = f->high;
    step = f->step.value_or(0);
  } else {
    const auto& i = std::get<IntDistribution>(dist);
    low = static_cast<double>(i.low);
    high = static_cast<double>(i.high);
    step = static_cast<double>(i.step);
  }
  const bool log_int = std::holds_alternative<IntDistribution>(dist) && IsLogScaled(dist);
  if (log_int && rules == ParzenRules::kOptuna5 && low - 0.5 * step > 0) {
    d.kind = ParzenDimension::Kind::kDiscrete;
    d.log = true;
    d.step = step;
    d.low = low;
    d.high = low + static_cast<double>(*Cardinality(dist) - 1) * step;
  } else if (IsLogScaled(dist)) {
    d.kind = ParzenDimension::Kind::kContinuous;
    double lo = low - 0.5 * step, hi = high + 0.5 * step;
    if (lo <= 0) lo = 0.5 * low;
    d.low = std::log(lo);
    d.high = std::log(hi);
  } else if (step > 0) {
    d.kind = ParzenDimension::Kind::kDiscrete;
    d.step = step;
    d.low = low;
    ParamValue last = NthValue(dist, *Cardinality(dist) - 1);
    d.high = std::holds_alternative<double>(last) ? std::get<double>(last)
                                                   : static_cast<double>(std::get<int64_t>(last));
  } else {
    d.kind = ParzenDimension::Kind::kContinuous;
    d.low = low;
    d.high = high;
  }
  return d;
}

double ToParzenCoordinate(const Distribution& dist, double internal) {
  return IsLogScaled(dist) ? std::log(internal) : internal;
}

double FromParzenCoordinate(const Distribution& dist, double x) {
  double v = IsLogScaled(dist) ? std::exp(x) : x;
  return *ToInternal(dist, FromInternal(dist, v));
}

ParzenEstimator::ParzenEstimator(std::vector<ParzenDimension> dims,
                                 const std::vector<double>& observations,
                                 const std::vector<double>& weights,
                                 const ParzenEstimatorOptions& options,
                                 const std::vector<std::vector<int>>* sorted_orders) {
  Fit(std::move(dims), observations, weights, options, sorted_orders);
}

// The per-kernel arrays that the builders resize and then overwrite entirely
// (sigma, inv_sigma, log_norm, choice, base) keep their size, so that a
// refit of the same size does not zero them first.
void ParzenEstimator::ClearAxis(Axis* axis) {
  axis->mu.clear();
  axis->shared_sigma = false;
  axis->centre_of.clear();
  axis->centre_kernel.clear();
}

void ParzenEstimator::Fit(std::vector<ParzenDimension> dims, const std::vector<double>& observations,
                          const std::vector<double>& weights, const ParzenEstimatorOptions& options,
                          const std::vector<std::vector<int>>* sorted_orders) {
  // Every buffer keeps its capacity: a refit allocates nothing once warm.
  dims_ = std::move(dims);
  options_ = options;
  blocks_.clear();
  n_sorted_ = 0;
  sorted_order_.clear();
  const int d = num_dims();
  const int n = static_cast<int>(weights.size());
  TUNE_CHECK(observations.size() == static_cast<size_t>(n) * static_cast<size_t>(d));
  has_prior_ = options_.consider_prior || n == 0;  // an empty model is the prior
  const int k_total = n + (has_prior_ ? 1 : 0);

  // The normalised weights and their logs depend only on the input weights
  // (and the prior's): a univariate sampler refits with the same ones for
  // every parameter of a trial, so the last ones are kept.
  std::vector<double>& w = scratch_a_;
  w.assign(weights.begin(), weights.end());
  if (has_prior_) w.push_back(options_.prior_weight);
  if (w != weights_key_) {
    double total = std::accumulate(w.begin(), w.end(), 0.0);
    TUNE_CHECK(total > 0);
    norm_weights_.resize(k_total);
    log_norm_weights_.resize(k_total);
    for (int k = 0; k < k_total; ++k) norm_weights_[k] = w[k] / total;
    // Vectorised: the above model has a log weight per trial.
    ArrayMap(log_norm_weights_.data(), k_total) = ConstArrayMap(norm_weights_.data(), k_total).log();
    weights_key_.swap(w);
  }
  // Copies: merging duplicate kernels rewrites weights_ and log_weights_.
  weights_.assign(norm_weights_.begin(), norm_weights_.end());
  log_weights_.assign(log_norm_weights_.begin(), log_norm_weights_.end());

  axes_.resize(d);
  for (Axis& axis : axes_) ClearAxis(&axis);
  std::vector<double>& column = scratch_b_;
  column.resize(n);
  for (int j = 0; j < d; ++j) {
    for (int i = 0; i < n; ++i) column[i] = observations[static_cast<size_t>(i) * d + j];
    if (dims_[j].kind == ParzenDimension::Kind::kCategorical) {
      BuildCategoricalAxis(j, column, n);
    } else {
      const std::vector<int>* order = nullptr;
      if (sorted_orders && static_cast<int>(sorted_orders->size()) == d) order = &(*sorted_orders)[j];
      BuildNumericalAxis(j, column, n, order);
    }
  }
  if (d == 1) MergeDuplicateKernels();
  for (int j = 0; j < d; ++j)
    if (dims_[j].kind != ParzenDimension::Kind::kCategorical) FinishNumericalAxis(j);
  if (d == 1 && dims_[0].kind == ParzenDimension::Kind::kContinuous) BuildWindowIndex();
  continuous_axes_.clear();
  for (int j = 0; j < d; ++j)
    if (dims_[j].kind == ParzenDimension::Kind::kContinuous) continuous_axes_.push_back(j);
  if (blocks_.empty()) {
    const int k_merged = num_kernels();
    const_term_.assign(log_weights_.begin(), log_weights_.end());
    for (int j = 0; j < d; ++j) {
      const std::vector<double>& c =
          dims_[j].kind == ParzenDimension::Kind::kCategorical ? axes_[j].base : axes_[j].log_norm;
      ArrayMap(const_term_.data(), k_merged) += ConstArrayMap(c.data(), k_merged);
    }
  }

  cum_weights_.resize(weights_.size());
  double acc = 0;
  for (size_t k = 0; k < weights_.size(); ++k) cum_weights_[k] = acc += weights_[k];
}

void ParzenEstimator::BuildNumericalAxis(int j, const std::vector<double>& column, int n,
                                         const std::vector<int>* sorted_order) {
  const ParzenDimension& dim = dims_[j];
  Axis& axis = axes_[j];
  const double lo = LowerEdge(dim), hi = UpperEdge(dim), range = hi - lo;
  const int k_total = n + (has_prior_ ? 1 : 0);
  axis.mu.assign(column.begin(), column.end());
  if (has_prior_) axis.mu.push_back(0.5 * (lo + hi));
  axis.sigma.resize(k_total);

  if (options_.multivariate && options_.rules == ParzenRules::kOptuna3) {
    // Scott's rule as in BOHB; the same bandwidth for every kernel.
    double s0 = kSigma0Magnitude * std::pow(std::max(n, 1), -1.0 / (num_dims() + 4));
    std::fill(axis.sigma.begin(), axis.sigma.end(), s0 * range);
    axis.shared_sigma = true;
  } else {
    // Each kernel is as wide as the larger gap to its sorted neighbours (the
    // domain edges count as neighbours). Ties are ordered by index.
    std::vector<int>& order = sorted_order_;
    order.resize(k_total);
    if (sorted_order && static_cast<int>(sorted_order->size()) == n) {
      // Merge the prior (the largest index, so after equal centres) into
      // the caller's order.
      int r = 0;
      bool prior_placed = !has_prior_;
      for (int k : *sorted_order) {
        if (!prior_placed && axis.mu[k] > axis.mu[n]) {
          order[r++] = n;
          prior_placed = true;
        }
        order[r++] = k;
      }
      if (!prior_placed) order[r++] = n;
    } else {
      std::vector<std::pair<double, int>>& sorted = scratch_pairs_;
      sorted.resize(k_total);
      for (int k = 0; k < k_total; ++k) sorted[k] = {axis.mu[k], k};
      std::sort(sorted.begin(), sorted.end());
      for (int r = 0; r < k_total; ++r) order[r] = sorted[r].second;
    }
    // The gaps are taken between the m sorted centres (the prior's only
    // under Optuna 3's rules), listed in `gap_kernel`.
    const bool skip_prior = has_prior_ && options_.rules != ParzenRules::kOptuna3;
    std::vector<double>& ext = scratch_a_;
    std::vector<int>& gap_kernel = scratch_ints_;
    ext.resize(k_total + 2);
    gap_kernel.resize(k_total);
    int m = 0;
    ext[0] = lo;
    for (int r = 0; r < k_total; ++r) {
      if (skip_prior && order[r] == n) continue;
      gap_kernel[m] = order[r];
      ext[++m] = axis.mu[order[r]];
    }
    ext[m + 1] = hi;
    std::vector<double>& s = scratch_c_;
    s.resize(m);
    for (int r = 0; r < m; ++r) s[r] = std::max(ext[r + 1] - ext[r], ext[r + 2] - ext[r + 1]);
    if (!options_.consider_endpoints && m + 2 >= 4) {
      // Without endpoints the outermost kernels ignore the domain edge.
      s[0] = ext[2] - ext[1];
      s[m - 1] = ext[m] - ext[m - 1];
    }
    for (int r = 0; r < m; ++r) axis.sigma[gap_kernel[r]] = s[r];
  }

  const double max_sigma = range;
  const double min_sigma =
      options_.consider_magic_clip ? range / std::min(100.0, 1.0 + k_total) : kEps;
  for (double& s : axis.sigma) s = std::clamp(s, min_sigma, max_sigma);
  if (has_prior_) axis.sigma[n] = range;

}

void ParzenEstimator::FinishNumericalAxis(int j) {
  const ParzenDimension& dim = dims_[j];
  Axis& axis = axes_[j];
  const double lo = LowerEdge(dim), hi = UpperEdge(dim);
  const size_t k_total = axis.mu.size();
  axis.inv_sigma.resize(k_total);
  axis.log_norm.resize(k_total);
  const bool continuous = dim.kind == ParzenDimension::Kind::kContinuous;
  if (!continuous && IndexDiscreteCentres(j)) {
    // One normaliser per distinct (centre, width): a few per grid point.
    for (int k : axis.centre_kernel) {
      double inv = 1.0 / axis.sigma[k];
      axis.log_norm[k] = -truncnorm::LogGaussMass((lo - axis.mu[k]) * inv, (hi - axis.mu[k]) * inv);
    }
    for (size_t k = 0; k < k_total; ++k) {
      axis.inv_sigma[k] = 1.0 / axis.sigma[k];
      axis.log_norm[k] = axis.log_norm[axis.centre_kernel[axis.centre_of[k]]];
    }
    return;
  }
  double last_sigma = -1, log_sigma = 0;  // most widths repeat (clip, Scott)
  for (size_t k = 0; k < k_total; ++k) {
    double inv = 1.0 / axis.sigma[k];
    axis.inv_sigma[k] = inv;
    double log_z = truncnorm::LogGaussMass((lo - axis.mu[k]) * inv, (hi - axis.mu[k]) * inv);
    if (continuous && axis.sigma[k] != last_sigma) {
      last_sigma = axis.sigma[k];
      log_sigma = std::log(last_sigma);
    }
    axis.log_norm[k] = continuous ? -log_sigma - kLogSqrt2Pi - log_z : -log_z;
  }
}

// Groups the kernels of discrete axis j by (centre, width): with Scott's
// rule every observation kernel has the same width, with neighbour gaps a
// grid point's duplicates have a few (the clipped minimum and the gaps at
// the ends of the run). False (and no index) when the kernels are not
// mostly duplicates, so that an index would not save work.
bool ParzenEstimator::IndexDiscreteCentres(int j) {
  const ParzenDimension& dim = dims_[j];
  Axis& axis = axes_[j];
  const int k_total = static_cast<int>(axis.mu.size());
  axis.centre_of.resize(k_total);
  axis.centre_kernel.clear();
  // Centres are grid points: index them directly when the grid is small;
  // chain_ links the entries of one grid point (different widths).
  const int64_t grid = std::llround((dim.high - dim.low) / dim.step) + 1;
  std::vector<int>& by_grid = scratch_grid_;
  by_grid.assign(grid <= 65536 ? static_cast<size_t>(grid) : 0, -1);
  std::vector<int>& chain = scratch_chain_;
  chain.clear();
  struct PairHash {
    size_t operator()(const std::pair<double, double>& p) const {
      return std::hash<double>()(p.first) * 31 + std::hash<double>()(p.second);
    }
  };
  std::unordered_map<std::pair<double, double>, int, PairHash> other;
  for (int k = 0; k < k_total; ++k) {
    const int next = static_cast<int>(axis.centre_kernel.size());
    int64_t g = std::llround((GridValue(dim, axis.mu[k]) - dim.low) / dim.step);
    int entry;
    if (!by_grid.empty() && g >= 0 && g < grid &&
        axis.mu[k] == GridCoordinate(dim, dim.low + g * dim.step)) {
      int& head = by_grid[static_cast<size_t>(g)];
      entry = head;
      while (entry >= 0 && axis.sigma[axis.centre_kernel[entry]] != axis.sigma[k]) entry = chain[entry];
      if (entry < 0) {
        entry = next;
        axis.centre_kernel.push_back(k);
        chain.push_back(head);
        head = entry;
      }
    } else {
      auto [it, inserted] = other.emplace(std::make_pair(axis.mu[k], axis.sigma[k]), next);
      if (inserted) {
        axis.centre_kernel.push_back(k);
        chain.push_back(-1);
      }
      entry = it->second;
    }
    axis.centre_of[k] = entry;
  }
  if (2 * axis.centre_kernel.size() > static_cast<size_t>(k_total)) {
    axis.centre_of.clear();
    axis.centre_kernel.clear();
    return false;
  }
  return true;
}

// Sorts the observation kernels of a one-dimensional continuous model by
// centre and groups them in blocks with their extreme centres, widest
// bandwidth and largest log weight + normaliser.
void ParzenEstimator::BuildWindowIndex() {
  Axis& axis = axes_[0];
  const int k_total = num_kernels();
  n_sorted_ = k_total - (has_prior_ ? 1 : 0);
  std::vector<std::pair<double, int>>& sorted = scratch_pairs_;
  sorted.clear();
  if (static_cast<int>(sorted_order_.size()) == k_total) {
    // The neighbour rule sorted every kernel already; drop the prior.
    for (int k : sorted_order_)
      if (k < n_sorted_) sorted.emplace_back(axis.mu[k], k);
  } else {
    for (int k = 0; k < n_sorted_; ++k) sorted.emplace_back(axis.mu[k], k);
    std::sort(sorted.begin(), sorted.end());
  }
  auto permute = [&](std::vector<double>& v) {
    std::vector<double>& out = scratch_a_;
    out.resize(v.size());
    for (int r = 0; r < n_sorted_; ++r) out[r] = v[sorted[r].second];
    for (int k = n_sorted_; k < k_total; ++k) out[k] = v[k];
    v.swap(out);
  };
  permute(axis.mu);
  permute(axis.sigma);
  permute(axis.inv_sigma);
  permute(axis.log_norm);
  permute(log_weights_);
  permute(weights_);
  constexpr int kBlock = 32;
  blocks_.clear();
  for (int b = 0; b < n_sorted_; b += kBlock) {
    Block block;
    block.begin = b;
    block.end = std::min(n_sorted_, b + kBlock);
    block.mu_lo = axis.mu[block.begin];
    block.mu_hi = axis.mu[block.end - 1];
    block.sigma_max = 0;
    block.c_max = -std::numeric_limits<double>::infinity();
    for (int k = block.begin; k < block.end; ++k) {
      block.sigma_max = std::max(block.sigma_max, axis.sigma[k]);
      block.c_max = std::max(block.c_max, log_weights_[k] + axis.log_norm[k]);
    }
    blocks_.push_back(block);
  }
}

void ParzenEstimator::BuildCategoricalAxis(int j, const std::vector<double>& column, int n) {
  Axis& axis = axes_[j];
  const int c = dims_[j].n_choices;
  const int k_total = n + (has_prior_ ? 1 : 0);
  // Every kernel puts prior_weight / K on each choice and 1 more on its own
  // observation, then is normalised; the prior kernel is uniform.
  const double v = options_.prior_weight / k_total;
  axis.p_hit = (v + 1) / (c * v + 1);
  axis.p_miss = v / (c * v + 1);
  axis.log_hit = std::log(axis.p_hit);
  axis.log_miss = std::log(axis.p_miss);
  axis.log_uniform = -std::log(static_cast<double>(c));
  axis.choice.resize(k_total);
  for (int k = 0; k < n; ++k) {
    int idx = static_cast<int>(column[k]);  // an index: exact, lround only if not
    if (idx != column[k]) idx = static_cast<int>(std::lround(column[k]));
    TUNE_CHECK(idx >= 0 && idx < c);
    axis.choice[k] = idx;
  }
  if (has_prior_) axis.choice[n] = -1;
  axis.base.resize(k_total);
  for (int k = 0; k < k_total; ++k) axis.base[k] = axis.choice[k] < 0 ? axis.log_uniform : axis.log_miss;
}

// With one dimension, kernels with the same centre and width are one kernel
// with the summed weight: after this a discrete or categorical model has at
// most a few kernels per value, whatever the history length.
void ParzenEstimator::MergeDuplicateKernels() {
  const ParzenDimension& dim = dims_[0];
  if (dim.kind == ParzenDimension::Kind::kContinuous) return;
  Axis& axis = axes_[0];
  const int k_total = num_kernels();
  std::vector<int>& group = scratch_ints_;
  group.resize(k_total);
  int n_groups = 0;
  if (dim.kind == ParzenDimension::Kind::kCategorical) {
    std::vector<int> id(dim.n_choices + 1, -1);  // choice + 1 -> group
    for (int k = 0; k < k_total; ++k) {
      int& g = id[axis.choice[k] + 1];
      if (g < 0) g = n_groups++;
      group[k] = g;
    }
  } else if (static_cast<int>(sorted_order_.size()) == k_total) {
    // Equal centres are adjacent in sorted order; a run of them has only a
    // few distinct widths (the gaps at its two ends and the clipped minimum).
    std::vector<std::pair<double, int>> run;  // width -> group
    for (int r = 0; r < k_total; ++r) {
      int k = sorted_order_[r];
      if (r == 0 || axis.mu[k] != axis.mu[sorted_order_[r - 1]]) run.clear();
      auto it = std::find_if(run.begin(), run.end(),
                             [&](const auto& e) { return e.first == axis.sigma[k]; });
      if (it == run.end()) {
        run.emplace_back(axis.sigma[k], n_groups++);
        it = run.end() - 1;
      }
      group[k] = it->second;
    }
  } else {
    struct PairHash {
      size_t operator()(const std::pair<double, double>& p) const {
        return std::hash<double>()(p.first) * 31 + std::hash<double>()(p.second);
      }
    };
    std::unordered_map<std::pair<double, double>, int, PairHash> id;
    for (int k = 0; k < k_total; ++k) {
      auto [it, inserted] = id.emplace(std::make_pair(axis.mu[k], axis.sigma[k]), n_groups);
      if (inserted) ++n_groups;
      group[k] = it->second;
    }
  }
  if (n_groups == k_total) return;
  std::vector<double> w(n_groups, 0.0);
  std::vector<int> first(n_groups, -1);  // both small: one entry per merged kernel
  for (int k = 0; k < k_total; ++k) {
    w[group[k]] += weights_[k];
    if (first[group[k]] < 0) first[group[k]] = k;
  }
  Axis& merged = scratch_axis_;
  ClearAxis(&merged);
  merged.sigma.clear();
  merged.choice.clear();
  merged.base.clear();
  merged.shared_sigma = axis.shared_sigma;
  log_weights_.resize(n_groups);
  weights_ = w;
  for (int g = 0; g < n_groups; ++g) {
    log_weights_[g] = std::log(w[g]);
    int k = first[g];
    if (dim.kind == ParzenDimension::Kind::kCategorical) {
      merged.choice.push_back(axis.choice[k]);
    } else {
      merged.mu.push_back(axis.mu[k]);
      merged.sigma.push_back(axis.sigma[k]);
    }
  }
  if (dim.kind == ParzenDimension::Kind::kCategorical) {
    merged.log_hit = axis.log_hit;
    merged.log_miss = axis.log_miss;
    merged.log_uniform = axis.log_uniform;
    merged.p_hit = axis.p_hit;
    merged.p_miss = axis.p_miss;
    for (int g = 0; g < n_groups; ++g)
      merged.base.push_back(merged.choice[g] < 0 ? merged.log_uniform : merged.log_miss);
  }
  std::swap(axis, merged);  // keeps both sets of buffers for the next fit
}

void ParzenEstimator::Sample(std::mt19937_64& rng, int size, std::vector<double>* out) const {
  const int d = num_dims();
  out->resize(static_cast<size_t>(size) * d);
  const double total = cum_weights_.back();
  for (int s = 0; s < size; ++s) {
    double u = Uniform(rng) * total;
    int k = static_cast<int>(std::upper_bound(cum_weights_.begin(), cum_weights_.end(), u) -
                             cum_weights_.begin());
    k = std::min(k, num_kernels() - 1);
    for (int j = 0; j < d; ++j) {
      const ParzenDimension& dim = dims_[j];
      const Axis& axis = axes_[j];
      double& x = (*out)[static_cast<size_t>(s) * d + j];
      if (dim.kind == ParzenDimension::Kind::kCategorical) {
        double q = Uniform(rng);
        int hit = axis.choice[k];
        int c = 0;
        if (hit < 0) {
          c = std::min(static_cast<int>(q * dim.n_choices), dim.n_choices - 1);
        } else {
          double acc = 0;
          for (c = 0; c < dim.n_choices - 1; ++c) {
            acc += c == hit ? axis.p_hit : axis.p_miss;
            if (q < acc) break;
          }
        }
        x = c;
        continue;
      }
      const double lo = LowerEdge(dim), hi = UpperEdge(dim);
      const double mu = axis.mu[k], sigma = axis.sigma[k];
      double z = truncnorm::Ppf(Uniform(rng), (lo - mu) / sigma, (hi - mu) / sigma);
      x = std::clamp(mu + sigma * z, lo, hi);
      if (dim.kind == ParzenDimension::Kind::kDiscrete) x = SnapToGrid(dim, x);
    }
  }
}

// Terms more than kSkipMargin below the largest one change the log-sum-exp
// by less than K e^-40 (< 1e-13 relative for a million kernels).
constexpr double kSkipMargin = 40;

void ParzenEstimator::LogPdfWindowed(const std::vector<double>& x, std::vector<double>* out) const {
  const Axis& axis = axes_[0];
  const int k_total = num_kernels();
  const int m = static_cast<int>(x.size());
  out->assign(m, 0.0);
  thread_local std::vector<double> terms;  // scratch reused across calls, never shrunk
  if (terms.size() < static_cast<size_t>(k_total)) terms.resize(k_total);
  auto term = [&](int k, double v) {
    double z = (v - axis.mu[k]) * axis.inv_sigma[k];
    return log_weights_[k] + axis.log_norm[k] - 0.5 * z * z;
  };
  for (int i = 0; i < m; ++i) {
    const double v = x[i];
    // A lower bound on the largest term: the nearest kernels and the prior.
    double floor = -std::numeric_limits<double>::infinity();
    int pos = static_cast<int>(std::lower_bound(axis.mu.begin(), axis.mu.begin() + n_sorted_, v) -
                               axis.mu.begin());
    if (pos < n_sorted_) floor = std::max(floor, term(pos, v));
    if (pos > 0) floor = std::max(floor, term(pos - 1, v));
    for (int k = n_sorted_; k < k_total; ++k) floor = std::max(floor, term(k, v));
    const double threshold = floor - kSkipMargin;
    size_t used = 0;
    for (const Block& b : blocks_) {
      double gap = std::max({0.0, b.mu_lo - v, v - b.mu_hi}) / b.sigma_max;
      if (b.c_max - 0.5 * gap * gap < threshold) continue;
      const int len = b.end - b.begin;
      const ConstArrayMap mu(axis.mu.data() + b.begin, len), inv(axis.inv_sigma.data() + b.begin, len),
          c(axis.log_norm.data() + b.begin, len), lw(log_weights_.data() + b.begin, len);
      ArrayMap(terms.data() + used, len) = lw + c - 0.5 * ((v - mu) * inv).square();
      used += len;
    }
    for (int k = n_sorted_; k < k_total; ++k) terms[used++] = term(k, v);
    const ConstArrayMap t(terms.data(), static_cast<Eigen::Index>(used));
    double mx = t.maxCoeff();
    if (!std::isfinite(mx)) {
      (*out)[i] = mx;
      continue;
    }
    // Clamping at -700 keeps exp() off its slow underflow path; such terms
    // are below 1e-304 of the largest and do not change the sum. ExpSum
    // gives Eigen's exp().sum() of the shifted terms bit for bit.
    ArrayMap shifted(terms.data(), static_cast<Eigen::Index>(used));
    shifted = (shifted - mx).max(-700.0);
    (*out)[i] = mx + std::log(internal::ExpSum(terms.data(), static_cast<int>(used), 0.0));
  }
}

void ParzenEstimator::LogPdf(const std::vector<double>& x, std::vector<double>* out) const {
  if (blocks_.empty()) {
    LogPdfProduct(x, out);
  } else {
    LogPdfWindowed(x, out);
  }
}

// Kernels in chunks that stay in L1 while every point visits them; per point
// a streaming log-sum-exp (running maximum, sum rescaled when it grows) that
// skips terms more than kSkipMargin below the running maximum.
//
// Discrete and categorical axes add one looked-up term per kernel: per point
// a table (categorical: 0 or log_hit - log_miss by choice, the prior's -1
// included; discrete: the log mass of the point's cell under each distinct
// (centre, width), computed once per distinct value among the points) and
// per kernel an index into it.
void ParzenEstimator::LogPdfProduct(const std::vector<double>& x, std::vector<double>* out) const {
  const int d = num_dims();
  const int m = d == 0 ? 0 : static_cast<int>(x.size()) / d;
  const int k_total = num_kernels();
  out->assign(m, 0.0);
  if (m == 0) return;
  // Scratch reused across calls, never shrunk.
  thread_local std::vector<double> tables, mx, sum, t, kept, seen;
  thread_local std::vector<size_t> table_at, seen_at;
  thread_local std::vector<int> identity;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  // Lookup axes in axis order; table_at[i * n_lookups + p] is the offset of
  // point i's table for lookup p.
  thread_local std::vector<int> lookup_axis;
  thread_local std::vector<const int*> lookup_index, index;
  thread_local std::vector<const double*> table;
  lookup_axis.clear();
  lookup_index.clear();
  int n_lookups = 0;
  for (int j = 0; j < d; ++j) {
    const ParzenDimension& dim = dims_[j];
    const Axis& axis = axes_[j];
    if (dim.kind == ParzenDimension::Kind::kContinuous) continue;
    lookup_axis.push_back(j);
    if (dim.kind == ParzenDimension::Kind::kCategorical) {
      lookup_index.push_back(axis.choice.data());
    } else if (!axis.centre_of.empty()) {
      lookup_index.push_back(axis.centre_of.data());
    } else {
      // No centre index: one table entry per kernel.
      if (identity.size() < static_cast<size_t>(k_total)) {
        const size_t old = identity.size();
        identity.resize(k_total);
        std::iota(identity.begin() + old, identity.end(), static_cast<int>(old));
      }
      lookup_index.push_back(identity.data());
    }
    ++n_lookups;
  }
  tables.clear();
  table_at.assign(static_cast<size_t>(m) * n_lookups, 0);
  for (int p = 0; p < n_lookups; ++p) {
    const int j = lookup_axis[p];
    const ParzenDimension& dim = dims_[j];
    const Axis& axis = axes_[j];
    if (dim.kind == ParzenDimension::Kind::kCategorical) {
      for (int i = 0; i < m; ++i) {
        // Entry 0 is the prior's choice -1: the table pointer is offset by one.
        table_at[static_cast<size_t>(i) * n_lookups + p] = tables.size() + 1;
        const size_t at = tables.size();
        tables.resize(at + dim.n_choices + 1, 0.0);
        const int c = static_cast<int>(std::lround(x[static_cast<size_t>(i) * d + j]));
        if (c >= 0 && c < dim.n_choices) tables[at + c + 1] = axis.log_hit - axis.log_miss;
      }
      continue;
    }
    const double lo = LowerEdge(dim), hi = UpperEdge(dim);
    seen.clear();
    seen_at.clear();
    for (int i = 0; i < m; ++i) {
      const double v = x[static_cast<size_t>(i) * d + j];
      size_t s = 0;
      while (s < seen.size() && seen[s] != v) ++s;
      if (s == seen.size()) {
        seen.push_back(v);
        seen_at.push_back(tables.size());
        double cell_lo, cell_hi;
        CellEdges(dim, v, lo, hi, &cell_lo, &cell_hi);
        auto mass = [&](int k) {
          return truncnorm::LogGaussMass((cell_lo - axis.mu[k]) * axis.inv_sigma[k],
                                         (cell_hi - axis.mu[k]) * axis.inv_sigma[k]);
        };
        if (!axis.centre_of.empty()) {
          for (int k : axis.centre_kernel) tables.push_back(mass(k));
        } else {
          for (int k = 0; k < k_total; ++k) tables.push_back(mass(k));
        }
      }
      table_at[static_cast<size_t>(i) * n_lookups + p] = seen_at[s];
    }
  }

  constexpr int kChunk = 256;
  mx.assign(m, kNegInf);
  sum.assign(m, 0.0);
  if (t.size() < kChunk) t.resize(kChunk);
  if (kept.size() < kChunk) kept.resize(kChunk);
  const int nc = static_cast<int>(continuous_axes_.size());
  table.resize(n_lookups);
  index.resize(n_lookups);
  internal::ChunkArgs args;
  args.n_lookups = n_lookups;
  args.table = table.data();
  args.index = index.data();
  // Null when there are more than three continuous axes.
  const internal::ChunkKernel kernel = internal::ChunkKernelFor(nc, n_lookups);
  for (int b = 0; b < k_total; b += kChunk) {
    const int len = std::min(kChunk, k_total - b);
    args.len = len;
    args.c = const_term_.data() + b;
    for (int p = 0; p < n_lookups; ++p) index[p] = lookup_index[p] + b;
    for (int q = 0; q < nc && q < 3; ++q) {
      args.mu[q] = axes_[continuous_axes_[q]].mu.data() + b;
      args.inv[q] = axes_[continuous_axes_[q]].inv_sigma.data() + b;
    }
    for (int i = 0; i < m; ++i) {
      const double* xi = x.data() + static_cast<size_t>(i) * d;
      for (int p = 0; p < n_lookups; ++p)
        table[p] = tables.data() + table_at[static_cast<size_t>(i) * n_lookups + p];
      // Only terms within kSkipMargin of the running maximum go through exp
      // (branch-free compaction): far from a point most kernels of a long
      // history are negligible, and exp is the bulk of the work. The terms
      // are compacted against the maximum before this chunk, then again if
      // the chunk raised it.
      int used = 0;
      double chunk_max;
      if (kernel) {
        for (int q = 0; q < nc; ++q) args.x[q] = xi[continuous_axes_[q]];
        chunk_max = kernel(args, mx[i] - kSkipMargin, kept.data(), &used);
      } else {
        // More than three continuous axes: Eigen, three per pass.
        ArrayMap tt(t.data(), len);
        auto z2 = [&](int j) {
          const Axis& axis = axes_[j];
          return ((xi[j] - ConstArrayMap(axis.mu.data() + b, len)) *
                  ConstArrayMap(axis.inv_sigma.data() + b, len))
              .square();
        };
        const ConstArrayMap cm(args.c, len);
        int q = 0;
        if (nc % 3 == 1) {
          tt = cm - 0.5 * z2(continuous_axes_[q]);
          q += 1;
        } else if (nc % 3 == 2) {
          tt = cm - 0.5 * (z2(continuous_axes_[q]) + z2(continuous_axes_[q + 1]));
          q += 2;
        } else {
          tt = cm - 0.5 * (z2(continuous_axes_[q]) + z2(continuous_axes_[q + 1]) +
                           z2(continuous_axes_[q + 2]));
          q += 3;
        }
        for (; q < nc; q += 3)
          tt -= 0.5 * (z2(continuous_axes_[q]) + z2(continuous_axes_[q + 1]) +
                       z2(continuous_axes_[q + 2]));
        for (int p = 0; p < n_lookups; ++p)
          for (int k = 0; k < len; ++k) t[k] += table[p][index[p][k]];
        chunk_max = tt.maxCoeff();
        const double threshold = mx[i] - kSkipMargin;
        for (int k = 0; k < len; ++k) {
          kept[used] = t[k];
          used += t[k] > threshold;
        }
      }
      if (chunk_max > mx[i]) {
        sum[i] *= std::exp(mx[i] - chunk_max);  // 0 * exp(-inf) = 0 on the first chunk
        mx[i] = chunk_max;
        if (std::isfinite(mx[i])) {
          const double threshold = mx[i] - kSkipMargin;
          int again = 0;
          for (int k = 0; k < used; ++k) {
            const double v = kept[k];
            kept[again] = v;
            again += v > threshold;
          }
          used = again;
        }
      }
      if (!std::isfinite(mx[i])) continue;
      sum[i] += internal::ExpSum(kept.data(), used, mx[i]);
    }
  }
  for (int i = 0; i < m; ++i) (*out)[i] = std::isfinite(mx[i]) ? mx[i] + std::log(sum[i]) : mx[i];
}

}  // namespace tune
