// The inner loops of ParzenEstimator::LogPdfProduct: the log terms of a
// chunk of product kernels for one point, and the sum of their exponentials.
// Both repeat, operation for operation, the Eigen expressions that computed
// them before (Eigen 3.4, SSE2, no FMA), so densities are bit-identical to
// those; they only do less work per term. Internal to tune_search.
#pragma once

namespace tune {
namespace internal {

// The arrays of one chunk of kernels for one point (see LogPdfProduct).
struct ChunkArgs {
  int len = 0;                    // kernels in the chunk
  const double* c = nullptr;      // constant term per kernel
  const double* mu[3] = {};       // continuous axes (up to three): centres
  const double* inv[3] = {};      // and inverse widths per kernel
  double x[3] = {};               // the point's coordinates on those axes
  int n_lookups = 0;
  const double* const* table = nullptr;  // per lookup axis: the point's table
  const int* const* index = nullptr;     // per lookup axis: per kernel, the entry
};

// Computes the terms of one chunk for one point: term k is c[k] - 0.5 *
// (sum of the squared standardised distances of the continuous axes), then
// plus table[p][index[p][k]] for each lookup axis p in axis order. Terms
// above `threshold` are appended to `kept` (room for len values) in kernel
// order and counted in *used. Returns the largest term.
using ChunkKernel = double (*)(const ChunkArgs& args, double threshold, double* kept, int* used);

// The kernel for `n_continuous` continuous axes and `n_lookups` lookup
// axes; null when n_continuous > 3.
ChunkKernel ChunkKernelFor(int n_continuous, int n_lookups);

// The sum of exp(v[k] - shift) over k < n, each v[k] - shift in (-708, 0]:
// what (Map(v, n) - shift).exp().sum() gives with Eigen 3.4 on SSE2, bit for
// bit, at about half the instructions.
double ExpSum(const double* v, int n, double shift);

}  // namespace internal
}  // namespace tune
