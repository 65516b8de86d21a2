#include "search/nsga2_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/pareto.h"
#include "search/random_sampler.h"

namespace tune {
namespace {

// Optuna's _evaluate_penalty (optuna/samplers/nsgaii/_constraints_evaluation.py):
// the sum of the positive constraint values. Optuna refuses NaN; here it is
// an infinite violation.
double Violation(const std::vector<double>& constraints) {
  double sum = 0;
  for (double c : constraints) {
    if (std::isnan(c)) return std::numeric_limits<double>::infinity();
    if (c > 0) sum += c;
  }
  return sum;
}

// One trial of a population, with what elite selection and tournaments use.
struct Member {
  const Trial* trial = nullptr;
  Losses losses;
  std::vector<double> oriented;  // the raw orientation (maximised objectives not negated)
  double violation = 0;
};

// Optuna's NSGAIIElitePopulationSelectionStrategy.__call__
// (optuna/samplers/nsgaii/_elite_population_selection_strategy.py): whole
// fronts while they fit, then the first front that does not fit (or fills
// the population exactly) cut by _crowding_distance_sort. Returns indices
// into `population`.
std::vector<size_t> EliteSelection(const std::vector<Member>& population, size_t population_size) {
  if (population.empty()) return {};
  bool constrained = false;
  for (const Member& m : population) constrained = constrained || !m.trial->constraints.empty();
  std::vector<Losses> losses;
  std::vector<double> violations;
  for (const Member& m : population) {
    losses.push_back(m.losses);
    violations.push_back(m.violation);
  }
  std::vector<int> ranks = NonDominatedRanks(losses, constrained ? violations : std::vector<double>{});
  int max_rank = *std::max_element(ranks.begin(), ranks.end());
  std::vector<std::vector<size_t>> per_rank(static_cast<size_t>(max_rank) + 1);
  for (size_t i = 0; i < population.size(); ++i) per_rank[static_cast<size_t>(ranks[i])].push_back(i);
  std::vector<size_t> elite;
  for (const std::vector<size_t>& front : per_rank) {
    if (elite.size() + front.size() < population_size) {
      elite.insert(elite.end(), front.begin(), front.end());
      continue;
    }
    std::vector<Losses> oriented;
    for (size_t i : front) oriented.push_back(population[i].oriented);
    std::vector<size_t> order = CrowdingDistanceSort(oriented);
    size_t n = population_size - elite.size();
    for (size_t k = 0; k < n; ++k) elite.push_back(front[order[k]]);
    break;
  }
  return elite;
}

}  // namespace

bool FirstWinsTournament(const std::vector<double>& a_values, const std::vector<double>& a_constraints,
                         const std::vector<double>& b_values, const std::vector<double>& b_constraints,
                         const std::vector<bool>& maximize, bool constrained) {
  Losses a = ToLosses(a_values, maximize), b = ToLosses(b_values, maximize);
  if (constrained) return ConstrainedDominates(a, Violation(a_constraints), b, Violation(b_constraints));
  return Dominates(a, b);
}

Nsga2Sampler::Nsga2Sampler(const Nsga2SamplerOptions& options) : options_(options), rng_(options.seed) {
  options_.population_size = std::max(2, options_.population_size);
}

bool Nsga2Sampler::Counts(const Trial& t) const {
  if (t.state != TrialState::kCompleted) return false;
  size_t m = options_.maximize.size();
  if (m >= 2) return t.values.size() == m;
  // One objective: Trial::values is empty and `value` is it.
  return t.values.size() == 1 || (t.values.empty() && t.value.has_value());
}

std::vector<double> Nsga2Sampler::ValuesOf(const Trial& t) const {
  if (!t.values.empty()) return t.values;
  return {t.value.value_or(std::numeric_limits<double>::quiet_NaN())};
}

namespace {
// Equal, NaN equal to NaN (so a NaN value does not defeat the cache).
bool SameDoubles(const double* a, size_t na, const double* b, size_t nb) {
  if (na != nb) return false;
  for (size_t i = 0; i < na; ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}
}  // namespace

bool Nsga2Sampler::SameKey(const Key& k, const Trial& t) const {
  if (k.id != t.id || k.number != t.number) return false;
  if (!SameDoubles(k.constraints.data(), k.constraints.size(), t.constraints.data(), t.constraints.size()))
    return false;
  if (!t.values.empty()) return SameDoubles(k.values.data(), k.values.size(), t.values.data(), t.values.size());
  return t.value && SameDoubles(k.values.data(), k.values.size(), &*t.value, 1);
}

std::vector<const Trial*> Nsga2Sampler::Parents(const History& history, int generation) {
  if (generation <= 0) return {};
  const size_t p = static_cast<size_t>(options_.population_size);
  // The counting trials of each generation below `generation`, in number
  // order, and each by number.
  std::vector<std::vector<const Trial*>> by_generation(static_cast<size_t>(generation));
  std::vector<const Trial*> by_number;
  for (const Trial& t : history) {
    if (t.number < 0 || Generation(t.number) >= generation || !Counts(t)) continue;
    by_generation[static_cast<size_t>(Generation(t.number))].push_back(&t);
    if (by_number.size() <= static_cast<size_t>(t.number)) by_number.resize(static_cast<size_t>(t.number) + 1);
    by_number[static_cast<size_t>(t.number)] = &t;
  }
  auto by_num = [](const Trial* a, const Trial* b) { return a->number < b->number; };
  for (auto& g : by_generation)
    if (!std::is_sorted(g.begin(), g.end(), by_num)) std::stable_sort(g.begin(), g.end(), by_num);
  auto member = [&](const Trial* t) {
    Member m;
    m.trial = t;
    std::vector<double> values = ValuesOf(*t);
    std::vector<bool> dirs = options_.maximize;
    dirs.resize(values.size(), false);
    m.losses = ToLosses(values, dirs);
    m.oriented = m.losses;
    for (size_t k = 0; k < dirs.size(); ++k)
      if (dirs[k]) m.oriented[k] = -m.oriented[k];
    m.violation = Violation(t->constraints);
    return m;
  };

  bool changed = false;  // the parent population of g - 1 differs from the cached one
  std::vector<const Trial*> parents;  // of g - 1, then of g
  for (size_t g = 1; g <= static_cast<size_t>(generation); ++g) {
    const std::vector<const Trial*>& previous = by_generation[g - 1];
    if (cache_.size() < g + 1) cache_.resize(g + 1);
    const CachedGeneration& c = cache_[g];
    bool valid = !changed && c.computed && c.previous.size() == previous.size();
    for (size_t i = 0; valid && i < previous.size(); ++i) valid = SameKey(c.previous[i], *previous[i]);
    if (valid) {
      std::vector<const Trial*> next;
      for (size_t i = 0; valid && i < c.parents.size(); ++i) {
        size_t n = static_cast<size_t>(c.parents[i]);
        valid = n < by_number.size() && by_number[n] && by_number[n]->id == c.parent_ids[i];
        if (valid) next.push_back(by_number[n]);
      }
      if (valid) {
        parents.swap(next);
        continue;
      }
    }
    // select_parent: the population of g - 1, then the parents of g - 1.
    std::vector<Member> population;
    for (const Trial* t : previous) population.push_back(member(t));
    for (const Trial* t : parents) population.push_back(member(t));
    std::vector<size_t> elite = EliteSelection(population, p);
    std::vector<const Trial*> next;
    for (size_t i : elite) next.push_back(population[i].trial);
    // Optuna reads a cached parent population back in trial order.
    std::sort(next.begin(), next.end(), by_num);
    CachedGeneration fresh;
    fresh.computed = true;
    for (const Trial* t : next) {
      fresh.parents.push_back(t->number);
      fresh.parent_ids.push_back(t->id);
    }
    for (const Trial* t : previous) fresh.previous.push_back(Key{t->id, t->number, ValuesOf(*t), t->constraints});
    changed = !c.computed || fresh.parents != c.parents || fresh.parent_ids != c.parent_ids;
    // Later entries were computed from the old parents of g.
    if (changed) cache_.resize(g + 1);
    cache_[g] = std::move(fresh);
    parents.swap(next);
  }
  return parents;
}

std::vector<int> Nsga2Sampler::ParentPopulation(const History& history, int generation) {
  std::vector<int> numbers;
  for (const Trial* t : Parents(history, generation)) numbers.push_back(t->number);
  return numbers;
}

SearchSpace Nsga2Sampler::RelativeSpace(const SearchSpace& space, const History& history) {
  (void)history;
  // Optuna's infer_relative_search_space: every distribution but single ones.
  SearchSpace out;
  for (const auto& [name, dist] : space) {
    std::optional<int64_t> n = Cardinality(dist);
    if (!n || *n > 1) out[name] = dist;
  }
  return out;
}

ParamMap Nsga2Sampler::SampleRelative(const SearchSpace& relative, const History& history) {
  int number = 0;
  for (const Trial& t : history) number = std::max(number, t.number + 1);
  std::vector<const Trial*> parents = Parents(history, Generation(number));
  if (parents.empty() || relative.empty()) return {};

  // Optuna's NSGAIIChildGenerationStrategy.__call__
  // (optuna/samplers/nsgaii/_child_generation_strategy.py).
  bool constrained = false;
  for (const Trial* t : parents) constrained = constrained || !t->constraints.empty();
  std::vector<std::vector<double>> values(parents.size());
  for (size_t i = 0; i < parents.size(); ++i) values[i] = ValuesOf(*parents[i]);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); };
  // _select_parent: a binary tournament among `pool` (indices into parents).
  auto tournament = [&](const std::vector<size_t>& pool) {
    size_t a = pool[pick(pool.size())], b = pool[pick(pool.size())];
    bool first = FirstWinsTournament(values[a], parents[a]->constraints, values[b], parents[b]->constraints,
                                     options_.maximize, constrained);
    return first ? a : b;
  };

  // Each parameter's value, or nothing when the parent lacks it or holds it
  // outside the distribution (left to SampleIndependent).
  std::map<std::string, std::optional<ParamValue>> child;
  auto value_of = [&](const Trial* t, const std::string& name, const Distribution& dist) -> std::optional<ParamValue> {
    auto it = t->params.find(name);
    if (it == t->params.end() || !Contains(dist, it->second)) return std::nullopt;
    return it->second;
  };
  if (unit(rng_) < options_.crossover_prob) {
    // perform_crossover with UniformCrossover (_crossover.py,
    // _crossovers/_uniform.py): the second parent from the population
    // without the first; a parameter from the first parent when the draw is
    // below swapping_prob (mask 0), else from the second.
    std::vector<size_t> pool(parents.size());
    for (size_t i = 0; i < pool.size(); ++i) pool[i] = i;
    size_t first = tournament(pool);
    pool.erase(pool.begin() + static_cast<long>(first));
    size_t second = pool.empty() ? first : tournament(pool);
    for (const auto& [name, dist] : relative) {
      const Trial* from = unit(rng_) < options_.swapping_prob ? parents[first] : parents[second];
      child[name] = value_of(from, name, dist);
    }
  } else {
    const Trial* from = parents[pick(parents.size())];
    for (const auto& [name, dist] : relative) child[name] = value_of(from, name, dist);
  }

  double mutation_prob = options_.mutation_prob
                             ? *options_.mutation_prob
                             : 1.0 / std::max(1.0, static_cast<double>(child.size()));
  ParamMap params;
  for (const auto& [name, v] : child) {
    bool keep = unit(rng_) >= mutation_prob;  // else mutated: drawn by SampleIndependent
    if (keep && v) params[name] = *v;
  }
  return params;
}

ParamValue Nsga2Sampler::SampleIndependent(const std::string& name, const Distribution& dist,
                                           const History& history) {
  (void)name; (void)history;
  return SampleUniform(dist, rng_);
}

}  // namespace tune
