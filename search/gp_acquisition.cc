#include "search/gp_acquisition.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tune {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrtHalfPi = 1.25331413731550025121;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;

// erfcx(u) = exp(u^2) erfc(u) for u >= 10 (all we need: z < -25 gives
// u > 17.6), by its continued fraction (Lentz's method).
double ErfcxLarge(double u) {
  // erfcx(u) = (1/sqrt(pi)) / (u + (1/2)/(u + 1/(u + (3/2)/(u + 2/(u + ...))))).
  double f = u, c = u, dd = 0;
  for (int k = 1; k < 200; ++k) {
    double a = 0.5 * k;
    dd = u + a * dd;
    dd = 1.0 / dd;
    c = u + a / c;
    double delta = c * dd;
    f *= delta;
    if (std::abs(delta - 1.0) < 1e-16) break;
  }
  return 0.5641895835477562869 / f;  // 1/sqrt(pi)
}

// Below this, log(z Phi(z) + phi(z)) by its asymptotic series: the
// continued-fraction branch loses digits to cancellation (1 + sqrt(pi/2) z
// erfcx(-z/sqrt2) is about 1/z^2), while the series' first omitted term,
// 10395/z^10, is below 1e-16 here.
constexpr double kSeriesBelow = -100;

// log S and d log S / dz for ei(z) = phi(z) / z^2 * S(z),
// S = 1 - 3/z^2 + 15/z^4 - 105/z^6 + 945/z^8.
double LogSeries(double z, double* dlog) {
  double i = 1 / z, i2 = i * i;
  double s = 1 + i2 * (-3 + i2 * (15 + i2 * (-105 + i2 * 945)));
  double ds = i2 * i * (6 + i2 * (-60 + i2 * (630 - i2 * 7560)));
  if (dlog) *dlog = ds / s;
  return std::log(s);
}

}  // namespace

double StandardLogEI(double z) {
  if (z >= -25) {
    // z Phi(z) + phi(z), Phi(z) = erfc(-z/sqrt2)/2.
    return std::log(0.5 * z * std::erfc(-kSqrtHalf * z) + std::exp(-0.5 * z * z) * kInvSqrt2Pi);
  }
  if (z >= kSeriesBelow) {
    // -z^2/2 - log sqrt(2 pi) + log(1 + sqrt(pi/2) z erfcx(-z/sqrt2)).
    return -0.5 * z * z - kLogSqrt2Pi + std::log1p(kSqrtHalfPi * z * ErfcxLarge(-kSqrtHalf * z));
  }
  return -0.5 * z * z - kLogSqrt2Pi - 2 * std::log(-z) + LogSeries(z, nullptr);
}

double StandardLogEIDeriv(double z) {
  if (z >= -25) {
    double cdf = 0.5 * std::erfc(-kSqrtHalf * z);
    return cdf / (z * cdf + std::exp(-0.5 * z * z) * kInvSqrt2Pi);
  }
  if (z >= kSeriesBelow) {
    // Phi(z)/ei(z) = sqrt(pi/2) erfcx(u) / (1 + sqrt(pi/2) z erfcx(u)), u = -z/sqrt2.
    double e = kSqrtHalfPi * ErfcxLarge(-kSqrtHalf * z);
    return e / (1.0 + z * e);
  }
  double dlog = 0;
  LogSeries(z, &dlog);
  return -z - 2 / z + dlog;
}

Eigen::VectorXd LogEI::Evaluate(const GpMatrix& x) const {
  // Blocks of rows keep the temporaries (block x training points) small
  // enough to be reused by the allocator rather than mapped afresh.
  constexpr Eigen::Index kBlock = 128;
  Eigen::VectorXd out(x.rows()), mean, var;
  for (Eigen::Index b = 0; b < x.rows(); b += kBlock) {
    const Eigen::Index rows = std::min(kBlock, x.rows() - b);
    gpr_.Posterior(x.middleRows(b, rows), &mean, &var);
    for (Eigen::Index i = 0; i < rows; ++i) {
      double sigma = std::sqrt(var[i] + kStabilizingNoise);
      out[b + i] = StandardLogEI((mean[i] - threshold_) / sigma) + std::log(sigma);
    }
  }
  return out;
}

double LogEI::EvaluateWithGrad(const double* x, double* grad) const {
  const int d = static_cast<int>(gpr_.x().cols());
  double mean = 0, var = 0;
  std::vector<double> dmean(d), dvar(d);
  gpr_.PosteriorWithGrad(x, &mean, &var, dmean.data(), dvar.data());
  double sigma = std::sqrt(var + kStabilizingNoise);
  double z = (mean - threshold_) / sigma;
  double h = StandardLogEIDeriv(z);
  for (int j = 0; j < d; ++j) {
    double dsigma = dvar[j] / (2 * sigma);
    // d/dx [h(z) + log sigma], z = (mean - f0) / sigma.
    grad[j] = h * (dmean[j] - z * dsigma) / sigma + dsigma / sigma;
  }
  return StandardLogEI(z) + std::log(sigma);
}

}  // namespace tune

