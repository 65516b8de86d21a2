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

double Matern52WithDeriv(double r2, double* deriv) {
  double s = std::sqrt(5.0 * r2), e = std::exp(-s);
  *deriv = (-5.0 / 6.0) * (s + 1.0) * e;
  return e * ((5.0 / 3.0) * r2 + s + 1.0);
}

double WeightedSquaredDistance(const double* a, const double* b, const std::vector<char>& is_categorical,
                               const Eigen::VectorXd& w) {
  double r2 = 0;
  for (Eigen::Index j = 0; j < w.size(); ++j) r2 += w[j] * SquaredDiff(a[j], b[j], is_categorical[j]);
  return r2;
}

Eigen::MatrixXd KernelMatrix(const GpMatrix& x1, const GpMatrix& x2, const std::vector<char>& is_categorical,
                             const GpKernelParams& params) {
  const Eigen::Index m = x1.rows(), n = x2.rows(), d = x1.cols();
  const Eigen::VectorXd& w = params.inverse_squared_lengthscales;
  const Eigen::MatrixXd b = x2;  // column-major: each coordinate contiguous
  Eigen::MatrixXd k(m, n);
  Eigen::ArrayXd r2(n), s(n);
  for (Eigen::Index r = 0; r < m; ++r) {
    r2.setZero();
    for (Eigen::Index j = 0; j < d; ++j) {
      if (is_categorical[j]) {
        r2 += w[j] * (b.col(j).array() != x1(r, j)).cast<double>();
      } else {
        r2 += w[j] * (b.col(j).array() - x1(r, j)).square();
      }
    }
    s = (5.0 * r2).sqrt();
    k.row(r) = (params.kernel_scale * ((-s).exp() * ((5.0 / 3.0) * r2 + s + 1.0))).matrix().transpose();
  }
  return k;
}

}  // namespace tune
