// Reading the GP goldens that tests/search/golden/make_gp_golden.py and
// make_gp_acqf_golden.py write from Optuna 5.0.0's own numbers.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "search/gp_kernel.h"

namespace tune::testing {

// tests/search/golden/<file>, parsed; fails the test when it is missing.
inline nlohmann::json GpGolden(const std::string& file) {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/tests/search/golden/" + file);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// A JSON array of rows (arrays of numbers) as a matrix.
inline GpMatrix GpMatrixFromJson(const nlohmann::json& rows) {
  GpMatrix m(rows.size(), rows[0].size());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j) m(i, j) = rows[i][j].get<double>();
  }
  return m;
}

}  // namespace tune::testing
