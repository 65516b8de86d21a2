// TpeSamplerOptions: what configures TpeSampler (search/tpe_sampler.h), in
// a header of its own so that spec/ can fill it from experiment.json
// without the sampler (docs/architecture.md, section 1.3).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "search/parzen_rules.h"

namespace tune {

struct TpeSamplerOptions {
  int n_startup_trials = 10;
  int n_ei_candidates = 24;
  // Candidates when every parameter sampled together is numerical (float or
  // int; no choice): more of them sharpen the argmax where the density ratio
  // is smooth, while a choice keeps n_ei_candidates (its argmax over many
  // draws would settle on one value too early). 0: n_ei_candidates. Not an
  // Optuna option (Optuna draws n_ei_candidates in every case); the default
  // is measured in bench/RESULTS.md ("TPE out of the box"). Applies only
  // while no trial is in flight: with the constant liar's running trials in
  // the history, n_ei_candidates is drawn (more candidates measured worse
  // with 4 and 8 trials in flight).
  int n_ei_candidates_numerical = 128;
  // Fraction of the n completed/pruned trials that form l(x): ceil(gamma n).
  // Unset: Optuna's default min(ceil(0.1 n), 25).
  std::optional<double> gamma;
  double prior_weight = 1.0;
  bool consider_prior = true;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  // Joint model of all parameters (Optuna 5.0's default); false: one
  // model per parameter.
  bool multivariate = true;
  // With multivariate: the joint model covers the numerical parameters only,
  // and each choice parameter has a model of its own (as in univariate
  // mode), so that one kernel per trial does not tie a choice to values of
  // parameters that matter only for other choices. Not an Optuna option;
  // the default is measured in bench/RESULTS.md ("TPE out of the box").
  bool independent_choices = true;
  // Which Optuna release's Parzen estimator to follow where they differ
  // (bandwidths, log ints; see ParzenRules).
  ParzenRules parzen_rules = ParzenRules::kOptuna5;
  bool constant_liar = true;
  bool maximize = false;  // the objective's direction (Trial::value is raw)
  // Multi-objective experiments: one direction per objective, in objective
  // order (Trial::values), true = maximise; then TPE splits the history as
  // Optuna's multi-objective TPE does and `maximize` is unused. Empty: one
  // objective, the single-objective TPE exactly as before.
  std::vector<bool> objectives_maximize;
  uint64_t seed = 0;
};

}  // namespace tune
