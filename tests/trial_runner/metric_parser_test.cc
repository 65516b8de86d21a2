// Table-driven tests of ParseMetricLine (docs/architecture.md, section 4.4; metric_parser.h).
#include "trial_runner/metric_parser.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace tune {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  std::string line;
  // Expected metrics; empty means "ordinary log output" (nullopt).
  std::map<std::string, double> want;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // Katib text form.
      {"step=40 train_loss=2.31 eval_loss=2.05",
       {{"step", 40}, {"train_loss", 2.31}, {"eval_loss", 2.05}}},
      {"loss=0.5", {{"loss", 0.5}}},
      {"step=1,loss=0.25", {{"step", 1}, {"loss", 0.25}}},
      {"step=2, loss=0.125 ,acc=0.9", {{"step", 2}, {"loss", 0.125}, {"acc", 0.9}}},
      {"step=3\tloss=1.5", {{"step", 3}, {"loss", 1.5}}},
      {"  loss=7  \r", {{"loss", 7}}},
      // RFC 3339 timestamps before the pairs (Z, offsets, fractional seconds).
      {"2024-01-02T03:04:05Z epoch 3: loss=0.2", {{"loss", 0.2}}},
      {"2024-01-02T03:04:05.123456Z accuracy=0.75", {{"accuracy", 0.75}}},
      {"2024-01-02T03:04:05+02:00 step=7 loss=1.25", {{"step", 7}, {"loss", 1.25}}},
      {"2024-01-02T03:04:05.5-07:30 loss=3", {{"loss", 3}}},
      {"2024-01-02 03:04:05,123 INFO step=9 lr=0.001", {{"step", 9}, {"lr", 0.001}}},
      // Scientific notation, signs, bare dots.
      {"lr=1e-5 wd=2.5E+3 x=1E2", {{"lr", 1e-5}, {"wd", 2500}, {"x", 100}}},
      {"grad=-3.5 delta=+0.25 bias=-1e-3", {{"grad", -3.5}, {"delta", 0.25}, {"bias", -1e-3}}},
      {"a=.5 b=5.", {{"a", 0.5}, {"b", 5}}},
      {"big=1e999 tiny=1e-999", {{"big", kInf}, {"tiny", 0}}},
      // Names with '-', '.', '/'.
      {"Validation-accuracy=0.91 train.loss=0.3 eval/loss=0.4",
       {{"Validation-accuracy", 0.91}, {"train.loss", 0.3}, {"eval/loss", 0.4}}},
      {"--lr=0.01", {{"--lr", 0.01}}},
      // nan and inf in any case and sign.
      {"loss=nan acc=inf", {{"loss", kNan}, {"acc", kInf}}},
      {"loss=NaN x=-Inf y=+infinity", {{"loss", kNan}, {"x", -kInf}, {"y", kInf}}},
      // Words and junk pairs between valid pairs.
      {"epoch 3 done: loss=0.2 mode=train acc=0.8", {{"loss", 0.2}, {"acc", 0.8}}},
      {"loss=0.3; acc=0.9", {{"acc", 0.9}}},
      {"step=5 step=6", {{"step", 6}}},
      // JSON form.
      {R"({"step": 40, "eval_loss": 2.05})", {{"step", 40}, {"eval_loss", 2.05}}},
      {R"(  {"step": 1, "ok": true, "bad": false, "name": "run-1", "tags": [1, 2],)"
       R"( "nested": {"loss": 9}, "none": null, "loss": -1.5e-2}  )",
       {{"step", 1}, {"ok", 1}, {"bad", 0}, {"loss", -0.015}}},
      {R"({"big": 18446744073709551615, "neg": -7})",
       {{"big", 18446744073709551615.0}, {"neg", -7}}},
      // Junk: ordinary log output.
      {"", {}},
      {"   ", {}},
      {"Epoch 1/10", {}},
      {"Training started with a learning rate of 0.001", {}},
      {"a = b", {}},
      {"loss = 0.5", {}},
      {"x=y", {}},
      {"loss=0.5abc", {}},
      {"loss==0.5", {}},
      {"ratio=1/2", {}},
      {"hex=0x10", {}},
      {"exp=1e", {}},
      {"downloading https://example.com/model?x=1&y=2", {}},
      {"see http://host:8080/path?rev=3", {}},
      {"100%|##########| 50/50 [00:05<00:00,  9.98it/s]", {}},
      {"[=====>      ] 45%", {}},
      {"==========", {}},
      {"  5%|5         | 5/100 [00:01<00:19, 4.87it/s, loss=0.5]", {}},
      {"2024-01-02T03:04:05Z starting", {}},
      {"=5", {}},
      {R"({"event": "start", "params": {"lr": 0.1}})", {}},
      {R"({"loss": NaN})", {}},
      {"[1, 2, 3]", {}},
      {"{not json}", {}},
  };
  return cases;
}

bool SameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= 1e-12 * std::max(1.0, std::fabs(b));
}

TEST_CASE("ParseMetricLine table", "[metric_parser]") {
  REQUIRE(Cases().size() >= 25);
  for (const Case& c : Cases()) {
    INFO("line: [" << c.line << "]");
    std::optional<std::map<std::string, double>> got = ParseMetricLine(c.line);
    if (c.want.empty()) {
      CHECK_FALSE(got.has_value());
      continue;
    }
    REQUIRE(got.has_value());
    REQUIRE(got->size() == c.want.size());
    for (const auto& [name, value] : c.want) {
      INFO("metric " << name);
      auto it = got->find(name);
      REQUIRE(it != got->end());
      CHECK(SameValue(it->second, value));
    }
  }
}

TEST_CASE("ParseMetricLine keeps full double precision", "[metric_parser]") {
  auto got = ParseMetricLine("loss=0.1234567890123456789 step=123456789012");
  REQUIRE(got.has_value());
  CHECK(got->at("loss") == 0.1234567890123456789);
  CHECK(got->at("step") == 123456789012.0);
}

}  // namespace
}  // namespace tune
