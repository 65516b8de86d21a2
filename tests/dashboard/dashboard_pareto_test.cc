// The dashboard's JSON and `tune report` for a multi-objective experiment
// (docs/dashboard.md, "Several objectives"), over a database written
// through Storage: the front (its trials, in the first objective's order),
// every trial's values, the reference point and the hypervolume (worked out
// by hand), and a single-objective experiment's documents without any of it.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "dashboard/dashboard_data.h"
#include "dashboard/report_page.h"
#include "storage/open_storage.h"
#include "tests/common/temp_dir.h"

namespace {

using namespace tune;
using nlohmann::json;

// eval_loss (min, no ref: the worst feasible value) and adapter_mb (min,
// ref 40); peak_mem_gb at most 10.
const char kMultiSpec[] = R"({
  "name": "mo",
  "objective": [{"metric": "eval_loss", "mode": "min"}, {"metric": "adapter_mb", "mode": "min", "ref": 40}],
  "constraints": [{"metric": "peak_mem_gb", "max": 10}],
  "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-1}},
  "search": {"algorithm": "random", "seed": 1},
  "trial": {"command": ["true"]}
})";

const char kSingleSpec[] = R"({
  "name": "so",
  "objective": {"metric": "eval_loss", "mode": "min"},
  "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-1}},
  "search": {"algorithm": "random", "seed": 1},
  "trial": {"command": ["true"]}
})";

// A trial of experiment `e` started and finished as `state`, with `values`
// and `constraints` stored through FinishTrialWithValues.
void AddTrial(Storage& s, ExperimentId e, TrialState state, std::optional<double> value,
              const std::vector<double>& values, const std::vector<double>& constraints) {
  auto t = s.CreateTrial(e, {{"lr", 0.01}});
  REQUIRE(t.ok());
  REQUIRE(s.StartTrial(t->id, 0, "local:test").ok());
  REQUIRE(s.FinishTrialWithValues(t->id, state, value, values, constraints, std::nullopt, "").ok());
}

// The database: trials 0-3 feasible (3 dominated by 2), 4 infeasible and
// better than all, 5 pruned, 6 failed; and a single-objective experiment.
struct Database {
  testing::TempDir dir{"dashboard_pareto"};
  std::unique_ptr<Storage> storage;
  Database() {
    auto opened = OpenStorage(dir.File("results.db"));
    REQUIRE(opened.ok());
    storage = std::move(*opened);
    auto mo = storage->CreateExperiment("mo", kMultiSpec, 1);
    REQUIRE(mo.ok());
    AddTrial(*storage, *mo, TrialState::kCompleted, 0.9, {0.9, 8}, {-2});
    AddTrial(*storage, *mo, TrialState::kCompleted, 0.5, {0.5, 32}, {-1});
    AddTrial(*storage, *mo, TrialState::kCompleted, 0.7, {0.7, 16}, {-3});
    AddTrial(*storage, *mo, TrialState::kCompleted, 0.8, {0.8, 20}, {-1});
    AddTrial(*storage, *mo, TrialState::kCompleted, 0.3, {0.3, 4}, {5});
    AddTrial(*storage, *mo, TrialState::kPruned, 1.2, {}, {});
    AddTrial(*storage, *mo, TrialState::kFailed, std::nullopt, {}, {});
    auto so = storage->CreateExperiment("so", kSingleSpec, 1);
    REQUIRE(so.ok());
    AddTrial(*storage, *so, TrialState::kCompleted, 0.4, {}, {});
    AddTrial(*storage, *so, TrialState::kCompleted, 0.2, {}, {});
  }
};

json Parse(const Result<std::string>& text) {
  INFO((text.ok() ? std::string() : text.status().message()));
  REQUIRE(text.ok());
  return json::parse(*text);
}

}  // namespace

TEST_CASE("dashboard API, several objectives: the front, the values, the reference and the hypervolume",
          "[dashboard][pareto]") {
  Database db;
  DashboardData data(*db.storage, db.dir.Sub("tune_runs"));
  const json exp = Parse(data.Experiment("mo"));
  INFO(exp.dump(2));
  // The single-objective fields are still there: scheduler.metric's absent,
  // so the first objective is the one `value` holds.
  CHECK(exp["metric"] == "eval_loss");
  CHECK(exp.contains("best"));
  CHECK(exp["objectives"] == json::parse(R"([{"metric": "eval_loss", "mode": "min", "ref": null},
                                             {"metric": "adapter_mb", "mode": "min", "ref": 40.0}])"));
  CHECK(exp["constraints"] == json::parse(R"([{"metric": "peak_mem_gb", "min": null, "max": 10.0}])"));

  const json& p = exp["pareto"];
  // Sorted by eval_loss, best first; trial 3 dominated, 4 infeasible.
  CHECK(p["front"] == json::parse(R"([{"number": 1, "values": [0.5, 32.0]}, {"number": 2, "values": [0.7, 16.0]},
                                      {"number": 0, "values": [0.9, 8.0]}])"));
  CHECK(p["feasible"] == json({0, 1, 2, 3}));
  CHECK(p["infeasible"] == json({4}));
  CHECK(p["reference"] == json({0.9, 40.0}));
  CHECK(p["reference_given"] == json({false, true}));
  CHECK(p["reference_text"] == "reference point (eval_loss 0.9 the worst feasible value, adapter_mb 40 given)");
  // Against (0.9, 40): (0.7 - 0.5) * (40 - 32) + (0.9 - 0.7) * (40 - 16) = 1.6 + 4.8.
  CHECK(p["hypervolume"].get<double>() == Approx(6.4));
  // After trial 0 alone: (0.9, 8) lies on the reference's eval_loss: 0; with
  // trial 1: (0.9 - 0.5) * (40 - 32); with 2 the whole front.
  REQUIRE(p["hypervolume_curve"].size() == 4);
  const double want[][2] = {{0, 0}, {1, 3.2}, {2, 6.4}, {3, 6.4}};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(p["hypervolume_curve"][i][0] == static_cast<int>(want[i][0]));
    CHECK(p["hypervolume_curve"][i][1].get<double>() == Approx(want[i][1]));
  }

  // Each trial's row: every objective's value, its constraint and feasibility.
  const json& rows = exp["trial_rows"];
  REQUIRE(rows.size() == 7);
  CHECK(rows[3]["values"] == json({0.8, 20.0}));
  CHECK(rows[3]["constraint_values"] == json({-1.0}));
  CHECK(rows[3]["feasible"] == true);
  CHECK(rows[4]["values"] == json({0.3, 4.0}));
  CHECK(rows[4]["feasible"] == false);
  for (int n : {5, 6}) {
    CHECK(rows[n]["values"].is_null());
    CHECK(rows[n]["constraint_values"].is_null());
    CHECK(rows[n]["feasible"].is_null());
  }

  // The experiments list: the front's size; a trial's document: its values.
  const json list = Parse(data.Experiments());
  REQUIRE(list.size() == 2);
  CHECK(list[0]["front_size"] == 3);
  CHECK(list[0]["objectives"].size() == 2);
  const json trial = Parse(data.TrialDetail("mo", 2));
  CHECK(trial["values"] == json({0.7, 16.0}));
  CHECK(trial["objectives"][1]["metric"] == "adapter_mb");
  CHECK(trial["feasible"] == true);
}

TEST_CASE("dashboard API, one objective: no front, no values, the documents as before", "[dashboard][pareto]") {
  Database db;
  DashboardData data(*db.storage, db.dir.Sub("tune_runs"));
  const json exp = Parse(data.Experiment("so"));
  for (const char* key : {"pareto", "objectives", "constraints"}) CHECK(!exp.contains(key));
  for (const json& row : exp["trial_rows"]) {
    for (const char* key : {"values", "constraint_values", "feasible"}) CHECK(!row.contains(key));
  }
  CHECK(exp["best"]["number"] == 1);
  const json list = Parse(data.Experiments());
  CHECK(!list[1].contains("front_size"));
  CHECK(!Parse(data.TrialDetail("so", 0)).contains("values"));
}

TEST_CASE("tune report, several objectives: the page carries the front and the hypervolume", "[dashboard][pareto]") {
  Database db;
  DashboardData data(*db.storage, db.dir.Sub("tune_runs"));
  Result<std::string> page = ReportPage(data, "mo");
  REQUIRE(page.ok());
  const std::string tag = "window.TUNE_REPORT = ";
  const size_t at = page->find(tag);
  REQUIRE(at != std::string::npos);
  const size_t end = page->find(";</script>", at);
  REQUIRE(end != std::string::npos);
  const json doc = json::parse(page->substr(at + tag.size(), end - at - tag.size()));
  const json& p = doc["experiment"]["pareto"];
  REQUIRE(p["front"].size() == 3);
  CHECK(p["front"][0]["number"] == 1);
  CHECK(p["hypervolume"].get<double>() == Approx(6.4));
  CHECK(doc["trials"]["2"]["values"] == json({0.7, 16.0}));
  // The page's script draws them (the browser test checks that it does).
  CHECK(page->find("paretoCharts") != std::string::npos);
  CHECK(page->find("hypervolumeChart") != std::string::npos);
}
