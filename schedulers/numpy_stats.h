// Order statistics and means computed the way NumPy computes them, so that
// schedulers ported from Ray Tune decide identically, down to the last bit,
// on the same inputs (Ray's cutoffs are np.nanpercentile and np.mean).
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace tune::internal {

// np.nanpercentile(values, percent) with the default "linear" method: NaNs
// are dropped; the (n-1)*q virtual index is interpolated between its two
// neighbours with NumPy's _lerp (a + d*t for t < 0.5, b - d*(1-t) otherwise).
// Returns NaN when no value is left (NumPy warns and returns nan).
double NanPercentile(std::vector<double> values, double percent);
// The same on values already sorted ascending and free of NaN (what
// NanPercentile computes after dropping NaNs and sorting).
double SortedPercentile(const std::vector<double>& sorted, double percent);

// np.add.reduce over a float64 vector: NumPy's pairwise summation (plain
// left-to-right below 8 values, eight interleaved partial sums up to 128,
// halving above), which is what np.mean and np.sum use.
double PairwiseSum(const double* values, std::size_t n);

// np.mean: PairwiseSum / n. NaN for an empty vector.
double Mean(const std::vector<double>& values);

// np.median of values that contain no NaN: the middle element, or the mean
// of the two middle ones. NaN for an empty vector.
double Median(std::vector<double> values);

}  // namespace tune::internal
