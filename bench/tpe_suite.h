// The TPE benchmark suite: test functions for search quality, each with its
// search space and known optimum. bench/tpe_suite.py defines the very same
// functions for Optuna (tests/bench/tpe_suite_test.cc checks that both give
// the same values on the same points); bench/tpe_vs_optuna.sh compares the
// two samplers on them.
//
// Every function is minimised; regret = value - optimum >= 0.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "search/search_space.h"

namespace tune {

struct SuiteProblem {
  std::string name;
  SearchSpace space;
  std::function<double(const ParamMap&)> f;
  double optimum;
  ParamMap argmin;  // a point where f equals `optimum`
};

// branin (2-d), hartmann6 (6-d), mixed6 (issue 3's mixed LoRA-like space),
// rosenbrock4, styblinski_tang5, levy6, conditional (a choice of model, each
// with its own parameters; all are sampled, only the chosen model's count),
// hpo_lora (log learning rate and weight decay in a tilted valley, log int
// rank, a schedule choice). In this order.
std::vector<SuiteProblem> TpeSuite();

// The problem called `name`, or nullptr.
const SuiteProblem* FindSuiteProblem(const std::vector<SuiteProblem>& suite, const std::string& name);

}  // namespace tune
