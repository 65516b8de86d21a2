#include "search/parzen_chunk.h"

#include <Eigen/Core>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tune {
namespace internal {
namespace {

TEST_CASE("ExpSum equals Eigen's exp().sum() bit for bit", "[parzen_chunk]") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-700.0, 0.0), small(-40.0, 0.0);
  for (int n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 24, 101, 1000}) {
    for (int rep = 0; rep < 20; ++rep) {
      std::vector<double> v(n);
      for (double& x : v) x = (rep % 2 ? u(rng) : small(rng)) + 3.0;
      const double shift = 3.0;
      const double ours = ExpSum(v.data(), n, shift);
      const double eigen = n == 0 ? 0.0 : (Eigen::Map<const Eigen::ArrayXd>(v.data(), n) - shift).exp().sum();
#if defined(__SSE2__)
      CHECK(std::memcmp(&ours, &eigen, sizeof ours) == 0);
#else
      CHECK(ours == Approx(eigen).epsilon(1e-14));
#endif
    }
  }
}

// The terms by the formula of parzen_chunk.h, one kernel at a time.
double Term(const ChunkArgs& a, int n_continuous, int k) {
  double sq = 0.0;
  for (int d = 0; d < n_continuous; ++d) {
    const double z = (a.x[d] - a.mu[d][k]) * a.inv[d][k];
    sq += z * z;
  }
  double v = a.c[k] - 0.5 * sq;
  for (int p = 0; p < a.n_lookups; ++p) v += a.table[p][a.index[p][k]];
  return v;
}

TEST_CASE("Chunk kernels keep exactly the terms above the threshold, in kernel order", "[parzen_chunk]") {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(0.0, 3.0);
  std::uniform_int_distribution<int> pick(0, 4);
  for (int n_continuous = 0; n_continuous <= 3; ++n_continuous) {
    for (int n_lookups = 0; n_lookups <= 4; ++n_lookups) {
      for (int len : {1, 2, 7, 64}) {
        std::vector<double> c(len), mu[3], inv[3], tables[4];
        std::vector<int> index[4];
        for (double& x : c) x = g(rng);
        ChunkArgs a;
        a.len = len;
        a.c = c.data();
        for (int d = 0; d < 3; ++d) {
          mu[d].resize(len);
          inv[d].resize(len);
          for (int k = 0; k < len; ++k) {
            mu[d][k] = g(rng);
            inv[d][k] = 0.2 + std::abs(g(rng));
          }
          a.mu[d] = mu[d].data();
          a.inv[d] = inv[d].data();
          a.x[d] = g(rng);
        }
        std::vector<const double*> table_ptrs;
        std::vector<const int*> index_ptrs;
        for (int p = 0; p < n_lookups; ++p) {
          tables[p].resize(5);
          for (double& x : tables[p]) x = g(rng);
          index[p].resize(len);
          for (int& i : index[p]) i = pick(rng);
          table_ptrs.push_back(tables[p].data());
          index_ptrs.push_back(index[p].data());
        }
        a.n_lookups = n_lookups;
        a.table = table_ptrs.data();
        a.index = index_ptrs.data();

        const double threshold = -6.0;
        std::vector<double> expected;
        double expected_max = -INFINITY;
        for (int k = 0; k < len; ++k) {
          const double t = Term(a, n_continuous, k);
          expected_max = std::max(expected_max, t);
          if (t > threshold) expected.push_back(t);
        }
        ChunkKernel kernel = ChunkKernelFor(n_continuous, n_lookups);
        REQUIRE(kernel != nullptr);
        std::vector<double> kept(len + 1, NAN);
        kept[0] = 42.0;  // terms are appended after what `used` already counts
        int used = 1;
        const double best = kernel(a, threshold, kept.data(), &used);
        INFO("continuous " << n_continuous << ", lookups " << n_lookups << ", len " << len);
        CHECK(best == Approx(expected_max).epsilon(1e-12));
        REQUIRE(used == 1 + static_cast<int>(expected.size()));
        CHECK(kept[0] == 42.0);
        for (size_t i = 0; i < expected.size(); ++i) CHECK(kept[i + 1] == Approx(expected[i]).epsilon(1e-12));
      }
    }
  }
  CHECK(ChunkKernelFor(4, 0) == nullptr);
}

}  // namespace
}  // namespace internal
}  // namespace tune
