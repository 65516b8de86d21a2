// Log expected improvement (Optuna's optuna/_gp/acqf.py: standard_logei,
// logei and LogEI; Ament et al. 2023, "Unexpected Improvements to Expected
// Improvement for Bayesian Optimization", eq. 9).
//
// The GP models standardised values to maximise: logEI(x) = log E[max(0,
// f(x) - threshold)] with f(x) ~ N(mean(x), var(x) + 1e-12), threshold the
// best standardised value seen.
#pragma once

#include "search/gp_regressor.h"

namespace tune {

// log E[max(0, Z + z)] for Z ~ N(0, 1), i.e. log(z Phi(z) + phi(z)), without
// underflow in the far left tail (z < -25: Ament et al.'s second branch;
// below -100 its asymptotic series).
double StandardLogEI(double z);
// d StandardLogEI / dz = Phi(z) / (z Phi(z) + phi(z)).
double StandardLogEIDeriv(double z);

class LogEI {
 public:
  // `gpr` must outlive this object and be cached.
  LogEI(const GpRegressor& gpr, double threshold) : gpr_(gpr), threshold_(threshold) {}

  // logEI at each row of `x`.
  Eigen::VectorXd Evaluate(const GpMatrix& x) const;
  // logEI at one point and its gradient with respect to the point (zero for
  // choices). `grad`: d values.
  double EvaluateWithGrad(const double* x, double* grad) const;

  const GpRegressor& gpr() const { return gpr_; }

 private:
  static constexpr double kStabilizingNoise = 1e-12;
  const GpRegressor& gpr_;
  double threshold_;
};

}  // namespace tune
