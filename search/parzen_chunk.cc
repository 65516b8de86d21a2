#include "search/parzen_chunk.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <limits>

namespace tune {
namespace internal {
namespace {

#if defined(__SSE2__)
// exp(x) for two x in (-708, 0]: Cephes' rational approximation with the
// operations of Eigen 3.4's SSE2 pexp (no FMA), so bit-identical to it, but
// with a truncating floor and a single scaling by 2^n, both exact in this
// range, instead of its general ones.
__m128d ExpPacket(__m128d x) {
  const __m128d fx0 =
      _mm_add_pd(_mm_mul_pd(_mm_set1_pd(1.4426950408889634073599), x), _mm_set1_pd(0.5));
  const __m128d tr = _mm_cvtepi32_pd(_mm_cvttpd_epi32(fx0));
  const __m128d fx = _mm_sub_pd(tr, _mm_and_pd(_mm_cmpgt_pd(tr, fx0), _mm_set1_pd(1.0)));
  x = _mm_sub_pd(x, _mm_mul_pd(fx, _mm_set1_pd(0.693145751953125)));
  x = _mm_sub_pd(x, _mm_mul_pd(fx, _mm_set1_pd(1.42860682030941723212e-6)));
  const __m128d x2 = _mm_mul_pd(x, x);
  __m128d px = _mm_set1_pd(1.26177193074810590878e-4);
  px = _mm_add_pd(_mm_mul_pd(px, x2), _mm_set1_pd(3.02994407707441961300e-2));
  px = _mm_add_pd(_mm_mul_pd(px, x2), _mm_set1_pd(9.99999999999999999910e-1));
  px = _mm_mul_pd(px, x);
  __m128d qx = _mm_set1_pd(3.00198505138664455042e-6);
  qx = _mm_add_pd(_mm_mul_pd(qx, x2), _mm_set1_pd(2.52448340349684104192e-3));
  qx = _mm_add_pd(_mm_mul_pd(qx, x2), _mm_set1_pd(2.27265548208155028766e-1));
  qx = _mm_add_pd(_mm_mul_pd(qx, x2), _mm_set1_pd(2.00000000000000000009e0));
  x = _mm_div_pd(px, _mm_sub_pd(qx, px));
  x = _mm_add_pd(_mm_mul_pd(_mm_set1_pd(2.0), x), _mm_set1_pd(1.0));
  const __m128i n = _mm_unpacklo_epi32(_mm_cvttpd_epi32(fx), _mm_setzero_si128());
  const __m128i bits = _mm_slli_epi64(_mm_add_epi64(n, _mm_set_epi64x(1023, 1023)), 52);
  return _mm_mul_pd(x, _mm_castsi128_pd(bits));
}
#endif  // __SSE2__

// One chunk of kernels for one point (see ChunkKernel): the operations and
// order of the Eigen expressions of LogPdfProduct's general path, two
// kernels per SSE2 packet, so the terms are bit-identical to it.
template <int kContinuous, int kLookups>
double ChunkTerms(const ChunkArgs& a, double threshold, double* kept, int* used);

}  // namespace

// Eigen's order: two packet accumulators over blocks of four, one more
// packet, the horizontal sum, then the odd element through std::exp.
double ExpSum(const double* v, int n, double shift) {
  if (n == 0) return 0.0;
  if (n == 1) return std::exp(v[0] - shift);
#if !defined(__SSE2__)
  double sum = 0.0;  // other targets: a plain sum (Eigen's order differs there anyway)
  for (int k = 0; k < n; ++k) sum += std::exp(v[k] - shift);
  return sum;
#else
  const __m128d s = _mm_set1_pd(shift);
  auto packet = [&](int k) { return ExpPacket(_mm_sub_pd(_mm_loadu_pd(v + k), s)); };
  const int end = n / 2 * 2, end4 = n / 4 * 4;
  __m128d r0 = packet(0);
  if (end > 2) {
    __m128d r1 = packet(2);
    for (int k = 4; k < end4; k += 4) {
      r0 = _mm_add_pd(r0, packet(k));
      r1 = _mm_add_pd(r1, packet(k + 2));
    }
    r0 = _mm_add_pd(r0, r1);
    if (end > end4) r0 = _mm_add_pd(r0, packet(end4));
  }
  double res = _mm_cvtsd_f64(_mm_add_sd(r0, _mm_unpackhi_pd(r0, r0)));
  for (int k = end; k < n; ++k) res = res + std::exp(v[k] - shift);
  return res;
#endif
}

namespace {

template <int kContinuous, int kLookups>
double ChunkTerms(const ChunkArgs& a, double threshold, double* kept, int* used) {
  const int len = a.len;
  const double* __restrict c = a.c;
  const double* __restrict mu0 = a.mu[0];
  const double* __restrict mu1 = a.mu[1];
  const double* __restrict mu2 = a.mu[2];
  const double* __restrict inv0 = a.inv[0];
  const double* __restrict inv1 = a.inv[1];
  const double* __restrict inv2 = a.inv[2];
  const int n_lookups = kLookups >= 0 ? kLookups : a.n_lookups;
  int u = *used;
  int k = 0;
  double best_s = -std::numeric_limits<double>::infinity();
#if defined(__SSE2__)
  const double* tab[3] = {};
  const int* idx[3] = {};
  for (int p = 0; p < 3 && p < n_lookups; ++p) {
    tab[p] = a.table[p];
    idx[p] = a.index[p];
  }
  const __m128d half = _mm_set1_pd(0.5);
  const __m128d x0 = _mm_set1_pd(a.x[0]), x1 = _mm_set1_pd(a.x[1]), x2 = _mm_set1_pd(a.x[2]);
  const __m128d thr = _mm_set1_pd(threshold);
  __m128d best = _mm_set1_pd(-std::numeric_limits<double>::infinity());
  auto lookup = [&](__m128d v, int k, int p) {
    __m128d e = _mm_loadl_pd(_mm_setzero_pd(), tab[p] + idx[p][k]);
    e = _mm_loadh_pd(e, tab[p] + idx[p][k + 1]);
    return _mm_add_pd(v, e);
  };
  auto z2 = [](__m128d x, const double* mu, const double* inv, int k) {
    __m128d z = _mm_mul_pd(_mm_sub_pd(x, _mm_loadu_pd(mu + k)), _mm_loadu_pd(inv + k));
    return _mm_mul_pd(z, z);
  };
  for (; k + 2 <= len; k += 2) {
    __m128d v = _mm_loadu_pd(c + k);
    if constexpr (kContinuous == 1) {
      v = _mm_sub_pd(v, _mm_mul_pd(half, z2(x0, mu0, inv0, k)));
    } else if constexpr (kContinuous == 2) {
      v = _mm_sub_pd(v, _mm_mul_pd(half, _mm_add_pd(z2(x0, mu0, inv0, k), z2(x1, mu1, inv1, k))));
    } else if constexpr (kContinuous == 3) {
      v = _mm_sub_pd(v, _mm_mul_pd(half, _mm_add_pd(_mm_add_pd(z2(x0, mu0, inv0, k), z2(x1, mu1, inv1, k)),
                                                    z2(x2, mu2, inv2, k))));
    }
    if constexpr (kLookups >= 1) v = lookup(v, k, 0);
    if constexpr (kLookups >= 2) v = lookup(v, k, 1);
    if constexpr (kLookups >= 3) v = lookup(v, k, 2);
    if constexpr (kLookups < 0) {
      for (int p = 0; p < n_lookups; ++p) {
        __m128d e = _mm_loadl_pd(_mm_setzero_pd(), a.table[p] + a.index[p][k]);
        e = _mm_loadh_pd(e, a.table[p] + a.index[p][k + 1]);
        v = _mm_add_pd(v, e);
      }
    }
    best = _mm_max_pd(best, v);
    const int mask = _mm_movemask_pd(_mm_cmpgt_pd(v, thr));
    _mm_store_sd(kept + u, v);
    u += mask & 1;
    _mm_storeh_pd(kept + u, v);
    u += mask >> 1;
  }
  best_s = std::max(_mm_cvtsd_f64(best), _mm_cvtsd_f64(_mm_unpackhi_pd(best, best)));
#endif  // __SSE2__: other targets take every kernel through the scalar loop
  for (; k < len; ++k) {
    auto sq = [&](double x, const double* mu, const double* inv) {
      const double z = (x - mu[k]) * inv[k];
      return z * z;
    };
    double v = c[k];
    if constexpr (kContinuous == 1) {
      v = v - 0.5 * sq(a.x[0], mu0, inv0);
    } else if constexpr (kContinuous == 2) {
      v = v - 0.5 * (sq(a.x[0], mu0, inv0) + sq(a.x[1], mu1, inv1));
    } else if constexpr (kContinuous == 3) {
      v = v - 0.5 * (sq(a.x[0], mu0, inv0) + sq(a.x[1], mu1, inv1) + sq(a.x[2], mu2, inv2));
    }
    for (int p = 0; p < n_lookups; ++p) v += a.table[p][a.index[p][k]];
    best_s = std::max(best_s, v);
    kept[u] = v;
    u += v > threshold;
  }
  *used = u;
  return best_s;
}

}  // namespace

ChunkKernel ChunkKernelFor(int n_continuous, int n_lookups) {
  if (n_continuous > 3) return nullptr;
  static constexpr ChunkKernel kKernels[4][5] = {
      {ChunkTerms<0, -1>, ChunkTerms<0, 0>, ChunkTerms<0, 1>, ChunkTerms<0, 2>, ChunkTerms<0, 3>},
      {ChunkTerms<1, -1>, ChunkTerms<1, 0>, ChunkTerms<1, 1>, ChunkTerms<1, 2>, ChunkTerms<1, 3>},
      {ChunkTerms<2, -1>, ChunkTerms<2, 0>, ChunkTerms<2, 1>, ChunkTerms<2, 2>, ChunkTerms<2, 3>},
      {ChunkTerms<3, -1>, ChunkTerms<3, 0>, ChunkTerms<3, 1>, ChunkTerms<3, 2>, ChunkTerms<3, 3>}};
  return kKernels[n_continuous][n_lookups <= 3 ? n_lookups + 1 : 0];
}

}  // namespace internal
}  // namespace tune
