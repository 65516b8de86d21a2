#include "schedulers/numpy_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tune::internal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// NumPy's _lerp: the two formulas meet at t = 0.5 and each is exact at its
// own end (a at t = 0, b at t = 1).
double Lerp(double a, double b, double t) {
  double diff = b - a;
  if (t >= 0.5) return b - diff * (1 - t);
  return a + diff * t;
}

}  // namespace

double NanPercentile(std::vector<double> values, double percent) {
  values.erase(std::remove_if(values.begin(), values.end(),
                              [](double v) { return std::isnan(v); }),
               values.end());
  std::sort(values.begin(), values.end());
  return SortedPercentile(values, percent);
}

double SortedPercentile(const std::vector<double>& values, double percent) {
  if (values.empty()) return kNaN;
  const double q = percent / 100.0;
  const double n = static_cast<double>(values.size());
  const double virtual_index = (n - 1) * q;
  if (std::isnan(virtual_index) || virtual_index >= n - 1) {
    return Lerp(values.back(), values.back(), virtual_index + 1);
  }
  if (virtual_index < 0) return Lerp(values.front(), values.front(), virtual_index);
  const double previous = std::floor(virtual_index);
  const size_t i = static_cast<size_t>(previous);
  return Lerp(values[i], values[i + 1], virtual_index - previous);
}

double PairwiseSum(const double* a, size_t n) {
  constexpr size_t kBlock = 128;  // NumPy's PW_BLOCKSIZE
  if (n < 8) {
    double res = -0.0;  // NumPy starts at -0.0 so that a sum of -0.0 stays -0.0
    for (size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= kBlock) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return PairwiseSum(a, n2) + PairwiseSum(a + n2, n - n2);
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return kNaN;
  // The reduction starts from add's identity, 0.0.
  double sum = 0.0 + PairwiseSum(values.data(), values.size());
  return sum / static_cast<double>(values.size());
}

double Median(std::vector<double> values) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  if (n % 2 == 1) return values[n / 2];
  return Mean({values[n / 2 - 1], values[n / 2]});
}

}  // namespace tune::internal
