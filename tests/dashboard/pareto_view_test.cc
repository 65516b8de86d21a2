// dashboard/pareto_view: the front, the reference point and the hypervolume
// curve that `tune best`, the dashboard and `tune report` share, on records
// built by hand (hypervolumes worked out on paper).
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>

#include "core/pareto.h"
#include "dashboard/pareto_view.h"

namespace {

using namespace tune;

ObjectiveSpec Objective(const std::string& metric, Mode mode, std::optional<double> ref = std::nullopt) {
  ObjectiveSpec o;
  o.metric = metric;
  o.mode = mode;
  o.ref = ref;
  return o;
}

ExperimentSpec Spec(std::vector<ObjectiveSpec> objectives, bool constrained) {
  ExperimentSpec spec;
  spec.objectives = std::move(objectives);
  spec.objective = spec.objectives.front();
  if (constrained) spec.constraints.push_back({"peak_mem_gb", std::nullopt, 10.0});
  return spec;
}

// A completed trial with `values` (several objectives) and constraint
// violation `c` (<= 0 feasible); with one value, Trial::value.
TrialRecord Completed(int number, std::vector<double> values, double c = -1) {
  TrialRecord r;
  r.trial.number = number;
  r.trial.state = TrialState::kCompleted;
  if (values.size() == 1) {
    r.trial.value = values[0];
  } else {
    r.trial.value = values[0];
    r.trial.values = std::move(values);
  }
  r.trial.constraints = {c};
  return r;
}

TrialRecord Pruned(int number, double value) {
  TrialRecord r;
  r.trial.number = number;
  r.trial.state = TrialState::kPruned;
  r.trial.value = value;
  return r;
}

std::vector<int> Numbers(const std::vector<TrialRecord>& records, const std::vector<size_t>& indices) {
  std::vector<int> out;
  for (size_t i : indices) out.push_back(records[i].trial.number);
  return out;
}

// Two objectives, both minimised: trial 3 is dominated by trial 2, trial 4
// dominates everything but is infeasible, trial 5 was pruned, trial 6 ties
// trial 1.
std::vector<TrialRecord> TwoObjectiveRecords() {
  return {Completed(0, {3, 1}), Completed(1, {1, 3}), Completed(2, {2, 2}), Completed(3, {2.5, 2.5}),
          Completed(4, {0.5, 0.5}, /*c=*/1.0), Pruned(5, 0.1), Completed(6, {1, 3})};
}

}  // namespace

TEST_CASE("pareto view: the front in the first objective's order, ties kept, infeasible and unfinished out",
          "[pareto_view]") {
  const ExperimentSpec spec = Spec({Objective("eval_loss", Mode::kMin), Objective("adapter_mb", Mode::kMin)}, true);
  const std::vector<TrialRecord> records = TwoObjectiveRecords();
  const ParetoView view = ComputeParetoView(spec, records);
  CHECK(Numbers(records, view.front) == std::vector<int>{1, 6, 2, 0});
  CHECK(Numbers(records, view.feasible) == std::vector<int>{0, 1, 2, 3, 6});
  CHECK(Numbers(records, view.infeasible) == std::vector<int>{4});
  // Without the hypervolume (the experiments list): the same sets, no curve.
  const ParetoView sets = ComputeParetoView(spec, records, /*with_hypervolume=*/false);
  CHECK(sets.front == view.front);
  CHECK(sets.feasible == view.feasible);
  CHECK(sets.infeasible == view.infeasible);
  CHECK(sets.hypervolume == 0);
  CHECK(sets.hypervolume_curve.empty());
}

TEST_CASE("pareto view: a given reference point, and the hypervolume curve", "[pareto_view]") {
  const ExperimentSpec spec =
      Spec({Objective("eval_loss", Mode::kMin, 4.0), Objective("adapter_mb", Mode::kMin, 4.0)}, true);
  const std::vector<TrialRecord> records = TwoObjectiveRecords();
  const ParetoView view = ComputeParetoView(spec, records);
  CHECK(view.reference == std::vector<double>{4, 4});
  CHECK(view.reference_given == std::vector<bool>{true, true});
  // The front (1,3) (2,2) (3,1) against (4,4): 1*1 + 1*2 + 1*3.
  CHECK(view.hypervolume == Approx(6));
  // After trial 0: (3,1) alone, 1*3; after 1: 2*1 + 1*3; after 2 the whole front.
  const std::vector<std::pair<int, double>> want = {{0, 3}, {1, 5}, {2, 6}, {3, 6}, {6, 6}};
  REQUIRE(view.hypervolume_curve.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(view.hypervolume_curve[i].first == want[i].first);
    CHECK(view.hypervolume_curve[i].second == Approx(want[i].second));
    if (i) CHECK(view.hypervolume_curve[i].second >= view.hypervolume_curve[i - 1].second);
  }
  CHECK(view.hypervolume_curve.back().second == Approx(view.hypervolume));
  CHECK(DescribeReference(spec, view) == "reference point (eval_loss 4 given, adapter_mb 4 given)");
}

TEST_CASE("pareto view: without ref, the worst feasible value of each objective", "[pareto_view]") {
  const ExperimentSpec spec = Spec({Objective("eval_loss", Mode::kMin), Objective("adapter_mb", Mode::kMin)}, true);
  const std::vector<TrialRecord> records = TwoObjectiveRecords();
  const ParetoView view = ComputeParetoView(spec, records);
  // Worst of the feasible trials (the infeasible trial 4 and the pruned 5 do not count).
  CHECK(view.reference == std::vector<double>{3, 3});
  CHECK(view.reference_given == std::vector<bool>{false, false});
  // Only (2,2) reaches inside (3,3): 1*1.
  CHECK(view.hypervolume == Approx(1));
  REQUIRE(!view.hypervolume_curve.empty());
  CHECK(view.hypervolume_curve.front().second == Approx(0));
  CHECK(view.hypervolume_curve.back().second == Approx(view.hypervolume));
  CHECK(DescribeReference(spec, view) ==
        "reference point (eval_loss 3 the worst feasible value, adapter_mb 3 the worst feasible value)");
}

TEST_CASE("pareto view: a maximised objective, one reference given and one the worst", "[pareto_view]") {
  const ExperimentSpec spec =
      Spec({Objective("eval_loss", Mode::kMin, 4.0), Objective("tokens_per_s", Mode::kMax)}, false);
  // b dominates c (lower loss, more tokens); a and b are the front.
  std::vector<TrialRecord> records = {Completed(0, {1, 5}), Completed(1, {2, 7}), Completed(2, {3, 6})};
  for (TrialRecord& r : records) r.trial.constraints.clear();
  const ParetoView view = ComputeParetoView(spec, records);
  CHECK(Numbers(records, view.front) == std::vector<int>{0, 1});
  // tokens_per_s: the worst feasible is the lowest, 5.
  CHECK(view.reference == std::vector<double>{4, 5});
  CHECK(view.reference_given == std::vector<bool>{true, false});
  // As losses (1,-5) (2,-7) against (4,-5): 0 + 2*2.
  CHECK(view.hypervolume == Approx(4));
  CHECK(view.hypervolume_curve.back().second == Approx(4));
  CHECK(DescribeReference(spec, view) == "reference point (eval_loss 4 given, tokens_per_s 5 the worst feasible value)");
}

TEST_CASE("pareto view: three objectives, a hypervolume worked out by hand", "[pareto_view]") {
  const ExperimentSpec spec = Spec({Objective("a", Mode::kMin, 2.0), Objective("b", Mode::kMin, 2.0),
                                    Objective("c", Mode::kMin, 2.0)},
                                   false);
  std::vector<TrialRecord> records = {Completed(0, {0, 1, 1}), Completed(1, {1, 0, 1}), Completed(2, {1, 1, 1.5})};
  for (TrialRecord& r : records) r.trial.constraints.clear();
  const ParetoView view = ComputeParetoView(spec, records);
  // Trial 2 is dominated by both others.
  CHECK(Numbers(records, view.front) == std::vector<int>{0, 1});
  // Boxes [0,2]x[1,2]x[1,2] (2) and [1,2]x[0,2]x[1,2] (2) overlap in [1,2]x[1,2]x[1,2] (1): 3.
  CHECK(view.hypervolume == Approx(3));
  CHECK(view.hypervolume_curve.back().second == Approx(3));
}

TEST_CASE("pareto view: one objective, the front is the best feasible completed trial", "[pareto_view]") {
  ExperimentSpec spec = Spec({Objective("eval_loss", Mode::kMin)}, true);
  const std::vector<TrialRecord> records = {Completed(0, {0.5}), Completed(1, {0.3}, /*c=*/2.0),
                                            Completed(2, {0.4}), Pruned(3, 0.1), Completed(4, {0.4})};
  const ParetoView view = ComputeParetoView(spec, records);
  CHECK(Numbers(records, view.front) == std::vector<int>{2, 4});  // the tie kept, by number
  CHECK(Numbers(records, view.infeasible) == std::vector<int>{1});
  CHECK(view.reference == std::vector<double>{0.5});
  CHECK(view.hypervolume == Approx(0.1));
  REQUIRE(view.hypervolume_curve.size() == 3);
  CHECK(view.hypervolume_curve[0].second == Approx(0));
  CHECK(view.hypervolume_curve[2].second == Approx(0.1));
}

TEST_CASE("pareto view: the curve keeps at most 256 points, the last one the whole front's", "[pareto_view]") {
  const ExperimentSpec spec = Spec({Objective("x", Mode::kMin), Objective("y", Mode::kMin)}, false);
  std::vector<TrialRecord> records;
  for (int i = 0; i < 1000; ++i) {
    // Points on the line x + y = 1, in an order that keeps adding to the front.
    const double x = (i * 7919 % 1000) / 1000.0;
    records.push_back(Completed(i, {x, 1 - x}));
    records.back().trial.constraints.clear();
  }
  const ParetoView view = ComputeParetoView(spec, records);
  CHECK(view.front.size() == 1000);
  REQUIRE(view.hypervolume_curve.size() <= 256);
  CHECK(view.hypervolume_curve.back().first == 999);
  CHECK(view.hypervolume_curve.back().second == Approx(view.hypervolume));
  for (size_t i = 1; i < view.hypervolume_curve.size(); ++i) {
    CHECK(view.hypervolume_curve[i].first > view.hypervolume_curve[i - 1].first);
    CHECK(view.hypervolume_curve[i].second >= view.hypervolume_curve[i - 1].second);
  }
}

TEST_CASE("pareto view: the curve, grown point by point, equals each prefix's hypervolume computed whole",
          "[pareto_view]") {
  for (size_t m : {2, 3, 4}) {
    std::vector<ObjectiveSpec> objectives;
    for (size_t j = 0; j < m; ++j) objectives.push_back(Objective("o" + std::to_string(j), j == 1 ? Mode::kMax : Mode::kMin));
    const ExperimentSpec spec = Spec(objectives, true);
    std::vector<TrialRecord> records;
    uint64_t state = 99 + m;
    auto uniform = [&] {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<double>(state >> 11) / 9007199254740992.0;
    };
    for (int i = 0; i < 200; ++i) {
      std::vector<double> v(m);
      // Coarse values, so that ties and duplicates occur; a few infeasible.
      for (double& x : v) x = std::round(uniform() * 8) / 8;
      records.push_back(Completed(i, v, uniform() < 0.1 ? 1.0 : -1.0));
    }
    const ParetoView view = ComputeParetoView(spec, records);
    REQUIRE(view.hypervolume_curve.size() == view.feasible.size());  // fewer than 256
    std::vector<bool> maximize(m, false);
    maximize[1] = true;
    Losses ref = view.reference;
    ref[1] = -ref[1];
    std::vector<Losses> prefix;
    for (size_t k = 0; k < view.feasible.size(); ++k) {
      prefix.push_back(ToLosses(records[view.feasible[k]].trial.values, maximize));
      std::vector<Losses> front;
      for (size_t i : ParetoFront(prefix)) front.push_back(prefix[i]);
      INFO(m << " objectives, after trial " << view.hypervolume_curve[k].first);
      CHECK(view.hypervolume_curve[k].second == Approx(Hypervolume(front, ref)).margin(1e-12));
    }
    CHECK(view.hypervolume_curve.back().second == Approx(view.hypervolume));
  }
}

// What a poll of the dashboard spends on a big multi-objective experiment
// (hidden: `pareto_view_test "[.bench]"`).
TEST_CASE("pareto view: time at 1,000 and 10,000 trials", "[.bench]") {
  for (const auto& [m, n] : std::vector<std::pair<size_t, int>>{
           {2, 1000}, {3, 1000}, {4, 1000}, {2, 10000}, {3, 10000}, {4, 10000}}) {
    std::vector<ObjectiveSpec> objectives;
    for (size_t j = 0; j < m; ++j) objectives.push_back(Objective("o" + std::to_string(j), Mode::kMin));
    const ExperimentSpec spec = Spec(objectives, false);
    std::vector<TrialRecord> records;
    uint64_t state = 12345;
    auto uniform = [&] {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<double>(state >> 11) / 9007199254740992.0;
    };
    for (int i = 0; i < n; ++i) {
      std::vector<double> v(m);
      double norm = 0;
      for (double& x : v) {
        x = uniform() + 1e-9;
        norm += x * x;
      }
      for (double& x : v) x /= std::sqrt(norm) * (1 + 0.3 * uniform());  // near a sphere: big fronts
      records.push_back(Completed(i, v));
      records.back().trial.constraints.clear();
    }
    const auto start = std::chrono::steady_clock::now();
    const ParetoView view = ComputeParetoView(spec, records);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    WARN(m << " objectives, " << n << " trials: front " << view.front.size() << ", " << s << " s");
  }
}
