// Scrambled Sobol points in [0, 1)^dim, for the candidates of the Gaussian-
// process sampler (Optuna draws them with scipy's qmc.Sobol(scramble=True):
// optuna/_gp/search_space.py, _sample_normalized_params).
//
// The unscrambled sequence is Boost.Random's sobol_engine, whose direction
// numbers are Joe and Kuo's new-joe-kuo-6.21201 ("Constructing Sobol
// sequences with better two-dimensional projections", SIAM J. Sci. Comput.
// 30, 2008), up to 3667 dimensions. Scrambling is scipy's: a random linear
// matrix scramble (a lower-triangular binary matrix with unit diagonal per
// dimension) followed by a random digital shift (Owen 2003, "Variance with
// alternative scramblings of digital nets"), both drawn from `seed`.
#pragma once

#include <cstdint>
#include <vector>

namespace tune {

// n points, row-major (point i, dimension j at [i * dim + j]). The same
// (dim, n, seed) always gives the same points. 1 <= dim <= 3667.
std::vector<double> ScrambledSobol(int dim, int n, uint64_t seed);

}  // namespace tune
