#include "dashboard/pareto_json.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

Json Num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
Json Opt(const std::optional<double>& v) { return v ? Num(*v) : Json(nullptr); }

Json Numbers(const std::vector<TrialRecord>& records, const std::vector<size_t>& indices) {
  Json out = Json::array();
  for (size_t i : indices) out.push_back(records[i].trial.number);
  return out;
}

}  // namespace

Json ObjectivesJson(const ExperimentSpec& spec) {
  Json out = Json::array();
  for (const ObjectiveSpec& o : spec.objectives) {
    out.push_back({{"metric", o.metric}, {"mode", o.mode == Mode::kMax ? "max" : "min"}, {"ref", Opt(o.ref)}});
  }
  return out;
}

Json ConstraintsJson(const ExperimentSpec& spec) {
  Json out = Json::array();
  for (const ConstraintSpec& c : spec.constraints) {
    out.push_back({{"metric", c.metric}, {"min", Opt(c.min)}, {"max", Opt(c.max)}});
  }
  return out;
}

Json ParetoJson(const ExperimentSpec& spec, const std::vector<TrialRecord>& records, const ParetoView& view) {
  Json front = Json::array();
  for (size_t i : view.front) {
    const Trial& t = records[i].trial;
    Json values = Json::array();
    if (IsMultiObjective(spec)) {
      for (double v : t.values) values.push_back(Num(v));
    } else if (t.value) {
      values.push_back(Num(*t.value));
    }
    front.push_back({{"number", t.number}, {"values", values}});
  }
  Json reference = Json::array();
  for (double r : view.reference) reference.push_back(Num(r));
  Json curve = Json::array();
  for (const auto& [number, hv] : view.hypervolume_curve) curve.push_back({number, Num(hv)});
  Json j;
  j["front"] = front;
  j["feasible"] = Numbers(records, view.feasible);
  j["infeasible"] = Numbers(records, view.infeasible);
  j["reference"] = reference;
  j["reference_given"] = view.reference_given;
  j["reference_text"] = DescribeReference(spec, view);
  j["hypervolume"] = Num(view.hypervolume);
  j["hypervolume_curve"] = curve;
  return j;
}

}  // namespace tune
