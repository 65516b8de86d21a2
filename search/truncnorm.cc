#include "search/truncnorm.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

namespace tune {
namespace truncnorm {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSqrt2 = 1.4142135623730950488;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;  // log(sqrt(2 pi))
// Phi(-8.3) = 5.2e-17: a tail beyond this is below the rounding of 1.
constexpr double kFarTail = 8.3;

// Phi(z) via erfc, which keeps relative accuracy in the left tail.
double Ndtr(double z) { return 0.5 * std::erfc(-z / kSqrt2); }

// log(1 - exp(x)) for x < 0, accurate near 0 and near -inf.
double Log1mExp(double x) {
  return x > -0.6931471805599453 ? std::log(-std::expm1(x)) : std::log1p(-std::exp(x));
}

}  // namespace

double LogNdtr(double z) {
  if (z > 6) return std::log1p(-Ndtr(-z));  // Phi(z) ~ 1: avoid log(1 - tiny) loss
  if (z > -30) return std::log(Ndtr(z));
  // Left tail: Phi(z) = phi(z)/(-z) * (1 - 1/z^2 + 3/z^4 - 15/z^6 + ...).
  // At z <= -30 eight terms leave a relative error below 1e-17.
  double inv_z2 = 1.0 / (z * z);
  double term = 1.0, sum = 1.0;
  for (int k = 1; k <= 8; ++k) {
    term *= -(2.0 * k - 1.0) * inv_z2;
    sum += term;
  }
  return -0.5 * z * z - kLogSqrt2Pi - std::log(-z) + std::log(sum);
}

double LogGaussMass(double a, double b) {
  if (!(a < b)) return -kInf;
  if (b <= 0) {
    // Both in the left tail: log Phi(b) + log(1 - Phi(a)/Phi(b)).
    double lb = LogNdtr(b);
    return lb + Log1mExp(LogNdtr(a) - lb);
  }
  if (a >= 0) return LogGaussMass(-b, -a);  // mirror into the left tail
  // Beyond 8.3 sigma on both sides the missing mass m is below 1.1e-16
  // and log(1 - m) = -m is below the precision of anything it is added to
  // (the kernel normalisers, of order one).
  if (a < -kFarTail && b > kFarTail) return 0;
  // One tail beyond 8.3 sigma adds less than 5.3e-17 to the missing mass.
  if (a < -kFarTail) return std::log1p(-Ndtr(-b));
  if (b > kFarTail) return std::log1p(-Ndtr(a));
  // a < 0 < b: the mass is at least Phi(b) - 1/2, so 1 - Phi(a) - Phi(-b)
  // has no cancellation worth worrying about.
  return std::log1p(-Ndtr(a) - Ndtr(-b));
}

namespace {

using Array = Eigen::ArrayXd;

// Horner evaluation; `monic`: a leading coefficient 1 not listed.
template <size_t N>
Array Poly(const Array& x, const double (&c)[N], bool monic) {
  Array r = monic ? Array(x + c[0]) : Array(Array::Constant(x.size(), c[0]));
  for (size_t i = 1; i < N; ++i) r = r * x + c[i];
  return r;
}

// Phi(-t) = erfc(t / sqrt 2) / 2 for t >= 0, vectorised; 0 beyond t = 8.3.
Array UpperTail(const Array& t) {
  // Cephes ndtr.c: erf(y) = y T(y^2) / U(y^2) on [0, 1]; erfc(y) =
  // exp(-y^2) P(y) / Q(y) on [1, 8].
  static const double kT[] = {9.60497373987051638749E0, 9.00260197203842689217E1,
                              2.23200534594684319226E3, 7.00332514112805075473E3,
                              5.55923013010394962768E4};
  static const double kU[] = {3.35617141647503099647E1, 5.21357949780152679795E2,
                              4.59432382970980127987E3, 2.26290000613890934246E4,
                              4.92673942608635921086E4};
  static const double kP[] = {2.46196981473530512524E-10, 5.64189564831068821977E-1,
                              7.46321056442269912687E0,   4.86371970985681366614E1,
                              1.96520832956077098242E2,   5.26445194995477358631E2,
                              9.34528527171957607540E2,   1.02755188689515710272E3,
                              5.57535335369399327526E2};
  static const double kQ[] = {1.32281951154744992508E1, 8.67072140885989742329E1,
                              3.54937778887819891062E2, 9.75708501743205489753E2,
                              1.82390916687909736289E3, 2.24633760818710981792E3,
                              1.65666309194161350182E3, 5.57535340817727675546E2};
  const Array y = (t * (1.0 / kSqrt2)).min(6.0);
  const Array y2 = y * y;
  const Array small = 1.0 - y * Poly(y2, kT, false) / Poly(y2, kU, true);
  // exp(-y^2) as exp(-m^2) exp(-(2 m f + f^2)), m = y rounded to 1/128 (m^2
  // exact): the rounding error of y^2 is not amplified.
  const Array m = (y * 128.0 + 0.5).floor() * (1.0 / 128.0);
  const Array f = y - m;
  const Array large = (-m * m).exp() * (-(2.0 * m * f + f * f)).exp() * Poly(y, kP, false) /
                      Poly(y, kQ, true);
  return (t > 8.3).select(Array::Zero(t.size()), 0.5 * (y < 1.0).select(small, large));
}

}  // namespace

void LogGaussMassBatch(const double* a, const double* b, int n, double* out) {
  if (n <= 0) return;
  const Eigen::Map<const Array> am(a, n), bm(b, n);
  // log(1 - q) with q = Phi(a) + Phi(-b), as log1p: with u = 1 - q rounded,
  // log(u) * q / (1 - u) is accurate to a few ulps (Goldberg).
  const Array q = UpperTail(-am.min(0.0)) + UpperTail(bm.max(0.0));
  const Array u = 1.0 - q;
  Eigen::Map<Array> o(out, n);
  o = (u == 1.0).select(-q, u.log() * (-q / (u - 1.0)));
  for (int i = 0; i < n; ++i)
    if (!(a[i] <= 0 && b[i] >= 0 && a[i] < b[i])) out[i] = LogGaussMass(a[i], b[i]);
}

double Ndtri(double p) {
  if (p <= 0) return -kInf;
  if (p >= 1) return kInf;
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                             -2.759285104469687e+02, 1.383577518672690e+02,
                             -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                             -1.556989798598866e+02, 6.680131188771972e+01,
                             -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                             -2.400758277161838e+00, -2.549732539343734e+00,
                             4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                             2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow) {
    double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - kLow) {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    double q = std::sqrt(-2 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // One Halley step on Phi(x) - p, using the tail that keeps precision.
  double e = x <= 0 ? Ndtr(x) - p : (1 - p) - Ndtr(-x);
  double u = e * std::sqrt(2 * M_PI) * std::exp(0.5 * x * x);
  if (std::isfinite(u)) x -= u / (1 + 0.5 * x * u);
  return x;
}

double Ppf(double q, double a, double b) {
  if (a > 0) return -Ppf(1 - q, -b, -a);  // keep the bulk of [a, b] in the left tail
  double z;
  double log_mass = LogGaussMass(a, b);
  double log_phi_a = LogNdtr(a);
  // Phi(z) = Phi(a) + q * (Phi(b) - Phi(a)), computed in log space.
  double log_q = std::log(q) + log_mass;
  double hi = std::max(log_phi_a, log_q), lo = std::min(log_phi_a, log_q);
  double log_p = hi + std::log1p(std::exp(lo - hi));
  if (log_p < -700) {
    // Beyond double range for p: invert the tail expansion by Newton on log Phi.
    z = -std::sqrt(-2 * log_p);
    for (int i = 0; i < 50; ++i) {
      double f = LogNdtr(z) - log_p;
      // d/dz log Phi(z) = phi(z)/Phi(z) ~ -z for z << 0.
      double dz = f / (std::exp(-0.5 * z * z - kLogSqrt2Pi - LogNdtr(z)));
      z -= dz;
      if (std::abs(dz) < 1e-14 * std::abs(z)) break;
    }
  } else if (log_p < -0.6931471805599453) {
    z = Ndtri(std::exp(log_p));
  } else {
    // Above the median, invert from the right tail instead:
    // 1 - Phi(z) = (1 - q) * (Phi(b) - Phi(a)) + Phi(-b).
    z = -Ndtri((1 - q) * std::exp(log_mass) + Ndtr(-b));
  }
  return std::clamp(z, a, b);
}

double LogPdf(double z, double a, double b) {
  if (z < a || z > b) return -kInf;
  return -0.5 * z * z - kLogSqrt2Pi - LogGaussMass(a, b);
}

}  // namespace truncnorm
}  // namespace tune
