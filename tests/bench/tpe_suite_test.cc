// The TPE benchmark suite has one definition on both sides: the C++
// functions (bench/tpe_suite.cc) give the values that bench/tpe_suite.py,
// which tpe_optuna.py runs under Optuna, prints for the same points; and
// each problem's argmin reaches its optimum.
#include "bench/tpe_suite.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace tune {
namespace {

ParamValue FromJson(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.get<int64_t>();
  return v.get<double>();
}

TEST_CASE("the C++ and Python suites give the same values on the same points", "[bench]") {
  const std::vector<SuiteProblem> suite = TpeSuite();
  const std::string cmd = "python3 " TUNE_SOURCE_DIR "/bench/tpe_suite.py points --per-function 6 --seed 3";
  std::FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  REQUIRE(pclose(pipe) == 0);

  std::map<std::string, int> checked;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    const nlohmann::json row = nlohmann::json::parse(out.substr(pos, end - pos));
    pos = end + 1;
    const SuiteProblem* problem = FindSuiteProblem(suite, row["function"].get<std::string>());
    REQUIRE(problem != nullptr);
    ParamMap params;
    for (const auto& [name, v] : row["params"].items()) params[name] = FromJson(v);
    REQUIRE(params.size() == problem->space.size());
    for (const auto& [name, dist] : problem->space) {
      INFO(problem->name << " " << name);
      REQUIRE(params.count(name) == 1);
      CHECK(ToInternal(dist, params.at(name)).has_value());
    }
    const double want = row["value"].get<double>();
    const double got = problem->f(params);
    INFO(problem->name << " at " << row["params"].dump());
    CHECK(got == Approx(want).epsilon(1e-12).margin(1e-12));
    CHECK(got >= problem->optimum - 1e-9);
    ++checked[problem->name];
  }
  for (const SuiteProblem& p : suite) {
    INFO(p.name);
    CHECK(checked[p.name] == 6);
  }
}

TEST_CASE("each suite problem reaches its optimum at its argmin, inside its space", "[bench]") {
  const std::vector<SuiteProblem> suite = TpeSuite();
  REQUIRE(suite.size() >= 8);
  for (const SuiteProblem& p : suite) {
    INFO(p.name);
    REQUIRE(p.argmin.size() == p.space.size());
    for (const auto& [name, dist] : p.space) CHECK(ToInternal(dist, p.argmin.at(name)).has_value());
    const double regret = p.f(p.argmin) - p.optimum;
    CHECK(regret >= -1e-9);
    CHECK(regret < 1e-5);  // hartmann6's argmin is known to 6 digits; the others exactly
  }
}

}  // namespace
}  // namespace tune
