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

Eigen::MatrixXd WeightedSquaredDistances(const GpMatrix& x1, const GpMatrix& x2,
                                         const std::vector<char>& is_categorical, const Eigen::VectorXd& w) {
  const Eigen::Index d = w.size();
  // Continuous coordinates scaled by sqrt(w): |a|^2 + |b|^2 - 2 a.b.
  Eigen::ArrayXd sw = w.array().sqrt();
  for (Eigen::Index j = 0; j < d; ++j) if (is_categorical[j]) sw[j] = 0;
  Eigen::MatrixXd a = x1 * sw.matrix().asDiagonal(), b = x2 * sw.matrix().asDiagonal();
  Eigen::MatrixXd r2 = -2.0 * a * b.transpose();
  r2.colwise() += a.rowwise().squaredNorm();
  r2.rowwise() += b.rowwise().squaredNorm().transpose();
  r2 = r2.cwiseMax(0.0);
  for (Eigen::Index j = 0; j < d; ++j) {
    if (!is_categorical[j]) continue;
    const Eigen::ArrayXd c1 = x1.col(j);  // contiguous copies
    for (Eigen::Index m = 0; m < x2.rows(); ++m) {
      r2.col(m).array() += w[j] * (c1 != x2(m, j)).cast<double>();
    }
  }
  return r2;
}

Eigen::MatrixXd Matern52Matrix(const Eigen::MatrixXd& r2, double scale, Eigen::MatrixXd* deriv) {
  Eigen::ArrayXXd s = (5.0 * r2.array()).sqrt(), e = (-s).exp();
  if (deriv) *deriv = ((-5.0 / 6.0) * scale) * ((s + 1.0) * e);
  return scale * (e * ((5.0 / 3.0) * r2.array() + s + 1.0));
}

Eigen::MatrixXd KernelMatrix(const GpMatrix& x1, const GpMatrix& x2, const std::vector<char>& is_categorical,
                             const GpKernelParams& params) {
  return Matern52Matrix(WeightedSquaredDistances(x1, x2, is_categorical, params.inverse_squared_lengthscales),
                        params.kernel_scale);
}

}  // namespace tune
