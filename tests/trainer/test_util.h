// Helpers shared by the trainer tests (scratch folders: tests/common/temp_dir.h).
#pragma once

#include <algorithm>
#include <string>

#include <torch/torch.h>

#include "tests/common/temp_dir.h"

namespace tune::testing {

inline std::string GoldenDir() { return std::string(TUNE_SOURCE_DIR) + "/tests/trainer/golden"; }

// max |a - b| <= rtol * max |b| (+ a tiny floor): "relative to the tensor".
inline bool CloseRel(const torch::Tensor& a, const torch::Tensor& b, double rtol) {
  if (a.sizes() != b.sizes()) return false;
  const double scale = b.abs().max().item<double>();
  const double diff = (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
  return diff <= rtol * scale + 1e-12;
}

inline double MaxRelDiff(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(b.abs().max().item<double>(), 1e-30);
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>() / scale;
}

}  // namespace tune::testing
