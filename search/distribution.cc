#include "search/distribution.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tune {
namespace {

template <class... Ts> struct Overload : Ts... { using Ts::operator()...; };
template <class... Ts> Overload(Ts...) -> Overload<Ts...>;

std::optional<double> AsNumber(const ParamValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

std::string Num(double d) { return ParamToString(ParamValue(d)); }

// low + k*step without binary noise: 0 + 3*0.05 is 0.15000000000000002 in
// floating point; users wrote 0.15. Rounding to 15 significant digits
// removes the noise (doubles carry 15.95).
double GridValue(double low, double k, double step) {
  double v = low + k * step;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return std::strtod(buf, nullptr);
}

}  // namespace

std::optional<double> ToInternal(const Distribution& dist, const ParamValue& value) {
  if (!Contains(dist, value)) return std::nullopt;
  if (auto* c = std::get_if<CategoricalDistribution>(&dist)) {
    for (size_t i = 0; i < c->choices.size(); ++i)
      if (c->choices[i] == value) return static_cast<double>(i);
    return std::nullopt;
  }
  return AsNumber(value);
}

ParamValue FromInternal(const Distribution& dist, double x) {
  return std::visit(
      Overload{
          [&](const FloatDistribution& f) -> ParamValue {
            double v = x;
            if (f.step) {
              double k = std::round((v - f.low) / *f.step);
              v = GridValue(f.low, k, *f.step);
              while (v > f.high + 1e-12 * std::abs(f.high)) v -= *f.step;
            }
            if (v < f.low) v = f.low;
            if (v > f.high) v = f.high;
            return v;
          },
          [&](const IntDistribution& d) -> ParamValue {
            double k = std::round((x - static_cast<double>(d.low)) / static_cast<double>(d.step));
            int64_t v = d.low + static_cast<int64_t>(k) * d.step;
            while (v > d.high) v -= d.step;
            if (v < d.low) v = d.low;
            return v;
          },
          [&](const CategoricalDistribution& c) -> ParamValue {
            auto i = static_cast<int64_t>(std::llround(x));
            if (i < 0) i = 0;
            if (i >= static_cast<int64_t>(c.choices.size())) i = static_cast<int64_t>(c.choices.size()) - 1;
            return c.choices[static_cast<size_t>(i)];
          }},
      dist);
}

bool Contains(const Distribution& dist, const ParamValue& value) {
  return std::visit(
      Overload{
          [&](const FloatDistribution& f) {
            auto* d = std::get_if<double>(&value);
            if (!d || !(*d >= f.low && *d <= f.high)) return false;
            if (!f.step) return true;
            double k = (*d - f.low) / *f.step;
            return std::abs(k - std::round(k)) < 1e-6;
          },
          [&](const IntDistribution& i) {
            auto* v = std::get_if<int64_t>(&value);
            return v && *v >= i.low && *v <= i.high && (*v - i.low) % i.step == 0;
          },
          [&](const CategoricalDistribution& c) {
            for (const auto& ch : c.choices)
              if (ch == value) return true;
            return false;
          }},
      dist);
}

std::optional<int64_t> Cardinality(const Distribution& dist) {
  return std::visit(
      Overload{
          [](const FloatDistribution& f) -> std::optional<int64_t> {
            if (!f.step) return std::nullopt;
            return static_cast<int64_t>(std::floor((f.high - f.low) / *f.step + 1e-9)) + 1;
          },
          [](const IntDistribution& i) -> std::optional<int64_t> {
            return (i.high - i.low) / i.step + 1;
          },
          [](const CategoricalDistribution& c) -> std::optional<int64_t> {
            return static_cast<int64_t>(c.choices.size());
          }},
      dist);
}

ParamValue NthValue(const Distribution& dist, int64_t i) {
  return std::visit(
      Overload{
          [&](const FloatDistribution& f) -> ParamValue {
            return GridValue(f.low, static_cast<double>(i), f.step.value_or(0));
          },
          [&](const IntDistribution& d) -> ParamValue { return d.low + i * d.step; },
          [&](const CategoricalDistribution& c) -> ParamValue {
            return c.choices.at(static_cast<size_t>(i));
          }},
      dist);
}

std::string Describe(const Distribution& dist) {
  return std::visit(
      Overload{
          [](const FloatDistribution& f) {
            std::string kind = f.step ? (f.log ? "qloguniform" : "quniform")
                                      : (f.log ? "loguniform" : "uniform");
            std::string s = kind + "(" + Num(f.low) + ", " + Num(f.high);
            if (f.step) s += ", q=" + Num(*f.step);
            return s + ")";
          },
          [](const IntDistribution& i) {
            std::string s = std::string(i.log ? "lograndint" : "int") + "[" +
                            std::to_string(i.low) + ", " + std::to_string(i.high) + "]";
            if (i.step != 1) s += " step " + std::to_string(i.step);
            return s;
          },
          [](const CategoricalDistribution& c) {
            std::string s = c.grid ? "grid[" : "choice[";
            for (size_t k = 0; k < c.choices.size(); ++k) {
              if (k) s += ", ";
              s += ParamToJson(c.choices[k]);
            }
            return s + "]";
          }},
      dist);
}

}  // namespace tune
