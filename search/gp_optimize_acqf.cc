#include "search/gp_optimize_acqf.h"

#include <LBFGSB.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tune {
namespace {

constexpr int kMaxExhaustive = 16;  // MAX_INT_EXHAUSTIVE_SEARCH_PARAMS
constexpr int kMaxLocalIterations = 100;

double EvaluateOne(const LogEI& acqf, const std::vector<double>& x) {
  GpMatrix m = Eigen::Map<const GpMatrix>(x.data(), 1, static_cast<Eigen::Index>(x.size()));
  return acqf.Evaluate(m)[0];
}

// -acqf as a function of the continuous coordinates scaled by 1/l.
struct ScaledNegAcqf {
  const LogEI& acqf;
  const std::vector<int>& cont;
  const Eigen::VectorXd& l;
  std::vector<double> x, grad;
  double best = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_z;

  double operator()(const Eigen::VectorXd& z, Eigen::VectorXd& g) {
    for (size_t k = 0; k < cont.size(); ++k) x[cont[k]] = z[k] * l[k];
    double f = -acqf.EvaluateWithGrad(x.data(), grad.data());
    for (size_t k = 0; k < cont.size(); ++k) g[k] = -grad[cont[k]] * l[k];
    if (!std::isfinite(f)) return std::numeric_limits<double>::max();
    if (f < best) best = f, best_z = z;
    return f;
  }
};

// _gradient_ascent_batched for one point: true if it improved `x`.
bool GradientAscent(const LogEI& acqf, const GpSpace& space, std::vector<double>& x, double& fx, double tol) {
  const std::vector<int>& cont = space.continuous_indices();
  if (cont.empty()) return false;
  const Eigen::Index n = static_cast<Eigen::Index>(cont.size());
  Eigen::VectorXd l(n), z(n), lb = Eigen::VectorXd::Zero(n), ub(n);
  const Eigen::VectorXd& w = acqf.gpr().params().inverse_squared_lengthscales;
  for (Eigen::Index k = 0; k < n; ++k) {
    l[k] = 1.0 / std::sqrt(w[cont[k]]);
    ub[k] = 1.0 / l[k];
    z[k] = std::clamp(x[cont[k]] / l[k], 0.0, ub[k]);
  }
  ScaledNegAcqf f{acqf, cont, l, x, std::vector<double>(x.size()), std::numeric_limits<double>::infinity(), z};
  LBFGSpp::LBFGSBParam<double> param;
  param.m = 10;
  param.epsilon = std::sqrt(tol);
  param.epsilon_rel = 0;
  param.max_iterations = 200;
  param.delta = 2.220446049250313e-09;
  LBFGSpp::LBFGSBSolver<double> solver(param);
  double fz = 0;
  int iterations = 0;
  try {
    iterations = solver.minimize(f, z, fz, lb, ub);
  } catch (const std::exception&) {
    iterations = 1;  // a failed line search: the best point seen counts
  }
  if (!std::isfinite(f.best) || -f.best <= fx || iterations == 0) return false;
  for (Eigen::Index k = 0; k < n; ++k) x[cont[k]] = std::clamp(f.best_z[k] * l[k], 0.0, 1.0);
  fx = -f.best;
  return true;
}

// _exhaustive_search: every other value of coordinate j.
bool ExhaustiveSearch(const LogEI& acqf, const std::vector<double>& choices, int j, std::vector<double>& x,
                      double& fx) {
  if (choices.size() <= 1) return false;
  GpMatrix all(static_cast<Eigen::Index>(choices.size()), static_cast<Eigen::Index>(x.size()));
  for (size_t c = 0; c < choices.size(); ++c) {
    for (size_t k = 0; k < x.size(); ++k) all(c, k) = x[k];
    all(c, j) = choices[c];
  }
  Eigen::VectorXd f = acqf.Evaluate(all);
  Eigen::Index best = -1;
  for (Eigen::Index c = 0; c < f.size(); ++c) {
    if (choices[c] != x[j] && (best < 0 || f[c] > f[best])) best = c;
  }
  if (best < 0 || !(f[best] > fx)) return false;
  x[j] = choices[best];
  fx = f[best];
  return true;
}

int NearestIndex(const std::vector<double>& grid, double v) {
  auto it = std::lower_bound(grid.begin(), grid.end(), v);
  int i = std::clamp(static_cast<int>(it - grid.begin()), 1, static_cast<int>(grid.size()) - 1);
  return std::abs(v - grid[i - 1]) < std::abs(v - grid[i]) ? i - 1 : i;
}

// _discrete_line_search: minimise -acqf interpolated linearly between grid
// values, from the bracket (below the grid, current value, above the grid).
bool LineSearch(const LogEI& acqf, const std::vector<double>& grid, int j, std::vector<double>& x, double& fx) {
  const int n = static_cast<int>(grid.size());
  const int current = NearestIndex(grid, x[j]);
  std::vector<double> cache(n, NAN);
  cache[current] = -fx;
  std::vector<double> probe = x;
  auto at = [&](int i) {
    if (std::isnan(cache[i])) {
      probe[j] = grid[i];
      cache[i] = -EvaluateOne(acqf, probe);
    }
    return cache[i];
  };
  auto interpolated = [&](double v) {
    if (v < grid[0] || v > grid[n - 1]) return std::numeric_limits<double>::infinity();
    int r = std::clamp(static_cast<int>(std::lower_bound(grid.begin(), grid.end(), v) - grid.begin()), 1, n - 1);
    double wl = (grid[r] - v) / (grid[r] - grid[r - 1]);
    return wl * at(r - 1) + (1 - wl) * at(r);
  };
  double xtol = std::numeric_limits<double>::infinity();
  for (int i = 1; i < n; ++i) xtol = std::min(xtol, (grid[i] - grid[i - 1]) / 4);
  const double eps = 1e-12, golden = 0.3819660112501051;
  double a = grid[0] - eps, b = grid[current], c = grid[n - 1] + eps, fb = -fx;
  while (c - a > xtol) {
    double v = (c - b > b - a) ? b + golden * (c - b) : b - golden * (b - a);
    double fv = interpolated(v);
    if (fv < fb) {
      (v > b ? a : c) = b;
      b = v, fb = fv;
    } else {
      (v > b ? c : a) = v;
    }
  }
  int best = NearestIndex(grid, b);
  double fbest = -at(best);
  if (best == current || !(fbest > fx)) return false;
  x[j] = grid[best];
  fx = fbest;
  return true;
}

bool DiscreteSearch(const LogEI& acqf, const GpSpace& space, int j, std::vector<double>& x, double& fx) {
  const std::vector<double>& choices = space.DiscreteChoices(j);
  if (space.is_categorical()[j] || static_cast<int>(choices.size()) <= kMaxExhaustive) {
    return ExhaustiveSearch(acqf, choices, j, x, fx);
  }
  return LineSearch(acqf, choices, j, x, fx);
}

}  // namespace

double LocalSearchMixed(const LogEI& acqf, const GpSpace& space, std::vector<double>& x, double tol) {
  constexpr int kContinuous = -1;
  double fx = EvaluateOne(acqf, x);
  int last_changed = kContinuous;
  for (int it = 0; it < kMaxLocalIterations; ++it) {
    if (GradientAscent(acqf, space, x, fx, tol)) last_changed = kContinuous;
    for (int j : space.discrete_indices()) {
      if (last_changed == j) return fx;  // a full round without a change
      if (DiscreteSearch(acqf, space, j, x, fx)) last_changed = j;
    }
    if (last_changed == kContinuous) return fx;
  }
  return fx;
}

std::vector<double> OptimizeAcqf(const LogEI& acqf, const GpSpace& space,
                                 const std::vector<std::vector<double>>& warmstarts,
                                 const AcqfOptimizerOptions& options, std::mt19937_64& rng, double* value) {
  const int d = space.dim(), n = options.n_preliminary_samples;
  std::vector<double> samples = space.Sample(n, rng());
  Eigen::VectorXd f = acqf.Evaluate(Eigen::Map<const GpMatrix>(samples.data(), n, d));
  Eigen::Index max_i = 0;
  f.maxCoeff(&max_i);
  // The roulette: exp(f - max), the best excluded, drawn without replacement.
  std::vector<double> probs(n);
  int nonzero = 0;
  for (int i = 0; i < n; ++i) {
    probs[i] = i == max_i ? 0.0 : std::exp(f[i] - f[max_i]);
    nonzero += probs[i] > 0;
  }
  int extra = std::min(options.n_local_search - static_cast<int>(warmstarts.size()) - 1, nonzero);
  std::vector<std::vector<double>> starts;
  auto row = [&](Eigen::Index i) { return std::vector<double>(samples.begin() + i * d, samples.begin() + (i + 1) * d); };
  starts.push_back(row(max_i));
  for (int k = 0; k < extra; ++k) {
    double total = 0;
    for (double p : probs) total += p;
    if (!(total > 0)) break;
    double u = std::uniform_real_distribution<double>(0.0, total)(rng), acc = 0;
    int pick = n - 1;
    for (int i = 0; i < n; ++i) {
      acc += probs[i];
      if (probs[i] > 0 && u < acc) { pick = i; break; }
    }
    while (pick > 0 && probs[pick] == 0) --pick;
    starts.push_back(row(pick));
    probs[pick] = 0;
  }
  for (const auto& w : warmstarts) starts.push_back(w);
  std::vector<double> best;
  double best_f = -std::numeric_limits<double>::infinity();
  for (auto& x : starts) {
    double fx = LocalSearchMixed(acqf, space, x, options.tol);
    if (best.empty() || fx > best_f) best = x, best_f = fx;
  }
  if (value) *value = best_f;
  return best;
}

}  // namespace tune
