#include "search/gp_kernel.h"

#include <cmath>

namespace tune {

double Matern52(double r2) {
  double s = std::sqrt(5.0 * r2);
  return std::exp(-s) * ((5.0 / 3.0) * r2 + s + 1.0);
}

double Matern52Deriv(double r2) {
  // Optuna's Matern52Kernel.forward: -5/6 (1 + sqrt(5 r2)) exp(-sqrt(5 r2)).
  double s = std::sqrt(5.0 * r2);
  return (-5.0 / 6.0) * (s + 1.0) * std::exp(-s);
}

double WeightedSquaredDistance(const double* a, const double* b, const std::vector<char>& is_categorical,
                               const Eigen::VectorXd& w) {
  double r2 = 0;
  for (Eigen::Index j = 0; j < w.size(); ++j) r2 += w[j] * SquaredDiff(a[j], b[j], is_categorical[j]);
  return r2;
}

Eigen::MatrixXd KernelMatrix(const GpMatrix& x1, const GpMatrix& x2, const std::vector<char>& is_categorical,
                             const GpKernelParams& params) {
  Eigen::MatrixXd k(x1.rows(), x2.rows());
  for (Eigen::Index i = 0; i < x1.rows(); ++i) {
    for (Eigen::Index m = 0; m < x2.rows(); ++m) {
      double r2 = WeightedSquaredDistance(x1.row(i).data(), x2.row(m).data(), is_categorical,
                                          params.inverse_squared_lengthscales);
      k(i, m) = params.kernel_scale * Matern52(r2);
    }
  }
  return k;
}

}  // namespace tune
