#include "search/gp_cholesky.h"

namespace tune {
namespace {

// Below this size a block is handled by one small dense operation.
constexpr Eigen::Index kLeaf = 16;

}  // namespace

void InvertLowerTriangular(Eigen::Ref<Eigen::MatrixXd> l) {
  const Eigen::Index n = l.rows();
  if (n <= kLeaf) {
    Eigen::MatrixXd inv = Eigen::MatrixXd::Identity(n, n);
    l.triangularView<Eigen::Lower>().solveInPlace(inv);
    l.triangularView<Eigen::Lower>() = inv;
    return;
  }
  // L = [A 0; B D]  =>  L^-1 = [A^-1 0; -D^-1 B A^-1  D^-1].
  const Eigen::Index h = n / 2;
  auto a = l.topLeftCorner(h, h);
  auto b = l.bottomLeftCorner(n - h, h);
  auto d = l.bottomRightCorner(n - h, n - h);
  a.triangularView<Eigen::Lower>().solveInPlace<Eigen::OnTheRight>(b);  // B A^-1
  d.triangularView<Eigen::Lower>().solveInPlace(b);                     // D^-1 B A^-1
  b = -b;
  InvertLowerTriangular(a);
  InvertLowerTriangular(d);
}

void LowerTransposeTimesLower(Eigen::Ref<Eigen::MatrixXd> m) {
  const Eigen::Index n = m.rows();
  if (n <= kLeaf) {
    Eigen::MatrixXd low = m.triangularView<Eigen::Lower>();
    m.triangularView<Eigen::Lower>() = low.transpose() * low;
    return;
  }
  // M = [A 0; B D]  =>  M^T M = [A^T A + B^T B  B^T D; D^T B  D^T D].
  const Eigen::Index h = n / 2;
  auto a = m.topLeftCorner(h, h);
  auto b = m.bottomLeftCorner(n - h, h);
  auto d = m.bottomRightCorner(n - h, n - h);
  LowerTransposeTimesLower(a);
  a.selfadjointView<Eigen::Lower>().rankUpdate(b.transpose());  // + B^T B
  b = d.triangularView<Eigen::Lower>().transpose() * b;          // D^T B
  LowerTransposeTimesLower(d);
}

}  // namespace tune
