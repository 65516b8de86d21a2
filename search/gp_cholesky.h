// The inverse of a symmetric positive definite C from its Cholesky factor L
// (C = L L^T), as LAPACK's dpotri does it: L^-1 (dtrtri), then L^-T L^-1
// (dlauum). Each step is done by recursive halving so that almost all the
// work is in Eigen's blocked triangular products and solves: n^3/3
// multiply-adds in all, against n^3 for solving C X = I with the factor.
//
// Internal to the GP sampler: the MAP fit needs every entry of C^-1 for the
// gradient of the marginal likelihood (search/gp_fit.h).
#pragma once

#include <Eigen/Dense>

namespace tune {

// Replaces the lower triangle of `l` (lower-triangular, nonzero diagonal) by
// that of L^-1. The strictly upper triangle is neither read nor written.
void InvertLowerTriangular(Eigen::Ref<Eigen::MatrixXd> l);

// Replaces the lower triangle of `m` (lower-triangular M) by that of the
// symmetric M^T M. The strictly upper triangle is neither read nor written.
void LowerTransposeTimesLower(Eigen::Ref<Eigen::MatrixXd> m);

// C^-1 from its Cholesky factor `l`, in place: on return the lower triangle
// of `l` holds that of C^-1 (the strictly upper triangle is untouched).
inline void CholeskyInverseInPlace(Eigen::Ref<Eigen::MatrixXd> l) {
  InvertLowerTriangular(l);
  LowerTransposeTimesLower(l);
}

}  // namespace tune
