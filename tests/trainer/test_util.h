// Helpers shared by the trainer tests.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace tune::testing {

inline std::string GoldenDir() { return std::string(TUNE_SOURCE_DIR) + "/tests/trainer/golden"; }

// A fresh empty folder under the system temp dir, unique per object, removed
// with everything in it when the object goes (also when a REQUIRE throws).
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("lora_train_test_" + tag + "_XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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
