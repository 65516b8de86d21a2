// The five-parameter space the GP tests share: a log float, an int, a
// choice, a stepped float and a log int. tests/search/golden/make_gp_golden.py
// builds the same space on Optuna's side.
#pragma once

#include <optional>
#include <string>

#include "search/search_space.h"

namespace tune::testing {

inline SearchSpace GpTestSpace() {
  SearchSpace s;
  s["a_lr"] = FloatDistribution{1e-4, 1e-2, true, std::nullopt};
  s["b_int"] = IntDistribution{1, 4, false, 1};
  s["c_choice"] = CategoricalDistribution{{ParamValue(std::string("x")), ParamValue(std::string("y")),
                                           ParamValue(std::string("z"))}, false};
  s["d_q"] = FloatDistribution{0.0, 1.0, false, 0.25};
  s["e_logint"] = IntDistribution{1, 1024, true, 1};
  return s;
}

}  // namespace tune::testing
