// The Gaussian process's kernel (Optuna's optuna/_gp/gp.py: Matern52Kernel
// and GPRegressor.kernel): a Matern 5/2 kernel with one inverse squared
// lengthscale per coordinate (automatic relevance determination), scaled by
// kernel_scale. A continuous coordinate contributes its squared difference, a
// choice its Hamming distance (1 if the indices differ, else 0):
//   k(a, b) = kernel_scale * matern52(sum_j w_j sqd_j(a, b)),
//   matern52(r2) = exp(-sqrt(5 r2)) (5/3 r2 + sqrt(5 r2) + 1).
// The observation noise is added to the diagonal by the regressor.
//
// Internal to the GP sampler (search/gp_sampler.h); Eigen types in the
// interface so that the tests can check the matrices.
#pragma once

#include <Eigen/Dense>
#include <vector>

namespace tune {

using GpMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct GpKernelParams {
  Eigen::VectorXd inverse_squared_lengthscales;  // one per coordinate
  double kernel_scale = 1.0;
  double noise_var = 1.0;
};

// matern52(r2) and its derivative with respect to r2 (not r), exact at 0.
double Matern52(double r2);
double Matern52Deriv(double r2);
// Both at once (one exp): returns matern52(r2), sets *deriv.
double Matern52WithDeriv(double r2, double* deriv);

// Per-coordinate squared difference of a and b (Hamming for choices).
inline double SquaredDiff(double a, double b, bool categorical) {
  return categorical ? (a != b ? 1.0 : 0.0) : (a - b) * (a - b);
}

// sum_j w_j sqd_j(a, b) over `d` coordinates.
double WeightedSquaredDistance(const double* a, const double* b, const std::vector<char>& is_categorical,
                               const Eigen::VectorXd& w);

// The kernel matrix K[i][k] = k(x1_i, x2_k), without noise. Squared
// differences are taken directly, (a - b)^2 as Optuna's kernel does, one
// row of x1 at a time against all of x2 (vectorised over x2's rows, so that
// one point costs as little per entry as many).
Eigen::MatrixXd KernelMatrix(const GpMatrix& x1, const GpMatrix& x2, const std::vector<char>& is_categorical,
                             const GpKernelParams& params);

}  // namespace tune
