#include "search/sobol.h"

#include <boost/random/sobol.hpp>
#include <random>

namespace tune {
namespace {

// One dimension's scramble: y = M x over GF(2) on the 32 bits of x (M
// lower-triangular with unit diagonal, the most significant bit first), then
// y ^= shift. M x is kept as four byte tables: the XOR of M's columns for
// the set bits of each byte of x.
struct Scramble {
  uint32_t table[4][256];
  uint32_t shift;
};

Scramble DrawScramble(std::mt19937_64& rng) {
  uint32_t rows[32];  // rows[i]: the input bits that make output bit 31 - i
  for (int i = 0; i < 32; ++i) {
    uint32_t diag = uint32_t{1} << (31 - i);
    // Random bits strictly above the diagonal bit (the earlier, more
    // significant input bits), the diagonal itself set.
    uint32_t above = i == 0 ? 0 : ~((uint32_t{1} << (32 - i)) - 1);
    rows[i] = (static_cast<uint32_t>(rng()) & above) | diag;
  }
  Scramble s{};
  s.shift = static_cast<uint32_t>(rng());
  uint32_t cols[32] = {};  // cols[b]: M times input bit b
  for (int i = 0; i < 32; ++i) {
    for (int b = 0; b < 32; ++b) {
      if (rows[i] >> b & 1u) cols[b] |= uint32_t{1} << (31 - i);
    }
  }
  for (int k = 0; k < 4; ++k) {
    for (uint32_t v = 1; v < 256; ++v) {
      int low = __builtin_ctz(v);
      s.table[k][v] = s.table[k][v & (v - 1)] ^ cols[8 * k + low];
    }
  }
  return s;
}

uint32_t Apply(const Scramble& s, uint32_t x) {
  return s.table[0][x & 255u] ^ s.table[1][(x >> 8) & 255u] ^ s.table[2][(x >> 16) & 255u] ^
         s.table[3][x >> 24] ^ s.shift;
}

}  // namespace

std::vector<double> ScrambledSobol(int dim, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Scramble> scrambles;
  scrambles.reserve(dim);
  for (int j = 0; j < dim; ++j) scrambles.push_back(DrawScramble(rng));
  boost::random::sobol_engine<uint32_t, 32> engine(dim);
  std::vector<double> out(static_cast<size_t>(n) * dim);
  const double scale = 1.0 / 4294967296.0;  // 2^-32
  // Boost's engine starts at the sequence's second point; the first is the
  // origin (scrambled: the digital shift), as in scipy, so that every block
  // of 2^m points from the start is a net.
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < dim; ++j) {
      uint32_t v = i == 0 ? 0u : static_cast<uint32_t>(engine());
      out[static_cast<size_t>(i) * dim + j] = Apply(scrambles[j], v) * scale;
    }
  }
  return out;
}

}  // namespace tune
