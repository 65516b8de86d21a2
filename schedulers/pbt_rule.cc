#include "schedulers/pbt_rule.h"

#include <algorithm>
#include <cmath>

#include "search/random_sampler.h"

namespace tune {
namespace pbt {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string FactorName(double f) { return "* " + ParamToString(ParamValue(f)); }

}  // namespace

size_t QuantileSize(size_t n, double q) {
  if (n <= 1) return 0;
  const double exact = static_cast<double>(n) * q;
  size_t k = static_cast<size_t>(std::ceil(exact));
  if (static_cast<double>(k) > static_cast<double>(n) / 2) k = n / 2;
  return k;
}

QuantileSplit Quantiles(const std::vector<Scored>& scored, double quantile_fraction) {
  std::vector<Scored> sorted = scored;
  // Stable, as Python's list.sort; NaN below every number.
  std::stable_sort(sorted.begin(), sorted.end(), [](const Scored& a, const Scored& b) {
    if (std::isnan(a.score)) return !std::isnan(b.score);
    if (std::isnan(b.score)) return false;
    return a.score < b.score;
  });
  QuantileSplit out;
  if (sorted.size() <= 1) return out;
  const size_t k = QuantileSize(sorted.size(), quantile_fraction);
  for (size_t i = 0; i < k; ++i) out.lower.push_back(sorted[i].id);
  // trials[-k:]; for k == 0 Python gives the whole list.
  const size_t first_upper = k == 0 ? 0 : sorted.size() - k;
  for (size_t i = first_upper; i < sorted.size(); ++i) out.upper.push_back(sorted[i].id);
  return out;
}

uint64_t DrawKey(uint64_t seed, int trial_number, int64_t step, int exploits) {
  uint64_t h = SplitMix64(seed);
  h = SplitMix64(h ^ static_cast<uint64_t>(static_cast<int64_t>(trial_number)));
  h = SplitMix64(h ^ static_cast<uint64_t>(step));
  return SplitMix64(h ^ static_cast<uint64_t>(static_cast<int64_t>(exploits)));
}

size_t Draws::Index(size_t n) {
  size_t i = static_cast<size_t>(Uniform() * static_cast<double>(n));
  return std::min(i, n - 1);
}

ParamValue Perturb(const Distribution& d, const ParamValue& current, double factor) {
  double v = 0;
  if (auto* i = std::get_if<int64_t>(&current)) v = static_cast<double>(*i);
  if (auto* x = std::get_if<double>(&current)) v = *x;
  double x = v * factor;
  if (auto* f = std::get_if<FloatDistribution>(&d)) {
    x = std::clamp(x, f->low, f->high);
    // FromInternal snaps a quantised value onto the grid (not above high).
    return f->step ? FromInternal(d, x) : ParamValue(x);
  }
  const auto& n = std::get<IntDistribution>(d);
  x = std::clamp(x, static_cast<double>(n.low), static_cast<double>(n.high));
  // FromInternal rounds (half away from zero) onto low + k*step.
  return FromInternal(d, x);
}

ParamValue Shift(const CategoricalDistribution& c, const ParamValue& current, int shift) {
  int64_t index = 0;
  for (size_t i = 0; i < c.choices.size(); ++i)
    if (ParamEquals(c.choices[i], current)) index = static_cast<int64_t>(i);
  int64_t moved = std::clamp<int64_t>(index + shift, 0, static_cast<int64_t>(c.choices.size()) - 1);
  return c.choices[static_cast<size_t>(moved)];
}

Explored ExploreValue(const Distribution& d, const ParamValue& current, double resample_probability,
                      const std::vector<double>& factors, Draws& draws) {
  const bool in_domain = Contains(d, current);
  const bool resample = draws.Uniform() < resample_probability || !in_domain;
  if (resample) {
    if (auto* c = std::get_if<CategoricalDistribution>(&d)) {
      return {c->choices[draws.Index(c->choices.size())], "resample"};
    }
    return {SampleUniform(d, draws.engine()), "resample"};
  }
  if (auto* c = std::get_if<CategoricalDistribution>(&d)) {
    const int shift = draws.Index(2) == 0 ? -1 : 1;  // random.choice([-1, 1])
    ParamValue moved = Shift(*c, current, shift);
    std::string op = shift < 0 ? "shift left" : "shift right";
    if (ParamEquals(moved, current)) op += " (noop)";
    return {moved, op};
  }
  const double factor = factors[draws.Index(factors.size())];
  return {Perturb(d, current, factor), FactorName(factor)};
}

ParamMap Explore(const ParamMap& donor, const SearchSpace& mutations, double resample_probability,
                 const std::vector<double>& factors, Draws& draws, std::vector<std::string>* operations) {
  ParamMap out = donor;
  for (const auto& [name, dist] : mutations) {
    auto it = donor.find(name);
    // A missing value is never in the domain: ExploreValue resamples it.
    const ParamValue current = it != donor.end() ? it->second : ParamValue(std::string());
    Explored e = ExploreValue(dist, current, resample_probability, factors, draws);
    if (operations) {
      operations->push_back(name + ": " + (it != donor.end() ? ParamToString(current) : "(none)") + " -> " +
                            ParamToString(e.value) + " (" + e.operation + ")");
    }
    out[name] = std::move(e.value);
  }
  return out;
}

}  // namespace pbt
}  // namespace tune
