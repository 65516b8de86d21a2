// Nsga2Sampler: the NSGA-II genetic algorithm for several objectives (and
// one), following Optuna 5.0's NSGAIISampler with its defaults
// (optuna/samplers/nsgaii/_sampler.py, _child_generation_strategy.py,
// _crossover.py, _crossovers/_uniform.py,
// _elite_population_selection_strategy.py, _constraints_evaluation.py and
// optuna/samplers/_ga/_base.py).
//
// Generations. Trial `number` belongs to generation number /
// population_size. The parents of generation 0 are none: its trials are
// drawn at random, each parameter independently. The parent population of
// generation g >= 1 is the elite selection over the completed trials of
// generation g - 1 followed by the parent population of generation g - 1
// (Optuna's select_parent): non-dominated sorting (constrained dominance,
// Optuna's _fast_non_domination_rank with penalties, when any of them has
// Trial::constraints), whole fronts while they fit into population_size,
// then the front that does not fit cut by crowding distance
// (CrowdingDistanceSort, core/pareto.h, on the raw values as Optuna).
// Only completed trials with every objective count (Trial::values, or
// Trial::value with one objective); pruned, failed, stopped, running and
// paused trials are never parents.
//
// How this differs from Optuna: Optuna writes each trial's generation into
// its system attributes when it is sampled, opening generation g + 1 once
// population_size trials of generation g have completed, and caches each
// parent population in the study. Neither can be stored here, so both are
// derived from the history alone: a generation is a fixed block of trial
// numbers, so failed or pruned trials (and, with parallel trials, trials
// still running when the next generation starts) make a generation's
// completed population smaller than population_size rather than its block
// longer; a trial of generation g - 1 that completes after generation g
// began joins the parent population of g from then on (Optuna's cache
// would leave it out). A parent population of one trial crosses it with
// itself (Optuna needs two).
//
// A child (generation >= 1, Optuna's NSGAIIChildGenerationStrategy): with
// probability crossover_prob, uniform crossover of two parents, each chosen
// by binary tournament (two trials drawn with replacement; the first wins
// if it dominates the second, else the second; the second parent is drawn
// from the population without the first), each parameter taken from the
// first parent with probability swapping_prob, else from the second (the
// mask of Optuna's UniformCrossover); otherwise a copy of a parent drawn
// uniformly. Then each parameter is mutated with probability mutation_prob
// (default 1 / number of parameters): mutated, it is left out of
// SampleRelative and drawn by SampleIndependent, uniformly within its
// distribution (Optuna's RandomSampler, as NSGAIISampler without a
// mutation operator). Parameters with a single value, and any parameter a
// parent lacks or holds outside its distribution, are left to
// SampleIndependent too.
//
// Resume safety (search/sampler.h): suggestions depend only on the history
// and the rng that Reseed sets. Parent populations are cached per
// generation, keyed on the completed trials (id, values, constraints) of
// the generation before, so a fresh sampler on the same history suggests
// the same. Not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "search/nsga2_options.h"
#include "search/sampler.h"

namespace tune {

class Nsga2Sampler : public Sampler {
 public:
  // options.population_size >= 2 and probabilities in [0, 1] are assumed
  // (the spec checks them); population_size is raised to 2 if below.
  explicit Nsga2Sampler(const Nsga2SamplerOptions& options);

  // `space` without the parameters that have a single value.
  SearchSpace RelativeSpace(const SearchSpace& space, const History& history) override;
  // The child of the parent population of the generation of the next trial
  // (number: one past the last trial of `history`); {} in generation 0 or
  // while that parent population is empty.
  ParamMap SampleRelative(const SearchSpace& relative, const History& history) override;
  // A uniform draw (SampleUniform, search/random_sampler.h).
  ParamValue SampleIndependent(const std::string& name, const Distribution& dist,
                               const History& history) override;
  void Reseed(uint64_t seed) override { rng_.seed(seed); }

  const Nsga2SamplerOptions& options() const { return options_; }

  // The generation of trial `number`.
  int Generation(int number) const { return number / options_.population_size; }
  // The trial numbers (ascending) of generation `generation`'s parent
  // population given `history`; empty for generation 0.
  std::vector<int> ParentPopulation(const History& history, int generation);

 private:
  // A completed trial of a population, as the cache remembers it.
  struct Key {
    TrialId id = 0;
    int number = 0;
    std::vector<double> values;
    std::vector<double> constraints;
  };
  struct CachedGeneration {
    std::vector<Key> previous;       // the counting trials of generation g - 1
    std::vector<int> parents;        // the parent population of g: numbers, ascending
    std::vector<TrialId> parent_ids; // and their ids
    bool computed = false;
  };

  // The parent population of `generation`, as pointers into `history`.
  std::vector<const Trial*> Parents(const History& history, int generation);
  // True if `t` counts: completed with every objective.
  bool Counts(const Trial& t) const;
  // The objective values of a trial that counts.
  std::vector<double> ValuesOf(const Trial& t) const;
  bool SameKey(const Key& k, const Trial& t) const;

  Nsga2SamplerOptions options_;
  std::mt19937_64 rng_;
  std::vector<CachedGeneration> cache_;  // index g >= 1; cache_[0] unused
};

// Optuna's binary tournament rule (_select_parent in
// optuna/samplers/nsgaii/_crossover.py): true if candidate `a`, drawn
// first, wins against `b`: when `a` dominates `b` (ConstrainedDominates on
// the summed positive constraint values when `constrained`, else
// Dominates; core/pareto.h) in the losses of their objective `values`
// under `maximize`.
bool FirstWinsTournament(const std::vector<double>& a_values, const std::vector<double>& a_constraints,
                         const std::vector<double>& b_values, const std::vector<double>& b_constraints,
                         const std::vector<bool>& maximize, bool constrained);

}  // namespace tune
