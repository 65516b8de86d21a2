#include "search/tpe_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "search/random_sampler.h"

namespace tune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Extra tries when every candidate repeats a trial (discrete spaces).
constexpr int kDuplicateRounds = 4;
constexpr int kRandomRetries = 100;

bool IsDiscrete(const Distribution& dist) { return Cardinality(dist).has_value(); }

bool SameDistribution(const Distribution& a, const Distribution& b) {
  if (a.index() != b.index()) return false;
  if (auto* f = std::get_if<FloatDistribution>(&a)) {
    const auto& g = std::get<FloatDistribution>(b);
    return f->low == g.low && f->high == g.high && f->log == g.log && f->step == g.step;
  }
  if (auto* i = std::get_if<IntDistribution>(&a)) {
    const auto& j = std::get<IntDistribution>(b);
    return i->low == j.low && i->high == j.high && i->log == j.log && i->step == j.step;
  }
  const auto& c = std::get<CategoricalDistribution>(a);
  const auto& e = std::get<CategoricalDistribution>(b);
  return c.grid == e.grid && c.choices == e.choices;
}

}  // namespace

std::vector<double> DefaultWeights(int n) {
  if (n <= 0) return {};
  if (n < 25) return std::vector<double>(n, 1.0);
  std::vector<double> w(n, 1.0);
  const int ramp = n - 25;
  for (int i = 0; i < ramp; ++i) {
    double start = 1.0 / n;
    w[i] = ramp == 1 ? start : start + (1.0 - start) * i / (ramp - 1);
  }
  return w;
}

std::vector<double> BelowWeights(int n, bool multi_objective) {
  // Optuna 5.0's _build_parzen_estimator (optuna/samplers/_tpe/sampler.py)
  // gives l(x) of a multi-objective study np.ones(n_below).
  if (multi_objective) return std::vector<double>(std::max(n, 0), 1.0);
  return DefaultWeights(n);
}

TpeSampler::TpeSampler(const TpeSamplerOptions& options)
    : options_(options), rng_(options.seed), splitter_(options) {}

void TpeSampler::Reseed(uint64_t seed) {
  rng_.seed(seed);
  ++generation_;  // a new trial: rank the history again
  ResetPending();
}

void TpeSampler::ResetPending() {
  pending_.clear();
  pending_discrete_ = true;
  matches_valid_ = false;
  prefix_matches_.clear();
}

SearchSpace TpeSampler::RelativeSpace(const SearchSpace& space, const History& history) {
  (void)history;
  space_ = space;  // lets SampleIndependent see the whole trial (duplicates)
  if (!options_.multivariate) return {};
  if (!options_.independent_choices) return space;
  SearchSpace numerical;
  for (const auto& [name, dist] : space)
    if (!std::holds_alternative<CategoricalDistribution>(dist)) numerical.emplace(name, dist);
  return numerical;
}

void TpeSampler::SyncHistory(const History& history) {
  if (synced_data_ == history.data() && synced_size_ == history.size() &&
      synced_generation_ == generation_)
    return;
  synced_data_ = history.data();
  synced_size_ = history.size();
  synced_generation_ = generation_;
  // A trial's parameters never change once it exists: the cached values of
  // the longest prefix with the same trial ids stay valid.
  size_t common = 0;
  const size_t limit = std::min(ids_.size(), history.size());
  // Trials without a storage id (id <= 0, e.g. built by hand) are never
  // trusted: everything from the first one on is recomputed.
  while (common < limit && history[common].id > 0 && ids_[common] == history[common].id) ++common;
  ids_.resize(history.size());
  for (size_t i = common; i < history.size(); ++i) ids_[i] = history[i].id;
  for (auto& [name, c] : columns_) {
    if (c.values.size() <= common) continue;
    c.values.resize(common);
    c.coords.resize(common);
    c.sorted.erase(std::remove_if(c.sorted.begin(), c.sorted.end(),
                                  [&](int p) { return static_cast<size_t>(p) >= common; }),
                   c.sorted.end());
  }
}

TpeSampler::Column& TpeSampler::InternalColumn(const std::string& name, const Distribution& dist,
                                               const History& history) {
  SyncHistory(history);
  Column& c = columns_[name];
  if (!c.domain || !SameDistribution(*c.domain, dist)) {
    c = Column();
    c.domain = dist;
  }
  const size_t old_size = c.values.size();
  c.values.resize(history.size());
  c.coords.resize(history.size());
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = old_size; i < history.size(); ++i) {
    auto it = history[i].params.find(name);
    std::optional<double> v;
    if (it != history[i].params.end()) v = ToInternal(dist, it->second);
    c.values[i] = v ? *v : kNaN;
    c.coords[i] = v ? ToParzenCoordinate(dist, *v) : kNaN;
  }
  // Positions sorted by (coordinate, position): new trials are inserted, a
  // new column is sorted once.
  auto less = [&](int a, int b) {
    return c.coords[a] < c.coords[b] || (c.coords[a] == c.coords[b] && a < b);
  };
  if (old_size == 0) {
    c.sorted.clear();
    for (size_t i = 0; i < history.size(); ++i)
      if (!std::isnan(c.coords[i])) c.sorted.push_back(static_cast<int>(i));
    std::sort(c.sorted.begin(), c.sorted.end(), less);
  } else {
    for (size_t i = old_size; i < history.size(); ++i) {
      if (std::isnan(c.coords[i])) continue;
      int p = static_cast<int>(i);
      c.sorted.insert(std::upper_bound(c.sorted.begin(), c.sorted.end(), p, less), p);
    }
  }
  return c;
}

const TpeSampler::Ranking& TpeSampler::RankTrials(const History& history) {
  Ranking& r = ranking_;
  if (r.data == history.data() && r.size == history.size() && r.generation == generation_)
    return r;
  r.data = history.data();
  r.size = history.size();
  r.generation = generation_;
  splitter_.Split(history, &r.groups);
  return r;
}

bool TpeSampler::BuildSplit(const std::vector<std::string>& names,
                            const std::vector<const Distribution*>& dists, const History& history,
                            Split* split, bool want_taken) {
  const int d = static_cast<int>(names.size());
  split->d = d;
  std::vector<const Column*> columns(d);
  for (int j = 0; j < d; ++j) columns[j] = &InternalColumn(names[j], *dists[j], history);
  auto has_row = [&](size_t i) {
    for (int j = 0; j < d; ++j)
      if (std::isnan(columns[j]->values[i])) return false;
    return true;
  };
  split->taken.clear();
  if (want_taken) {
    for (size_t i = 0; i < history.size(); ++i)
      if (has_row(i))
        for (int j = 0; j < d; ++j) split->taken.push_back(columns[j]->values[i]);
  }
  const Ranking& rank = RankTrials(history);
  if (rank.groups.n < options_.n_startup_trials || rank.groups.n == 0) return false;

  // Optuna splits all ranked trials, then drops those lacking a parameter.
  split->below.clear();
  split->above.clear();
  // The estimator sorts each numerical axis for the neighbour gaps (not
  // with Scott's rule); the columns keep every trial sorted, so the above
  // rows' orders are filtered out of them instead.
  const bool gaps = !options_.multivariate || options_.parzen_rules != ParzenRules::kOptuna3;
  auto want_order = [&](int j) {
    return gaps && !std::holds_alternative<CategoricalDistribution>(*dists[j]);
  };
  bool any_order = false;
  for (int j = 0; j < d; ++j) any_order = any_order || want_order(j);
  split->above_orders.resize(d);
  std::vector<int>& above_index = above_index_;  // history position -> above row
  if (any_order) above_index.assign(history.size(), -1);
  int n_above = 0;
  for (size_t pos = 0; pos < history.size(); ++pos) {
    const signed char g = rank.groups.group[pos];
    if (g < 0 || !has_row(pos)) continue;
    auto& dst = g ? split->below : split->above;
    for (int j = 0; j < d; ++j) dst.push_back(columns[j]->coords[pos]);
    if (!g) {
      if (any_order) above_index[pos] = n_above;
      ++n_above;
    }
  }
  for (int j = 0; j < d; ++j) {
    std::vector<int>& order = split->above_orders[j];
    order.clear();
    if (!want_order(j)) continue;
    order.reserve(n_above);
    for (int pos : columns[j]->sorted)
      if (above_index[pos] >= 0) order.push_back(above_index[pos]);
  }
  // The weights depend only on the row count, and are only ever set here.
  const bool multi = !options_.objectives_maximize.empty();
  auto set_weights = [&](const std::vector<double>& rows, std::vector<double>* w, bool below) {
    const int n = static_cast<int>(rows.size()) / std::max(d, 1);
    if (static_cast<int>(w->size()) != n) *w = below ? BelowWeights(n, multi) : DefaultWeights(n);
  };
  set_weights(split->below, &split->below_weights, true);
  set_weights(split->above, &split->above_weights, false);
  return true;
}

int TpeSampler::CandidateCount(const std::vector<const Distribution*>& dists) const {
  // ranking_ is the history's, as BuildSplit left it.
  bool numerical = options_.n_ei_candidates_numerical > 0 && ranking_.groups.running == 0;
  for (const Distribution* dist : dists)
    numerical = numerical && !std::holds_alternative<CategoricalDistribution>(*dist);
  return std::max(1, numerical ? options_.n_ei_candidates_numerical : options_.n_ei_candidates);
}

std::vector<std::vector<double>> TpeSampler::RankedCandidates(
    const std::vector<const Distribution*>& dists, const Split& split, int n_candidates) {
  const int d = split.d;
  std::vector<ParzenDimension> axes;
  axes.reserve(d);
  for (const Distribution* dist : dists) axes.push_back(ParzenDimensionOf(*dist, options_.parzen_rules));
  ParzenEstimatorOptions pe;
  pe.consider_prior = options_.consider_prior;
  pe.prior_weight = options_.prior_weight;
  pe.consider_magic_clip = options_.consider_magic_clip;
  pe.consider_endpoints = options_.consider_endpoints;
  pe.multivariate = options_.multivariate;
  pe.rules = options_.parzen_rules;
  ParzenEstimator& l = below_model_;
  ParzenEstimator& g = above_model_;
  l.Fit(axes, split.below, split.below_weights, pe);
  g.Fit(axes, split.above, split.above_weights, pe, &split.above_orders);

  std::vector<double> x;
  l.Sample(rng_, n_candidates, &x);
  std::vector<std::vector<double>> internal(n_candidates, std::vector<double>(d));
  for (int i = 0; i < n_candidates; ++i) {
    for (int j = 0; j < d; ++j) {
      double& xij = x[static_cast<size_t>(i) * d + j];
      internal[i][j] = FromParzenCoordinate(*dists[j], xij);
      xij = ToParzenCoordinate(*dists[j], internal[i][j]);  // score the value actually suggested
    }
  }
  std::vector<double> log_l, log_g;
  l.LogPdf(x, &log_l);
  g.LogPdf(x, &log_g);
  std::vector<int> order(n_candidates);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return log_l[a] - log_g[a] > log_l[b] - log_g[b];
  });
  std::vector<std::vector<double>> ranked;
  ranked.reserve(n_candidates);
  for (int i : order) ranked.push_back(std::move(internal[i]));
  return ranked;
}

ParamMap TpeSampler::SampleRelative(const SearchSpace& relative, const History& history) {
  if (relative.empty()) return {};
  std::vector<std::string> names;
  std::vector<const Distribution*> dists;
  bool all_discrete = true;
  for (const auto& [name, dist] : relative) {
    names.push_back(name);
    dists.push_back(&dist);
    all_discrete = all_discrete && IsDiscrete(dist);
  }
  // The parameters left to SampleIndependent (choices, with
  // independent_choices): a row is taken once as many trials share it as
  // those parameters have completions (never if one is continuous).
  double completions = 1;
  for (const auto& [name, dist] : space_) {
    if (relative.count(name)) continue;
    auto n = Cardinality(dist);
    completions = n ? completions * static_cast<double>(*n) : kInf;
  }
  Split& split = split_;
  if (!BuildSplit(names, dists, history, &split, all_discrete && completions < kInf)) return {};
  const int d = split.d;
  const size_t n_taken = split.taken.size() / d;
  auto is_taken = [&](const std::vector<double>& row) {
    if (!all_discrete || completions == kInf) return false;
    double sharing = 0;
    for (size_t t = 0; t < n_taken; ++t)
      if (std::equal(row.begin(), row.end(), split.taken.begin() + t * d) && ++sharing >= completions) return true;
    return false;
  };
  auto to_params = [&](const std::vector<double>& row) {
    ParamMap params;
    for (int j = 0; j < d; ++j) params[names[j]] = FromInternal(*dists[j], row[j]);
    // SampleIndependent, for the parameters left, avoids completing a trial
    // that exists already.
    ResetPending();
    pending_history_size_ = history.size();
    for (int j = 0; j < d; ++j) Remember(names[j], params[names[j]], IsDiscrete(*dists[j]), history);
    return params;
  };

  std::vector<std::vector<double>> ranked =
      RankedCandidates(dists, split, CandidateCount(dists));
  const std::vector<double> best = ranked.front();
  for (int round = 0; round <= kDuplicateRounds; ++round) {
    if (round > 0) ranked = RankedCandidates(dists, split, CandidateCount(dists));
    for (const auto& row : ranked)
      if (!is_taken(row)) return to_params(row);
  }
  // l(x) keeps proposing known points: fall back to random ones.
  std::vector<double> row(d);
  for (int attempt = 0; attempt < kRandomRetries; ++attempt) {
    for (int j = 0; j < d; ++j) row[j] = *ToInternal(*dists[j], SampleUniform(*dists[j], rng_));
    if (!is_taken(row)) return to_params(row);
  }
  return to_params(best);  // the space is (nearly) exhausted
}

ParamValue TpeSampler::SampleIndependent(const std::string& name, const Distribution& dist,
                                         const History& history) {
  // A repeated name or a new history means a new trial.
  if (pending_.count(name) || history.size() != pending_history_size_) {
    ResetPending();
    pending_history_size_ = history.size();
  }
  const bool discrete = IsDiscrete(dist);
  auto acceptable = [&](const ParamValue& v) {
    return !discrete || LeavesFreeCompletion(name, v, history);
  };
  Split& split = split_;
  ParamValue result;
  bool found = false;
  if (BuildSplit({name}, {&dist}, history, &split, false)) {
    auto ranked = RankedCandidates({&dist}, split, CandidateCount({&dist}));
    result = FromInternal(dist, ranked.front()[0]);
    for (const auto& row : ranked) {
      ParamValue v = FromInternal(dist, row[0]);
      if (acceptable(v)) {
        result = v;
        found = true;
        break;
      }
    }
  } else {
    result = SampleUniform(dist, rng_);
    found = acceptable(result);
  }
  for (int attempt = 0; !found && attempt < kRandomRetries; ++attempt) {
    ParamValue v = SampleUniform(dist, rng_);
    if (acceptable(v)) {
      result = v;
      found = true;
    }
  }
  Remember(name, result, discrete, history);
  return result;
}

// True if choosing `value` for `name`, after the values already chosen for
// this trial, still leaves a full parameter set that no trial in `history`
// has: fewer matching trials than completions of the remaining parameters.
bool TpeSampler::LeavesFreeCompletion(const std::string& name, const ParamValue& value,
                                      const History& history) {
  if (!pending_discrete_) return true;  // a continuous value never repeats
  // Completions of the parameters not chosen yet (space_ is the trial's
  // space when known; otherwise only an exact full match is a duplicate).
  double completions = 1;
  size_t full_size = pending_.size() + 1;
  if (space_.count(name)) {
    full_size = space_.size();
    for (const auto& [other, dist] : space_) {
      if (other == name || pending_.count(other)) continue;
      auto n = Cardinality(dist);
      if (!n) return true;
      completions *= static_cast<double>(*n);
    }
  }
  if (!matches_valid_) {
    prefix_matches_.clear();
    for (size_t i = 0; i < history.size(); ++i) {
      const ParamMap& p = history[i].params;
      if (p.size() != full_size) continue;
      bool match = true;
      for (const auto& [k, v] : pending_) {
        auto it = p.find(k);
        if (it == p.end() || !ParamEquals(it->second, v)) {
          match = false;
          break;
        }
      }
      if (match) prefix_matches_.push_back(static_cast<int>(i));
    }
    matches_valid_ = true;
  }
  // Trials sharing the prefix and `value`; duplicates among them are counted
  // once so that a repeated trial does not hide a free completion.
  std::vector<const ParamMap*> matching;
  for (int idx : prefix_matches_) {
    const ParamMap& p = history[idx].params;
    auto it = p.find(name);
    if (it != p.end() && ParamEquals(it->second, value)) matching.push_back(&p);
  }
  if (static_cast<double>(matching.size()) < completions) return true;
  std::sort(matching.begin(), matching.end(), [](auto* a, auto* b) { return *a < *b; });
  auto distinct = std::unique(matching.begin(), matching.end(), [](auto* a, auto* b) { return *a == *b; });
  return static_cast<double>(distinct - matching.begin()) < completions;
}

void TpeSampler::Remember(const std::string& name, const ParamValue& value, bool discrete,
                          const History& history) {
  pending_[name] = value;
  if (!discrete) {
    pending_discrete_ = false;
    matches_valid_ = false;
    prefix_matches_.clear();
    return;
  }
  if (!matches_valid_) return;  // computed lazily when first needed
  std::vector<int> kept;
  for (int idx : prefix_matches_) {
    auto it = history[idx].params.find(name);
    if (it != history[idx].params.end() && ParamEquals(it->second, value)) kept.push_back(idx);
  }
  prefix_matches_.swap(kept);
}

}  // namespace tune
