#include "bench/tpe_suite.h"

#include <cmath>

namespace tune {
namespace {

double Num(const ParamMap& p, const std::string& name) {
  const ParamValue& v = p.at(name);
  if (auto* d = std::get_if<double>(&v)) return *d;
  return static_cast<double>(std::get<int64_t>(v));
}

const std::string& Str(const ParamMap& p, const std::string& name) { return std::get<std::string>(p.at(name)); }

FloatDistribution Float(double lo, double hi, bool log = false) { return FloatDistribution{lo, hi, log, std::nullopt}; }

CategoricalDistribution Choice(std::vector<ParamValue> choices) { return CategoricalDistribution{std::move(choices), false}; }

std::string X(int i) { return "x" + std::to_string(i); }

SuiteProblem Branin() {
  SearchSpace s;
  s["x1"] = Float(-5, 10);
  s["x2"] = Float(0, 15);
  auto f = [](const ParamMap& p) {
    double x1 = Num(p, "x1"), x2 = Num(p, "x2");
    const double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
    return std::pow(x2 - b * x1 * x1 + c * x1 - 6, 2) + 10 * (1 - t) * std::cos(x1) + 10;
  };
  return {"branin", s, f, 0.397887357729739, {{"x1", M_PI}, {"x2", 2.275}}};
}

SuiteProblem Hartmann6() {
  SearchSpace s;
  for (int i = 0; i < 6; ++i) s[X(i)] = Float(0, 1);
  auto f = [](const ParamMap& p) {
    static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
    static const double a[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                   {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8},
                                   {17, 8, 0.05, 10, 0.1, 14}};
    static const double pm[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                    {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                    {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                    {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
    double sum = 0;
    for (int r = 0; r < 4; ++r) {
      double e = 0;
      for (int i = 0; i < 6; ++i) e += a[r][i] * std::pow(Num(p, X(i)) - pm[r][i], 2);
      sum += alpha[r] * std::exp(-e);
    }
    return -sum;
  };
  ParamMap argmin;
  const double xs[6] = {0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573};
  for (int i = 0; i < 6; ++i) argmin[X(i)] = xs[i];
  return {"hartmann6", s, f, -3.32236801141551, argmin};
}

// The mixed LoRA-like space of issue 3; minimum 0.
SuiteProblem Mixed6() {
  SearchSpace s;
  s["optimizer"] = Choice({std::string("adam"), std::string("sgd"), std::string("adamw")});
  s["lora_r"] = Choice({int64_t{4}, int64_t{8}, int64_t{16}, int64_t{32}, int64_t{64}});
  s["num_layers"] = IntDistribution{1, 8, false, 1};
  s["lr"] = Float(1e-6, 1e-1, true);
  s["weight_decay"] = Float(1e-6, 1e-1, true);
  s["dropout"] = Float(0, 0.5);
  auto f = [](const ParamMap& p) {
    const std::string& opt = Str(p, "optimizer");
    double offset = opt == "adamw" ? 0 : opt == "adam" ? 0.05 : 0.3;
    double lr_opt = opt == "sgd" ? 1e-2 : 3e-4;
    double wd_opt = opt == "adamw" ? 1e-2 : opt == "adam" ? 1e-5 : 1e-4;
    return offset + std::pow(std::log10(Num(p, "lr") / lr_opt), 2) +
           0.05 * std::pow(std::log2(Num(p, "lora_r")) - 4, 2) + 0.03 * std::pow(Num(p, "num_layers") - 4, 2) +
           0.1 * std::pow(std::log10(Num(p, "weight_decay") / wd_opt), 2) + 2 * std::pow(Num(p, "dropout") - 0.1, 2);
  };
  ParamMap argmin = {{"optimizer", std::string("adamw")}, {"lora_r", int64_t{16}}, {"num_layers", int64_t{4}},
                     {"lr", 3e-4}, {"weight_decay", 1e-2}, {"dropout", 0.1}};
  return {"mixed6", s, f, 0.0, argmin};
}

// Rosenbrock's valley in 4-d on [-5, 10]^4; minimum 0 at (1, 1, 1, 1).
SuiteProblem Rosenbrock4() {
  SearchSpace s;
  ParamMap argmin;
  for (int i = 0; i < 4; ++i) {
    s[X(i)] = Float(-5, 10);
    argmin[X(i)] = 1.0;
  }
  auto f = [](const ParamMap& p) {
    double sum = 0;
    for (int i = 0; i < 3; ++i) {
      double x = Num(p, X(i)), y = Num(p, X(i + 1));
      sum += 100 * std::pow(y - x * x, 2) + std::pow(1 - x, 2);
    }
    return sum;
  };
  return {"rosenbrock4", s, f, 0.0, argmin};
}

// Styblinski-Tang in 5-d on [-5, 5]^5; minimum at x_i = the root of
// 4x^3 - 32x + 5 near -2.9035.
SuiteProblem StyblinskiTang5() {
  constexpr double kRoot = -2.903534027771177;
  auto term = [](double x) { return 0.5 * (std::pow(x, 4) - 16 * x * x + 5 * x); };
  SearchSpace s;
  ParamMap argmin;
  for (int i = 0; i < 5; ++i) {
    s[X(i)] = Float(-5, 5);
    argmin[X(i)] = kRoot;
  }
  auto f = [term](const ParamMap& p) {
    double sum = 0;
    for (int i = 0; i < 5; ++i) sum += term(Num(p, X(i)));
    return sum;
  };
  return {"styblinski_tang5", s, f, 5 * term(kRoot), argmin};
}

// Levy in 6-d on [-10, 10]^6 (many local minima); minimum 0 at (1, ..., 1).
SuiteProblem Levy6() {
  SearchSpace s;
  ParamMap argmin;
  for (int i = 0; i < 6; ++i) {
    s[X(i)] = Float(-10, 10);
    argmin[X(i)] = 1.0;
  }
  auto f = [](const ParamMap& p) {
    double w[6];
    for (int i = 0; i < 6; ++i) w[i] = 1 + (Num(p, X(i)) - 1) / 4;
    double sum = std::pow(std::sin(M_PI * w[0]), 2);
    for (int i = 0; i < 5; ++i) sum += std::pow(w[i] - 1, 2) * (1 + 10 * std::pow(std::sin(M_PI * w[i] + 1), 2));
    sum += std::pow(w[5] - 1, 2) * (1 + std::pow(std::sin(2 * M_PI * w[5]), 2));
    return sum;
  };
  return {"levy6", s, f, 0.0, argmin};
}

// A choice of model, each with parameters of its own (a flat space in which
// only the chosen model's parameters count, as a conditional space looks to
// a sampler that draws everything): linear (offset 0.3), tree (0.15), net
// (0, best with gelu); minimum 0.
SuiteProblem Conditional() {
  SearchSpace s;
  s["model"] = Choice({std::string("linear"), std::string("tree"), std::string("net")});
  s["linear_alpha"] = Float(1e-6, 1e2, true);
  s["tree_depth"] = IntDistribution{1, 12, false, 1};
  s["tree_min_leaf"] = IntDistribution{1, 50, false, 1};
  s["net_activation"] = Choice({std::string("relu"), std::string("tanh"), std::string("gelu"), std::string("sigmoid")});
  s["net_width"] = IntDistribution{16, 1024, true, 1};
  s["net_lr"] = Float(1e-5, 1, true);
  auto f = [](const ParamMap& p) {
    const std::string& model = Str(p, "model");
    if (model == "linear") return 0.3 + 0.1 * std::pow(std::log10(Num(p, "linear_alpha")) + 2, 2);
    if (model == "tree")
      return 0.15 + 0.01 * std::pow(Num(p, "tree_depth") - 7, 2) + 0.002 * std::pow(Num(p, "tree_min_leaf") - 5, 2);
    const std::string& act = Str(p, "net_activation");
    double offset = act == "gelu" ? 0 : act == "relu" ? 0.05 : act == "tanh" ? 0.1 : 0.3;
    return offset + 0.3 * std::pow(std::log10(Num(p, "net_lr")) + 2.5, 2) +
           0.05 * std::pow(std::log2(Num(p, "net_width")) - 8, 2);
  };
  ParamMap argmin = {{"model", std::string("net")},        {"linear_alpha", 1e-2},
                     {"tree_depth", int64_t{7}},           {"tree_min_leaf", int64_t{5}},
                     {"net_activation", std::string("gelu")}, {"net_width", int64_t{256}},
                     {"net_lr", std::pow(10.0, -2.5)}};
  return {"conditional", s, f, 0.0, argmin};
}

// An HPO-like surrogate of a LoRA fine-tune: the best learning rate falls
// with the rank (2e-3 * sqrt(16 / rank), halved for a constant schedule),
// log learning rate and log weight decay form a tilted valley, rank 16 and
// the cosine schedule are best; minimum 0.
SuiteProblem HpoLora() {
  SearchSpace s;
  s["learning_rate"] = Float(1e-5, 1e-1, true);
  s["weight_decay"] = Float(1e-6, 1e-1, true);
  s["rank"] = IntDistribution{1, 64, true, 1};
  s["schedule"] = Choice({std::string("constant"), std::string("linear"), std::string("cosine")});
  auto f = [](const ParamMap& p) {
    const std::string& sched = Str(p, "schedule");
    double offset = sched == "cosine" ? 0 : sched == "linear" ? 0.02 : 0.08;
    double rank = Num(p, "rank");
    double lr_opt = 2e-3 * std::sqrt(16 / rank) * (sched == "constant" ? 0.5 : 1.0);
    double u = std::log10(Num(p, "learning_rate") / lr_opt);
    double v = std::log10(Num(p, "weight_decay") / 1e-3);
    return offset + 0.5 * std::pow(u + v, 2) + 0.05 * std::pow(u - v, 2) + 0.02 * std::pow(std::log2(rank) - 4, 2);
  };
  ParamMap argmin = {{"learning_rate", 2e-3}, {"weight_decay", 1e-3}, {"rank", int64_t{16}},
                     {"schedule", std::string("cosine")}};
  return {"hpo_lora", s, f, 0.0, argmin};
}

}  // namespace

std::vector<SuiteProblem> TpeSuite() {
  return {Branin(), Hartmann6(), Mixed6(), Rosenbrock4(), StyblinskiTang5(), Levy6(), Conditional(), HpoLora()};
}

const SuiteProblem* FindSuiteProblem(const std::vector<SuiteProblem>& suite, const std::string& name) {
  for (const SuiteProblem& p : suite)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace tune
