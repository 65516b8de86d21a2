// ParzenEstimator: TPE's density model, a weighted mixture of product kernels
// (Bergstra et al. 2011; Optuna's _ParzenEstimator), in the transformed
// space where log parameters are already log-scaled.
//
// Kernel k is centred on observation k (plus an optional prior kernel at the
// centre of the domain). Per dimension it is a truncated normal (continuous),
// a truncated normal integrated over one grid cell (discrete: int and
// quantized), or a categorical distribution smoothed by the prior weight.
// Bandwidths follow Optuna: the larger gap to the sorted neighbours, clipped
// to [range / min(100, 1 + K), range] by the "magic clip". Where Optuna
// releases differ, ParzenRules picks one (see there).
//
// Unchanged between Fit calls; const methods are thread-safe (scratch space
// is per thread) except that Sample advances the caller's rng.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "search/distribution.h"
#include "search/parzen_rules.h"

namespace tune {

// One axis of the estimator's domain, in transformed coordinates.
struct ParzenDimension {
  enum class Kind { kContinuous, kDiscrete, kCategorical };
  Kind kind = Kind::kContinuous;
  // kContinuous: the truncation interval. kDiscrete: the first and last grid
  // points, `step` apart (the kernels live on [low - step/2, high + step/2]).
  double low = 0, high = 1;
  double step = 0;    // kDiscrete only
  int n_choices = 0;  // kCategorical only: values are indices 0..n_choices-1
  // kDiscrete only: coordinates are the logs of grid values. low, high and
  // step stay on the grid's own (linear) scale; the kernels live on
  // [log(low - step/2), log(high + step/2)] and value v's cell is
  // [log(v - step/2), log(v + step/2)].
  bool log = false;
};

struct ParzenEstimatorOptions {
  bool consider_prior = true;
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  bool multivariate = false;
  // The axes must come from ParzenDimensionOf with the same rules.
  ParzenRules rules = ParzenRules::kOptuna5;
};

// The estimator's axis for `dist`: categorical for choices, discrete for
// int and quantized domains, continuous otherwise. Log ints are discrete in
// log space under kOptuna5; under kOptuna3 continuous in log space, widened
// by half a step and rounded back onto the grid.
ParzenDimension ParzenDimensionOf(const Distribution& dist,
                                  ParzenRules rules = ParzenRules::kOptuna5);
// Estimator coordinate of an internal value (ToInternal): log for log domains.
double ToParzenCoordinate(const Distribution& dist, double internal);
// Internal value of the domain point nearest to estimator coordinate x.
double FromParzenCoordinate(const Distribution& dist, double x);

class ParzenEstimator {
 public:
  // `observations`: n rows of dims.size() values, row-major, each inside its
  // dimension (categorical: an index; discrete: a grid point). `weights`: n
  // non-negative values, unnormalised, not all zero (Optuna's weights ramp).
  // With n == 0 the estimator is the prior alone.
  // `sorted_orders` (optional): per dimension, the observation indices
  // ordered by value, ties by index, or an empty list; saves the estimator
  // a sort per numerical dimension when the caller keeps its history sorted.
  ParzenEstimator(std::vector<ParzenDimension> dims, const std::vector<double>& observations,
                  const std::vector<double>& weights, const ParzenEstimatorOptions& options,
                  const std::vector<std::vector<int>>* sorted_orders = nullptr);
  // An empty estimator; Fit before use.
  ParzenEstimator() = default;
  // Rebuilds the estimator in place (same arguments as the constructor),
  // reusing its buffers: a sampler refits two estimators per suggestion.
  void Fit(std::vector<ParzenDimension> dims, const std::vector<double>& observations,
           const std::vector<double>& weights, const ParzenEstimatorOptions& options,
           const std::vector<std::vector<int>>* sorted_orders = nullptr);

  int num_dims() const { return static_cast<int>(dims_.size()); }
  // Number of mixture components after merging identical kernels.
  int num_kernels() const { return static_cast<int>(log_weights_.size()); }

  // Draws `size` points (row-major, size x num_dims) from the mixture into
  // *out. Discrete values are snapped onto the grid, categorical ones are
  // indices. Deterministic given the rng state.
  void Sample(std::mt19937_64& rng, int size, std::vector<double>* out) const;

  // log density of each of the m = x.size() / num_dims() rows of `x`
  // (row-major, each value inside its dimension) into *out (size m).
  void LogPdf(const std::vector<double>& x, std::vector<double>* out) const;

 private:
  struct Axis {
    // Numerical kernels (continuous and discrete).
    std::vector<double> mu, sigma, inv_sigma;
    // Continuous: -log(sigma sqrt(2 pi)) - log Z_k. Discrete: -log Z_k, where
    // Z_k is the kernel's mass on the (extended) domain.
    std::vector<double> log_norm;
    bool shared_sigma = false;  // every non-prior kernel has the same sigma
    // Discrete: a kernel's cell masses depend only on its centre and width.
    // centre_of[k] indexes centre_kernel, one kernel per distinct (centre,
    // width); empty when the kernels are mostly distinct.
    std::vector<int> centre_of, centre_kernel;
    // Categorical kernels: the observed index, or -1 for the prior kernel.
    std::vector<int> choice;
    double log_hit = 0, log_miss = 0, log_uniform = 0;
    std::vector<double> base;  // per kernel: log_miss, or log_uniform for the prior
    double p_hit = 0, p_miss = 0;  // for sampling
  };

  // A run of kernels sorted by centre, with bounds that let LogPdf skip it.
  struct Block {
    int begin = 0, end = 0;
    double mu_lo = 0, mu_hi = 0, sigma_max = 0, c_max = 0;
  };

  static void ClearAxis(Axis* axis);
  void BuildNumericalAxis(int j, const std::vector<double>& column, int n_obs,
                          const std::vector<int>* sorted_order);
  void FinishNumericalAxis(int j);
  void BuildCategoricalAxis(int j, const std::vector<double>& column, int n_obs);
  void MergeDuplicateKernels();
  void BuildWindowIndex();
  bool IndexDiscreteCentres(int j);
  void LogPdfProduct(const std::vector<double>& x, std::vector<double>* out) const;
  void LogPdfWindowed(const std::vector<double>& x, std::vector<double>* out) const;

  std::vector<ParzenDimension> dims_;
  ParzenEstimatorOptions options_;
  bool has_prior_ = false;
  std::vector<double> weights_, log_weights_, cum_weights_;
  // The last input weights (prior's appended) and their normalised values
  // and logs, reused by a refit with the same weights.
  std::vector<double> weights_key_, norm_weights_, log_norm_weights_;
  // Product path (no blocks_): per kernel, every term that does not depend
  // on the point: log weight, numerical normalisers, categorical base.
  std::vector<double> const_term_;
  std::vector<Axis> axes_;
  std::vector<int> continuous_axes_;  // indices of the continuous dimensions
  // One continuous dimension: kernels sorted by centre (the prior, if any,
  // stays last) in blocks, so LogPdf evaluates only the kernels that matter.
  std::vector<Block> blocks_;
  int n_sorted_ = 0;
  // One numerical dimension, neighbour rule: kernel indices by centre.
  std::vector<int> sorted_order_;
  // Scratch buffers of Fit, kept to avoid reallocating on every refit.
  std::vector<double> scratch_a_, scratch_b_, scratch_c_;
  std::vector<std::pair<double, int>> scratch_pairs_;
  std::vector<int> scratch_ints_, scratch_grid_, scratch_chain_;
  Axis scratch_axis_;
};

}  // namespace tune
