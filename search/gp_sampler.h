// GpSampler: Bayesian optimisation with a Gaussian process, following Optuna
// 5.0's GPSampler (optuna/samplers/_gp/sampler.py) for one objective.
//
// The first `n_startup_trials` completed trials are drawn at random. After
// that, for each trial: the completed trials (values sign-flipped so that
// larger is better, non-finite ones clipped to the finite range, then
// standardised) train a GP (search/gp_regressor.h) whose kernel parameters
// are fitted by MAP (search/gp_fit.h); trials in flight (running or paused,
// with every parameter) join with their posterior mean as the observation;
// the suggestion maximises log expected improvement over the best value
// seen (search/gp_acquisition.h, search/gp_optimize_acqf.h), with the best
// trial as one of the local-search starts. Pruned, failed and stopped trials
// are ignored, as Optuna does.
//
// Parameters with a single value are left to SampleIndependent (Optuna's
// infer_relative_search_space); so is any parameter when the GP is not used.
//
// The kernel fit is warm-started, as Optuna's is from the previous trial's
// fit, but along a chain fixed by the history alone: the fit on the first k
// completed trials (by trial number) starts from the fit on the first k - 1,
// the chain from all-ones at k = n_startup_trials. Fits are cached by the
// trial numbers they used; a sequential run fits once per trial, a fresh
// sampler on a resumed history refits the chain once, and the suggestions
// depend only on the history and the seed (search/sampler.h). Not
// thread-safe.
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include "search/gp_options.h"
#include "search/sampler.h"

namespace tune {

class GpRegressor;
class GpSpace;

class GpSampler : public Sampler {
 public:
  explicit GpSampler(const GpSamplerOptions& options);

  SearchSpace RelativeSpace(const SearchSpace& space, const History& history) override;
  // {} while fewer than n_startup_trials trials completed with every
  // parameter of `relative`.
  ParamMap SampleRelative(const SearchSpace& relative, const History& history) override;
  // A uniform draw (the startup phase and single-valued parameters).
  ParamValue SampleIndependent(const std::string& name, const Distribution& dist,
                               const History& history) override;
  void Reseed(uint64_t seed) override { rng_.seed(seed); }

  const GpSamplerOptions& options() const { return options_; }

 private:
  // The fit on all `numbers.size()` completed trials (rows, values in trial
  // order), warm-started along the chain described above.
  GpRegressor FitChained(const GpSpace& space, const std::vector<double>& rows,
                         const std::vector<double>& values, const std::vector<int>& numbers);

  GpSamplerOptions options_;
  std::mt19937_64 rng_;
  // Fitted kernel parameters (d inverse squared lengthscales, kernel scale,
  // noise) by the trial numbers they were fitted on, for `fits_space_`.
  std::map<std::vector<int>, std::vector<double>> fits_;
  std::vector<std::string> fits_space_;
};

}  // namespace tune
