// The dashboard's JSON API on a PostgreSQL database (dashboard_api_test.cc's
// main cases, on the other engine): a real `tune run --db postgresql://...`,
// a real `tune dashboard` on the same URL (a read-only session), and its
// answers compared with what the server itself holds, read with psql. Then
// the entity tags: an unchanged database answers 304, a commit by another
// connection a new tag; and PBT's lineage with a report after max_t, written
// through the storage API. The server is a throwaway one
// (tests/storage/postgres_server.h); without one the cases are skipped with
// a warning.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <map>
#include <regex>

#include "storage/open_storage.h"
#include "storage/postgres_storage.h"
#include "tests/common/in_dir.h"
#include "tests/dashboard/dashboard_fetch.h"
#include "tests/dashboard/dashboard_util.h"
#include "tests/dashboard/pbt_fixture.h"
#include "tests/storage/storage_under_test.h"

namespace {

using namespace tune::dashboard_test;
using tune::testing::InDir;
using tune::testing::PostgresServer;

PostgresServer& Server() { return tune::testing::SharedPostgresServer(); }

// A new empty database `name` and its URL, or "" (skipped, with a warning).
std::string NewDatabase(const std::string& name) { return tune::testing::NewPostgresDatabase(name); }

// What `sql` (a SELECT of rows) answers, as a JSON array of row objects.
json Rows(const std::string& db, const std::string& sql) {
  const std::string out = Server().Psql(db, "SELECT coalesce(json_agg(x), '[]') FROM (" + sql + ") x");
  INFO(sql << ": " << out);
  return json::parse(out);
}

json NullOr(const json& v) { return v.is_null() ? json(nullptr) : v; }

// Everything in the experiment's tables, for "nothing was written".
std::string Fingerprint(const std::string& db) {
  return Server().Psql(db,
                       "SELECT md5(coalesce((SELECT string_agg(t::text, ',' ORDER BY id) FROM trials t), '') || "
                       "coalesce((SELECT string_agg(r::text, ',' ORDER BY id) FROM reports r), '') || "
                       "coalesce((SELECT string_agg(e::text, ',' ORDER BY id) FROM experiments e), ''))");
}

}  // namespace

TEST_CASE("dashboard API on PostgreSQL: every document equals what the database holds, nothing is written, "
          "and a commit changes the entity tag",
          "[dashboard][postgres]") {
  const std::string name = "tune_dash_api";
  const std::string url = NewDatabase(name);
  if (url.empty()) return;
  TempDir dir;
  InDir in(dir.path);
  // One trial at a time: ASHA's decisions do not depend on the load.
  json asha = AshaSpec("dash-pg", 10, 2);
  asha["limits"]["max_concurrent_trials"] = 1;
  fs::path spec = WriteSpec(dir.path, asha);
  Output run = Sh(Tune("run " + Quote(spec.string()) + " --db " + Quote(url) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  const std::string before = Fingerprint(name);
  INFO(before);
  REQUIRE(before.size() == 33);  // an md5 and its newline

  Dashboard dash(url, dir.path / "dash.log");
  Fetched list = Get(dash.port(), "/api/experiments");
  REQUIRE(list.status == 200);
  REQUIRE(list.body.size() == 1);
  CHECK(list.body[0]["name"] == "dash-pg");
  CHECK(list.body[0]["state"] == Rows(name, "SELECT state FROM experiments")[0]["state"]);
  CHECK(list.body[0]["trials"] == 10);
  int counted = 0;
  for (const json& c : Rows(name, "SELECT state, count(*) AS n FROM trials GROUP BY state")) {
    CHECK(list.body[0]["counts"][c["state"].get<std::string>()] == c["n"]);
    counted += c["n"].get<int>();
  }
  CHECK(counted == 10);
  json best = Rows(name, "SELECT number, value FROM trials WHERE state = 'completed' ORDER BY value, number LIMIT 1");
  REQUIRE(best.size() == 1);
  CHECK(list.body[0]["best"]["number"] == best[0]["number"]);
  CHECK(list.body[0]["best"]["value"] == best[0]["value"]);

  Fetched exp = Get(dash.port(), "/api/experiment?name=dash-pg");
  REQUIRE(exp.status == 200);
  const json& doc = exp.body;
  CHECK(doc["scheduler"]["type"] == "asha");
  CHECK(doc["scheduler"]["milestones"] == json::parse("[[5.0, 15.0]]"));
  REQUIRE(doc["parameters"].size() == 3);
  CHECK(doc["parameters"][2]["choices"][1] == kHostile);
  INFO(doc["importance"].dump());
  CHECK(doc["importance"].value("method", "") == "ped-anova");

  // Every trial row, field by field.
  json trials = Rows(name,
                     "SELECT number, state, value, params_json, attempt, last_step, pruned_rung, message FROM trials "
                     "ORDER BY number");
  REQUIRE(trials.size() == doc["trial_rows"].size());
  int pruned = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    const json& row = doc["trial_rows"][i];
    const json& t = trials[i];
    INFO("trial " << row.dump() << "\nin the database " << t.dump());
    CHECK(row["number"] == t["number"]);
    CHECK(row["state"] == t["state"]);
    CHECK(row["value"] == NullOr(t["value"]));
    CHECK(row["params"] == json::parse(t["params_json"].get<std::string>()));
    CHECK(row["attempts"] == t["attempt"].get<int>() + 1);
    CHECK(row["last_step"] == NullOr(t["last_step"]));
    CHECK(row["pruned_rung"] == NullOr(t["pruned_rung"]));
    CHECK(row["message"] == t["message"]);
    if (row["state"] == "pruned") ++pruned;
  }
  CHECK(pruned > 0);

  // Curves: the counted objective reports of the current attempt.
  std::map<std::string, json> expected;
  for (const json& p : Rows(name,
                            "SELECT trial_number, step, value FROM observation_logs WHERE metric = 'eval_loss' AND "
                            "is_current AND excluded IS NULL ORDER BY trial_number, step")) {
    expected[std::to_string(p["trial_number"].get<int>())].push_back({p["step"], p["value"]});
  }
  CHECK(json(expected) == doc["curves"]);

  // One trial: every report with every metric, and its log's tail from
  // ./tune_runs (where a URL's trial directories go).
  Fetched trial = Get(dash.port(), "/api/trial?experiment=dash-pg&number=3");
  REQUIRE(trial.status == 200);
  std::map<int64_t, json> by_report;
  for (const json& m : Rows(name,
                            "SELECT r.id, m.name, m.value FROM reports r JOIN trials t ON t.id = r.trial_id JOIN "
                            "metrics m ON m.report_id = r.id WHERE t.number = 3 ORDER BY r.id, m.name")) {
    by_report[m["id"].get<int64_t>()][m["name"].get<std::string>()] = m["value"];
  }
  REQUIRE(trial.body["reports"].size() == by_report.size());
  for (const json& r : trial.body["reports"]) CHECK(r["metrics"] == by_report[r["seq"].get<int64_t>()]);
  REQUIRE(trial.body["logs"].size() == 1);
  CHECK(trial.body["logs"][0]["file"] == "trial_0003/rank_0.log");
  REQUIRE_FALSE(trial.body["logs"][0]["lines"].empty());
  CHECK(trial.body["logs"][0]["lines"][0].get<std::string>().rfind("synthetic_trial:", 0) == 0);

  // Errors: unknown names are 404, malformed numbers 400.
  CHECK(Get(dash.port(), "/api/experiment?name=nope").status == 404);
  CHECK(Get(dash.port(), "/api/trial?experiment=dash-pg&number=99").status == 404);
  CHECK(Get(dash.port(), "/api/trial?experiment=dash-pg").status == 400);

  // The dashboard wrote nothing.
  CHECK(Fingerprint(name) == before);

  // Entity tags: the same database answers 304; a commit by another
  // connection (PostgreSQL's data version row) a new document and tag.
  for (const std::string path : {"/api/experiments", "/api/experiment?name=dash-pg"}) {
    INFO(path);
    Fetched first = Get(dash.port(), path);
    REQUIRE(!first.etag.empty());
    CHECK(Get(dash.port(), path, {{"If-None-Match", first.etag}}).status == 304);
    {
      auto writer = tune::OpenStorage(url);
      REQUIRE(writer.ok());
      auto e = (*writer)->FindExperiment("dash-pg");
      REQUIRE(e.ok());
      REQUIRE((*writer)->SetExperimentRunSeconds(e->id, e->run_seconds + 100).ok());
    }
    Fetched changed = Get(dash.port(), path, {{"If-None-Match", first.etag}});
    CHECK(changed.status == 200);
    CHECK(changed.etag != first.etag);
    const json& b = first.body.is_array() ? first.body[0] : first.body;
    const json& a = changed.body.is_array() ? changed.body[0] : changed.body;
    CHECK(a["run_seconds"].get<double>() == Approx(b["run_seconds"].get<double>() + 100));
  }
  CHECK(dash.child().Stop() == 128 + SIGTERM);
}

TEST_CASE("dashboard API on PostgreSQL: PBT's lineage and schedules, and a report after max_t left out of the curve",
          "[dashboard][postgres]") {
  const std::string url = NewDatabase("tune_dash_pbt");
  if (url.empty()) return;
  TempDir dir;
  InDir in(dir.path);
  {
    auto storage = std::move(tune::OpenStorage(url)).value();
    SeedPbtExperiment(*storage, /*late_report=*/true);
  }
  Dashboard dash(url, dir.path / "dash.log");
  CheckPbtExperimentDocuments(dash.port(), /*late_report=*/true);
}
