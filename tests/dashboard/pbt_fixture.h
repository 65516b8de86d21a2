// The PBT experiment both dashboard API tests (SQLite and PostgreSQL) write
// straight into storage, and the documents the dashboard must serve for it.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "storage/storage.h"
#include "tests/dashboard/dashboard_fetch.h"
#include "tests/dashboard/dashboard_util.h"

namespace tune::dashboard_test {

// A PBT experiment "pbt" written straight into `storage`: trial 0 (lr 0.01)
// reports 2.0 at step 10, is paused and exploits trial 1 (lr 0.02, 1.0 at
// step 10) at step 10, taking lr 0.024; its attempt 1 reports 0.5 at step
// 20 and completes; trial 1 stays paused. With `late_report`, trial 0 also
// has a report at step 35 marked "after max_t".
inline void SeedPbtExperiment(tune::Storage& storage, bool late_report) {
  const tune::ExperimentId e = *storage.CreateExperiment("pbt", AshaSpec("pbt", 2, 0).dump(), 1);
  auto add = [&](double lr) {
    return storage.CreateTrial(e, {{"lr", lr}, {"lora_r", int64_t{4}}, {"optimizer", std::string("adamw")}})->id;
  };
  const tune::TrialId t0 = add(0.01), t1 = add(0.02);
  auto report = [&](tune::TrialId t, int attempt, int64_t step, double v) {
    tune::MetricReport r;
    r.step = step;
    r.values = {{"eval_loss", v}};
    REQUIRE(storage.AppendReport(t, attempt, r, v).ok());
  };
  REQUIRE(storage.StartTrial(t0, 0, "local:pgid 1").ok());
  REQUIRE(storage.StartTrial(t1, 0, "local:pgid 2").ok());
  report(t0, 0, 10, 2.0);
  report(t1, 0, 10, 1.0);
  REQUIRE(storage.PauseTrial(t0, "exploit").ok());
  REQUIRE(storage.RecordExploit(t0, 10, t1, 10,
                                {{"lr", 0.024}, {"lora_r", int64_t{4}}, {"optimizer", std::string("adamw")}})
              .ok());
  REQUIRE(storage.ContinueTrial(t0, 1, "local:pgid 3", 10).ok());
  report(t0, 1, 20, 0.5);
  if (late_report) {
    tune::MetricReport late;
    late.step = 35;
    late.values = {{"eval_loss", 0.1}};
    REQUIRE(storage.AppendExcludedReport(t0, 1, late, 0.1, "after max_t").ok());
  }
  REQUIRE(storage.FinishTrial(t0, tune::TrialState::kCompleted, 0.5, std::nullopt, "").ok());
  REQUIRE(storage.PauseTrial(t1, "waiting").ok());
}

// What `tune dashboard` on port `port` must answer for SeedPbtExperiment's
// rows (the same `late_report`), on either engine.
inline void CheckPbtExperimentDocuments(int port, bool late_report) {
  Fetched exp = Get(port, "/api/experiment?name=pbt");
  REQUIRE(exp.status == 200);
  CHECK(exp.body["counts"]["paused"] == 1);
  REQUIRE(exp.body["lineage"].size() == 1);
  const json& x = exp.body["lineage"][0];
  CHECK(x["trial"] == 0);
  CHECK(x["at_step"] == 10);
  CHECK(x["donor"] == 1);
  CHECK(x["donor_step"] == 10);
  CHECK(x["before"]["lr"] == 0.01);
  CHECK(x["after"]["lr"] == 0.024);
  CHECK(x["after"]["lora_r"].is_number_integer());
  REQUIRE(exp.body["best_schedule"].size() == 2);  // trial 0 is the best
  CHECK(exp.body["best_schedule"][1]["donor"] == 1);
  // The carried report (step 10) and the new one make the curve; a report
  // after max_t never counts.
  CHECK(exp.body["curves"]["0"] == json::parse("[[10, 2.0], [20, 0.5]]"));
  CHECK(exp.body["trial_rows"][0]["value"] == 0.5);
  Fetched trial = Get(port, "/api/trial?experiment=pbt&number=0");
  REQUIRE(trial.status == 200);
  const json& s = trial.body["schedule"];
  REQUIRE(s.size() == 2);
  CHECK(s[0] == json::parse(R"({"step": 0, "params": {"lora_r": 4, "lr": 0.01, "optimizer": "adamw"},
                                "donor": null, "donor_step": null, "at_step": null})"));
  CHECK(s[1]["step"] == 10);
  CHECK(s[1]["params"]["lr"] == 0.024);
  CHECK(s[1]["donor"] == 1);
  CHECK(s[1]["donor_step"] == 10);
  CHECK(s[1]["at_step"] == 10);
  CHECK(trial.body["failed_attempts"] == 0);
  // 10, its copy, 20, and with late_report 35 marked.
  REQUIRE(trial.body["reports"].size() == (late_report ? 4u : 3u));
  CHECK(trial.body["reports"][2]["excluded"].is_null());
  if (late_report) {
    CHECK(trial.body["reports"][3]["step"] == 35);
    CHECK(trial.body["reports"][3]["excluded"] == "after max_t");
  }
  CHECK(trial.body["logs"][0]["missing"] == true);  // this trial never ran: no directory
  Fetched other = Get(port, "/api/trial?experiment=pbt&number=1");
  CHECK(other.body["state"] == "paused");
  CHECK(other.body["schedule"].size() == 1);
}

}  // namespace tune::dashboard_test
