// Multi-objective tuning end to end (docs/experiment.md, "Several
// objectives"): real `tune run`s of synthetic_trial --costs with 2 and 3
// objectives and a constraint, SIGKILLed and resumed, then `tune best`'s
// front checked against the front computed here from the database's rows.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/e2e/e2e_util.h"

using namespace tune::e2e;
using json = nlohmann::json;

namespace {

// eval_loss against adapter_mb (and tokens_per_s for 3 objectives), with
// peak_mem_gb at most 10 (ranks above 50 break it).
json MultiSpec(const std::string& name, int objectives, const std::string& algorithm, int marker) {
  json objective = json::array({{{"metric", "eval_loss"}, {"mode", "min"}}, {{"metric", "adapter_mb"}, {"mode", "min"}}});
  if (objectives == 3) objective.push_back({{"metric", "tokens_per_s"}, {"mode", "max"}});
  json search = {{"algorithm", algorithm}, {"seed", 11}};
  if (algorithm == "tpe") search["n_startup_trials"] = 5;
  if (algorithm == "nsga2") search["population_size"] = 6;
  json scheduler = {{"type", "fifo"}};
  if (objectives == 2) {
    scheduler = {{"type", "asha"}, {"metric", "eval_loss"}, {"max_t", 27}, {"grace_period", 3}, {"reduction_factor", 3}};
  }
  return {
      {"name", name},
      {"objective", objective},
      {"constraints", {{{"metric", "peak_mem_gb"}, {"max", 10}}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-5}, {"high", 1e-1}}},
        {"lora_r", {{"type", "lograndint"}, {"low", 2}, {"high", 97}}},
        {"dropout", {{"type", "uniform"}, {"low", 0.0}, {"high", 0.4}}}}},
      {"search", search},
      {"scheduler", scheduler},
      {"limits", {{"max_trials", 18}, {"max_concurrent_trials", 1}}},
      {"trial",
       {{"command",
         {kBin + "/synthetic_trial", "--lr", "${lr}", "--lora-r", "${lora_r}", "--dropout", "${dropout}", "--steps",
          "27", "--report-every", "3", "--sleep-ms", "4", "--seed", std::to_string(marker), "--costs"}}}},
  };
}

// Every trial and its stored values, one line each.
std::string Rows(const std::string& db) {
  Output o = Sh("sqlite3 " + Quote(db) +
                " \"SELECT t.number, t.state, t.params_json, t.value, (SELECT group_concat(v.kind || v.position || "
                "'=' || ifnull(v.value, 'null'), ' ') FROM trial_values v WHERE v.trial_id = t.id) FROM trials t "
                "ORDER BY t.number\"");
  REQUIRE(o.code == 0);
  return o.out;
}

struct Point {
  int number;
  std::vector<double> losses;  // every objective to minimise
};

// The feasible completed trials' losses, read with plain SQL.
std::vector<Point> FeasiblePoints(const std::string& db, const std::vector<bool>& maximize) {
  Output o = Sh("sqlite3 -json " + Quote(db) +
                " \"SELECT t.number AS number, v.position AS position, v.value AS value FROM trials t JOIN trial_values v "
                "ON v.trial_id = t.id AND v.kind = 'objective' WHERE t.state = 'completed' AND NOT EXISTS (SELECT 1 "
                "FROM trial_values c WHERE c.trial_id = t.id AND c.kind = 'constraint' AND (c.value > 0 OR c.value IS "
                "NULL)) ORDER BY t.number, v.position\"");
  REQUIRE(o.code == 0);
  std::map<int, std::vector<double>> by_number;
  for (const json& row : json::parse(o.out.empty() ? "[]" : o.out)) {
    const size_t j = row["position"].get<size_t>();
    by_number[row["number"].get<int>()].push_back(maximize[j] ? -row["value"].get<double>() : row["value"].get<double>());
  }
  std::vector<Point> out;
  for (auto& [n, l] : by_number) out.push_back({n, l});
  return out;
}

// Numbers of the points no other point dominates.
std::set<int> BruteForceFront(const std::vector<Point>& points) {
  std::set<int> front;
  for (const Point& p : points) {
    bool dominated = false;
    for (const Point& q : points) {
      bool no_worse = true, better = false;
      for (size_t j = 0; j < p.losses.size(); ++j) {
        no_worse = no_worse && q.losses[j] <= p.losses[j];
        better = better || q.losses[j] < p.losses[j];
      }
      dominated = dominated || (no_worse && better);
    }
    if (!dominated) front.insert(p.number);
  }
  return front;
}

void CheckRunKillResume(const fs::path& dir, int objectives, const std::string& algorithm, int marker) {
  const std::string name = "mo" + std::to_string(objectives) + "-" + algorithm;
  const fs::path spec = Write(dir, MultiSpec(name, objectives, algorithm, marker));
  const std::string full = (dir / (name + "-full.db")).string();
  const std::string cut = (dir / (name + "-cut.db")).string();
  const auto t0 = std::chrono::steady_clock::now();
  Output once = Sh(Tune("run " + Quote(spec) + " --db " + Quote(full)));
  INFO(once.out);
  REQUIRE(once.code == 0);
  CHECK_THAT(once.out, Catch::Contains("the Pareto front under the constraints: tune best --db"));
  const double full_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // SIGKILLed 8 times, then resumed to the end: the same trials and values.
  const fs::path log = dir / (name + ".log");
  KillResumedRuns(spec, cut, log, 8, 20261128u + static_cast<unsigned>(objectives), std::max(0.3, full_s / 3));
  Output last = Sh(Tune("run " + Quote(spec) + " --db " + Quote(cut) + " --resume --quiet"));
  INFO(Slurp(log) << last.out);
  REQUIRE(last.code == 0);
  CHECK(Rows(cut) == Rows(full));
  CHECK(NoProcessLeft(std::to_string(marker)));

  // Every completed trial has all its values; some broke the constraint.
  const std::vector<bool> maximize = {false, false, true};
  CHECK(Sh("sqlite3 " + Quote(cut) + " \"SELECT count(*) FROM trials t WHERE t.state = 'completed' AND (SELECT "
           "count(*) FROM trial_values v WHERE v.trial_id = t.id AND v.kind = 'objective') <> " +
           std::to_string(objectives) + "\"")
            .out == "0\n");
  const std::vector<Point> points = FeasiblePoints(cut, maximize);
  REQUIRE(points.size() >= 3);
  const std::set<int> expected = BruteForceFront(points);

  // tune best --format json: exactly that front, sorted by the first
  // objective, values in objective order.
  Output best = Sh(Tune("best --db " + Quote(cut) + " --format json"));
  INFO(best.out);
  REQUIRE(best.code == 0);
  const json front = json::parse(best.out);
  std::set<int> got;
  double previous = -INFINITY;
  for (const json& t : front) {
    got.insert(t["number"].get<int>());
    REQUIRE(t["values"].size() == static_cast<size_t>(objectives));
    CHECK(t["values"][0].get<double>() >= previous);
    previous = t["values"][0].get<double>();
    CHECK(t["params"].contains("lora_r"));
    CHECK(t["params"]["lora_r"].get<int>() <= 50);  // feasible: peak_mem_gb = 6 + 0.08 r <= 10
  }
  CHECK(got == expected);
  Output table = Sh(Tune("best --db " + Quote(cut)));
  CHECK(table.code == 0);
  CHECK_THAT(table.out, Catch::Contains("the Pareto front, " + std::to_string(expected.size()) + " of " +
                                        std::to_string(points.size()) + " feasible completed trials"));
  CHECK_THAT(table.out, Catch::Contains("hypervolume "));
  CHECK_THAT(table.out, Catch::Contains("adapter_mb (min)"));
}

}  // namespace

TEST_CASE("two objectives with a constraint, TPE and ASHA on eval_loss: run, SIGKILL, resume, the front",
          "[e2e][multi-objective]") {
  TempDir dir;
  CheckRunKillResume(dir.path, 2, "tpe", 727271);
}

TEST_CASE("three objectives with a constraint, NSGA-II: run, SIGKILL, resume, the front", "[e2e][multi-objective]") {
  TempDir dir;
  CheckRunKillResume(dir.path, 3, "nsga2", 727272);
}

TEST_CASE("a completed trial that never reported an objective fails naming it, and trials and importance per objective",
          "[e2e][multi-objective]") {
  TempDir dir;
  json spec = MultiSpec("mo-missing", 2, "random", 727273);
  spec["limits"]["max_trials"] = 6;
  // Without --costs: no adapter_mb, no peak_mem_gb.
  json no_costs = spec;
  no_costs["name"] = "mo-missing-costs";
  no_costs["trial"]["command"].erase(no_costs["trial"]["command"].size() - 1);
  no_costs["limits"]["max_trials"] = 2;
  const std::string db = (dir.path / "t.db").string();
  Output missing = Sh(Tune("run " + Quote(Write(dir.path, no_costs)) + " --db " + Quote(db) + " --quiet"));
  INFO(missing.out);
  Output failed = Sh(Tune("trials --db " + Quote(db) + " --experiment mo-missing-costs --format json"));
  REQUIRE(failed.code == 0);
  for (const json& t : json::parse(failed.out)) {
    CHECK(t["state"] == "failed");
    // ASHA ended it at max_t: it completed, but without every objective.
    CHECK(t["message"] == "reached max_t but never reported the objective metric 'adapter_mb'");
  }

  Output run = Sh(Tune("run " + Quote(Write(dir.path, spec)) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  Output trials = Sh(Tune("trials --db " + Quote(db) + " --experiment mo-missing --format json --sort adapter_mb"));
  REQUIRE(trials.code == 0);
  double previous = -INFINITY;
  for (const json& t : json::parse(trials.out)) {
    if (t["state"] != "completed") continue;
    REQUIRE(t["values"].size() == 2);
    REQUIRE(t["constraints"].size() == 1);
    const double r = t["params"]["lora_r"].get<double>();
    CHECK(t["values"][1].get<double>() == Approx(0.25 * r));
    CHECK(t["constraints"][0].get<double>() == Approx(6 + 0.08 * r - 10));
    CHECK(t["feasible"] == (6 + 0.08 * r <= 10));
    CHECK(t["values"][1].get<double>() >= previous);  // sorted by adapter_mb
    previous = t["values"][1].get<double>();
  }
  Output table = Sh(Tune("trials --db " + Quote(db) + " --experiment mo-missing"));
  CHECK_THAT(table.out, Catch::Contains("eval_loss") && Catch::Contains("adapter_mb") && Catch::Contains("feasible"));
  Output bad_sort = Sh(Tune("trials --db " + Quote(db) + " --experiment mo-missing --sort tokens"));
  CHECK(bad_sort.code == 2);
  CHECK_THAT(bad_sort.out, Catch::Contains("--sort: expected number, value or an objective's metric (eval_loss, "
                                           "adapter_mb), got 'tokens'"));
  Output importance =
      Sh(Tune("importance --db " + Quote(db) + " --experiment mo-missing --objective adapter_mb --format json"));
  INFO(importance.out);
  REQUIRE(importance.code == 0);
  CHECK(json::parse(importance.out)["metric"] == "adapter_mb");
  Output bad_objective = Sh(Tune("importance --db " + Quote(db) + " --experiment mo-missing --objective nope"));
  CHECK(bad_objective.code == 2);
  CHECK_THAT(bad_objective.out, Catch::Contains("--objective: expected the metric of an objective"));
}
