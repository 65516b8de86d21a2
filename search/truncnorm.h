// Standard normal and truncated-normal numerics for the Parzen estimator.
//
// Everything here is for the *standard* normal N(0, 1) truncated to [a, b];
// callers shift and scale (x = mu + sigma * z). The functions stay finite and
// accurate deep in the tails (|z| up to several hundred), where the naive
// log(Phi(b) - Phi(a)) underflows, because TPE evaluates kernels far from
// their centre. Pure functions, thread-safe.
#pragma once

namespace tune {
namespace truncnorm {

// log Phi(z), Phi the standard normal CDF.
double LogNdtr(double z);

// log(Phi(b) - Phi(a)) for a <= b: the log probability mass of [a, b].
// -inf when a == b; 0 when a < -8.3 and b > 8.3 (the true value is above
// -1.1e-16).
double LogGaussMass(double a, double b);

// LogGaussMass for n intervals at once: out[i] = LogGaussMass(a[i], b[i]).
// Intervals with a <= 0 <= b (a kernel centred inside its domain) take a
// vectorised path (Cephes' rational approximations of erfc, exp(-y^2) split
// against error growth; within a few 1e-16 of LogGaussMass, and the tail
// beyond 8.3 sigma, below 5.3e-17, counts as zero); the others the scalar
// one. `out` may not alias `a` or `b`.
void LogGaussMassBatch(const double* a, const double* b, int n, double* out);

// Phi^{-1}(p) for 0 < p < 1 (Acklam's rational approximation refined by one
// Halley step, so accurate to a few ulps). Returns -inf/+inf at 0/1.
double Ndtri(double p);

// The q-quantile (0 < q < 1) of N(0, 1) truncated to [a, b], a < b. The
// result lies in [a, b].
double Ppf(double q, double a, double b);

// log density at z of N(0, 1) truncated to [a, b] (-inf outside).
double LogPdf(double z, double a, double b);

}  // namespace truncnorm
}  // namespace tune
