// The dashboard's JSON API against the database a real `tune run` wrote:
// a real `tune dashboard` process, fetched with cpp-httplib's client, its
// answers compared with what SQLite itself holds.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zlib.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "dashboard/http_gzip.h"
#include "dashboard/report_page.h"
#include "storage/storage.h"
#include "tests/dashboard/dashboard_fetch.h"
#include "tests/dashboard/dashboard_util.h"
#include "tests/dashboard/pbt_fixture.h"

namespace {

using namespace tune::dashboard_test;

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// GET over a bare socket, with exactly the request headers `extra` (each
// "Name: value\r\n"): {response head, body}. HTTP/1.1, Connection: close.
std::pair<std::string, std::string> RawGet(int port, const std::string& path, const std::string& extra) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nConnection: close\r\n" + extra + "\r\n";
    if (send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buf[65536];
      for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  const size_t end = response.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  return {response.substr(0, end + 2), response.substr(end + 4)};
}

// A gzip body inflated with zlib; fails the test if it is not one whole gzip stream.
std::string Gunzip(const std::string& data) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
  std::string out;
  char buf[65536];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  const uInt left = z.avail_in;
  inflateEnd(&z);
  CHECK(rc == Z_STREAM_END);
  CHECK(left == 0);
  return out;
}

json NumOrNull(const SQLite::Column& c) { return c.isNull() ? json(nullptr) : json(c.getDouble()); }

// One finished ASHA experiment shared by the cases of this file.
struct Experiment {
  TempDir dir;
  std::string db;
  Experiment() {
    // One trial at a time: ASHA's decisions, and so how many trials
    // complete (importances need 2), do not depend on the machine's load.
    json asha = AshaSpec("dash-api", 10, 2);
    asha["limits"]["max_concurrent_trials"] = 1;
    fs::path spec = WriteSpec(dir.path, asha);
    db = (dir.path / "results.db").string();
    Output run = Sh(Tune("run " + Quote(spec.string()) + " --db " + Quote(db) + " --quiet"));
    INFO(run.out);
    REQUIRE(run.code == 0);
  }
};

}  // namespace

TEST_CASE("dashboard API: every document equals what the database holds, and the file is left unchanged",
          "[dashboard]") {
  Experiment e;
  const std::string before = ReadAll(e.db);
  Dashboard dash(e.db, e.dir.path / "dash.log");
  SQLite::Database db(e.db, SQLite::OPEN_READONLY);

  Fetched list = Get(dash.port(), "/api/experiments");
  REQUIRE(list.status == 200);
  REQUIRE(list.body.size() == 1);
  CHECK(list.body[0]["name"] == "dash-api");
  CHECK(list.body[0]["state"] == db.execAndGet("SELECT state FROM experiments").getString());
  CHECK(list.body[0]["trials"] == 10);
  {
    SQLite::Statement q(db, "SELECT state, count(*) FROM trials GROUP BY state");
    int counted = 0;
    while (q.executeStep()) {
      CHECK(list.body[0]["counts"][q.getColumn(0).getString()] == q.getColumn(1).getInt());
      counted += q.getColumn(1).getInt();
    }
    CHECK(counted == 10);
    SQLite::Statement best(db, "SELECT number, value FROM trials WHERE state = 'completed' ORDER BY value, number LIMIT 1");
    REQUIRE(best.executeStep());
    CHECK(list.body[0]["best"]["number"] == best.getColumn(0).getInt());
    CHECK(list.body[0]["best"]["value"].get<double>() == best.getColumn(1).getDouble());
  }

  Fetched exp = Get(dash.port(), "/api/experiment?name=dash-api");
  REQUIRE(exp.status == 200);
  const json& doc = exp.body;
  CHECK(doc["scheduler"]["type"] == "asha");
  // Ray's milestones for max_t 30, grace 5, rf 3: 5 and 15.
  CHECK(doc["scheduler"]["milestones"] == json::parse("[[5.0, 15.0]]"));
  REQUIRE(doc["parameters"].size() == 3);
  CHECK(doc["parameters"][2]["choices"][1] == kHostile);
  INFO(doc["importance"].dump());
  CHECK(doc["importance"].value("method", "") == "ped-anova");

  // Every trial row, field by field.
  SQLite::Statement trials(db,
                           "SELECT number, state, value, params_json, attempt, started_at, last_step, pruned_rung, "
                           "message FROM trials ORDER BY number");
  size_t i = 0;
  int pruned = 0;
  while (trials.executeStep()) {
    REQUIRE(i < doc["trial_rows"].size());
    const json& row = doc["trial_rows"][i++];
    INFO("trial " << row.dump());
    CHECK(row["number"] == trials.getColumn(0).getInt());
    CHECK(row["state"] == trials.getColumn(1).getString());
    CHECK(row["value"] == NumOrNull(trials.getColumn(2)));
    CHECK(row["params"] == json::parse(trials.getColumn(3).getString()));
    CHECK(row["attempts"] == trials.getColumn(4).getInt() + 1);
    CHECK(row["last_step"] == (trials.getColumn(6).isNull() ? json(nullptr) : json(trials.getColumn(6).getInt64())));
    CHECK(row["pruned_rung"] ==
          (trials.getColumn(7).isNull() ? json(nullptr) : json(trials.getColumn(7).getInt64())));
    CHECK(row["message"] == trials.getColumn(8).getString());
    if (row["state"] == "pruned") ++pruned;
  }
  CHECK(i == doc["trial_rows"].size());
  CHECK(pruned > 0);  // the seed prunes some: the rung markers are exercised

  // Curves: the counted objective reports of the current attempt; a pruned
  // trial's curve ends at its rung.
  SQLite::Statement curve(db,
                          "SELECT trial_number, step, value FROM observation_logs "
                          "WHERE metric = 'eval_loss' AND is_current AND excluded IS NULL "
                          "ORDER BY trial_number, step");
  std::map<std::string, json> expected;
  while (curve.executeStep()) {
    expected[std::to_string(curve.getColumn(0).getInt())].push_back(
        {curve.getColumn(1).getInt64(), curve.getColumn(2).getDouble()});
  }
  CHECK(json(expected) == doc["curves"]);
  for (const json& row : doc["trial_rows"]) {
    if (row["state"] != "pruned") continue;
    CHECK(doc["curves"][std::to_string(row["number"].get<int>())].back()[0] == row["pruned_rung"]);
  }

  // One trial: every report with every metric, and its log's tail.
  Fetched trial = Get(dash.port(), "/api/trial?experiment=dash-api&number=3");
  REQUIRE(trial.status == 200);
  SQLite::Statement reports(db,
                            "SELECT r.id, r.step, m.name, m.value FROM reports r JOIN trials t ON t.id = r.trial_id "
                            "JOIN metrics m ON m.report_id = r.id WHERE t.number = 3 ORDER BY r.id, m.name");
  std::map<int64_t, json> by_report;
  while (reports.executeStep()) {
    by_report[reports.getColumn(0).getInt64()][reports.getColumn(2).getString()] = reports.getColumn(3).getDouble();
  }
  REQUIRE(trial.body["reports"].size() == by_report.size());
  for (const json& r : trial.body["reports"]) CHECK(r["metrics"] == by_report[r["seq"].get<int64_t>()]);
  // No PBT: a schedule of one entry, the trial's parameters from step 0, no lineage.
  REQUIRE(trial.body["schedule"].size() == 1);
  CHECK(trial.body["schedule"][0]["step"] == 0);
  CHECK(trial.body["schedule"][0]["params"] == trial.body["params"]);
  CHECK(trial.body["schedule"][0]["donor"].is_null());
  CHECK(doc["lineage"] == json::array());
  REQUIRE(doc["best_schedule"].size() == 1);
  CHECK(doc["best_schedule"][0]["params"] == doc["trial_rows"][doc["best"]["number"].get<int>()]["params"]);
  REQUIRE(trial.body["logs"].size() == 1);
  CHECK(trial.body["logs"][0]["file"] == "trial_0003/rank_0.log");
  REQUIRE_FALSE(trial.body["logs"][0]["lines"].empty());
  CHECK(trial.body["logs"][0]["lines"][0].get<std::string>().rfind("synthetic_trial:", 0) == 0);

  // Errors: unknown names are 404, malformed numbers 400, both as JSON.
  CHECK(Get(dash.port(), "/api/experiment?name=nope").status == 404);
  CHECK(Get(dash.port(), "/api/trial?experiment=dash-api&number=99").status == 404);
  CHECK(Get(dash.port(), "/api/trial?experiment=dash-api&number=..%2F..%2Fetc").status == 400);
  CHECK(Get(dash.port(), "/api/trial?experiment=dash-api").status == 400);
  CHECK(Get(dash.port(), "/../results.db").status == 404);

  // The page and its scripts come from the binary.
  httplib::Client client("127.0.0.1", dash.port());
  auto page = client.Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("<script src=\"dashboard.js\"></script>") != std::string::npos);
  auto chart = client.Get("/chart.min.js");
  REQUIRE(chart);
  CHECK(chart->body.find("Chart.js v3") != std::string::npos);

  CHECK(dash.child().Stop() == 128 + SIGTERM);
  CHECK(ReadAll(e.db) == before);
}

TEST_CASE("dashboard: a port in use, a missing or a corrupt database is one sentence and exit code 2",
          "[dashboard]") {
  Experiment e;
  Dashboard first(e.db, e.dir.path / "first.log");
  Output busy = Sh(Tune("dashboard --db " + Quote(e.db) + " --port " + std::to_string(first.port())));
  CHECK(busy.code == 2);
  CHECK(busy.out == "tune: cannot listen on 127.0.0.1:" + std::to_string(first.port()) +
                        ": the port is in use (pick another with --port)\n");

  Output missing = Sh(Tune("dashboard --port 0 --db " + Quote((e.dir.path / "none.db").string())));
  CHECK(missing.code == 2);
  CHECK(missing.out.find("none.db: no results database here") != std::string::npos);
  CHECK_FALSE(fs::exists(e.dir.path / "none.db"));

  fs::path corrupt = e.dir.path / "corrupt.db";
  std::ofstream(corrupt) << "this is not a database";
  Output bad = Sh(Tune("dashboard --port 0 --db " + Quote(corrupt.string())));
  CHECK(bad.code == 2);
  CHECK(bad.out == "tune: " + corrupt.string() + ": is not an SQLite database\n");

  Output report = Sh(Tune("report --db " + Quote(corrupt.string()) + " --out " +
                          Quote((e.dir.path / "r.html").string())));
  CHECK(report.code == 2);
  CHECK_FALSE(fs::exists(e.dir.path / "r.html"));
}

TEST_CASE("ScriptSafe: nothing inlined into a script element can close it", "[dashboard]") {
  CHECK(tune::ScriptSafe("{\"v\":\"</script><img src=x>\"}") == "{\"v\":\"<\\/script><img src=x>\"}");
  CHECK(tune::ScriptSafe("a<!--b</</") == "a<\\!--b<\\/<\\/");
  CHECK(tune::ScriptSafe("a < b / c") == "a < b / c");
}

TEST_CASE("dashboard API: a report after max_t is marked in the trial and left out of its curve", "[dashboard]") {
  TempDir dir;
  const std::string db = (dir.path / "results.db").string();
  {
    auto storage = tune::OpenSqliteStorage(db);
    REQUIRE(storage.ok());
    auto e = (*storage)->CreateExperiment("excluded", AshaSpec("excluded", 1, 0).dump(), 1);
    REQUIRE(e.ok());
    auto t = (*storage)->CreateTrial(*e, {{"lr", 0.01}, {"lora_r", int64_t{4}}, {"optimizer", std::string("adamw")}});
    REQUIRE(t.ok());
    REQUIRE((*storage)->StartTrial(t->id, 0, "local:pgid 1").ok());
    for (int64_t step : {10, 30}) {
      tune::MetricReport r;
      r.step = step;
      r.values = {{"eval_loss", 3.0 - step / 100.0}};
      r.time = 1.7e9 + static_cast<double>(step);
      REQUIRE((*storage)->AppendReport(t->id, 0, r, r.values["eval_loss"]).ok());
    }
    tune::MetricReport late;
    late.step = 35;
    late.values = {{"eval_loss", 1.0}};
    late.time = 1.7e9 + 35;
    REQUIRE((*storage)->AppendExcludedReport(t->id, 0, late, 1.0, "after max_t").ok());
    REQUIRE((*storage)->FinishTrial(t->id, tune::TrialState::kCompleted, std::nullopt, std::nullopt, "reached max_t").ok());
  }
  Dashboard dash(db, dir.path / "dash.log");
  Fetched exp = Get(dash.port(), "/api/experiment?name=excluded");
  REQUIRE(exp.status == 200);
  CHECK(exp.body["curves"]["0"] == json::parse("[[10, 2.9], [30, 2.7]]"));
  CHECK(exp.body["trial_rows"][0]["value"] == 2.7);  // the late 1.0 never counts
  Fetched trial = Get(dash.port(), "/api/trial?experiment=excluded&number=0");
  REQUIRE(trial.status == 200);
  REQUIRE(trial.body["reports"].size() == 3);
  CHECK(trial.body["reports"][0]["excluded"].is_null());
  CHECK(trial.body["reports"][2]["step"] == 35);
  CHECK(trial.body["reports"][2]["excluded"] == "after max_t");
  CHECK(trial.body["logs"][0]["missing"] == true);  // this trial never ran: no directory
}

TEST_CASE("dashboard API: PBT exploits give each trial its schedule and the experiment its lineage", "[dashboard]") {
  TempDir dir;
  const std::string db = (dir.path / "results.db").string();
  {
    auto storage = std::move(tune::OpenSqliteStorage(db)).value();
    SeedPbtExperiment(*storage, /*late_report=*/false);
  }
  Dashboard dash(db, dir.path / "dash.log");
  CheckPbtExperimentDocuments(dash.port(), /*late_report=*/false);
}

TEST_CASE("AcceptsGzip reads Accept-Encoding's codings and weights", "[dashboard]") {
  for (const char* yes : {"gzip", "GZip", "x-gzip", "gzip, deflate, br, zstd", "br;q=1.0, gzip;q=0.8", " deflate , gzip ;q=0.5",
                          "*", "br, *;q=0.1", "gzip;q=1"}) {
    INFO(yes);
    CHECK(tune::AcceptsGzip(yes));
  }
  for (const char* no : {"", "br", "identity", "deflate, br", "gzip;q=0", "gzip; q=0.000", "*;q=0", "*, gzip;q=0",
                         "gzip;q=abc", "gzip;q=2", "gzipx", "x-gzip;q=0, br"}) {
    INFO(no);
    CHECK_FALSE(tune::AcceptsGzip(no));
  }
}

TEST_CASE("dashboard: a client that asks for gzip gets the API and scripts compressed, one that does not gets them plain",
          "[dashboard]") {
  Experiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log");
  for (const std::string path : {"/api/experiments", "/api/experiment?name=dash-api", "/api/trial?experiment=dash-api&number=0",
                                 "/api/experiment?name=none", "/api/trial?experiment=dash-api", "/dashboard.js",
                                 "/chart.min.js"}) {
    INFO(path);
    auto [plain_head, plain] = RawGet(dash.port(), path, "");
    CHECK(plain_head.find("Content-Encoding") == std::string::npos);
    CHECK(plain_head.find("Vary: Accept-Encoding\r\n") != std::string::npos);
    CHECK(plain.size() > 10);
    if (path.rfind("/api/", 0) == 0) CHECK_NOTHROW(json::parse(plain));
    // What Chromium sends: gzip, not Brotli (see dashboard/http_gzip.h).
    for (const std::string accept : {"gzip", "gzip, deflate, br, zstd"}) {
      auto [head, body] = RawGet(dash.port(), path, "Accept-Encoding: " + accept + "\r\n");
      INFO(accept << "\n" << head);
      CHECK(head.find("Content-Encoding: gzip\r\n") != std::string::npos);
      CHECK(head.find("Content-Length: " + std::to_string(body.size()) + "\r\n") != std::string::npos);
      REQUIRE(body.size() >= 2);
      CHECK(static_cast<unsigned char>(body[0]) == 0x1f);  // gzip magic
      CHECK(static_cast<unsigned char>(body[1]) == 0x8b);
      CHECK(Gunzip(body) == plain);
    }
    // Refused by weight: plain.
    auto [refused_head, refused] = RawGet(dash.port(), path, "Accept-Encoding: gzip;q=0, br;q=0\r\n");
    CHECK(refused_head.find("Content-Encoding") == std::string::npos);
    CHECK(refused == plain);
  }
  // cpp-httplib's client too (it inflates what it asked for).
  httplib::Client client("127.0.0.1", dash.port());
  client.set_decompress(true);
  auto res = client.Get("/api/experiment?name=dash-api", {{"Accept-Encoding", "gzip"}});
  REQUIRE(res);
  CHECK(res->get_header_value("Content-Encoding") == "gzip");
  CHECK(json::parse(res->body) == json::parse(RawGet(dash.port(), "/api/experiment?name=dash-api", "").second));
}

TEST_CASE("GzipCompress writes one gzip stream that zlib inflates back", "[dashboard]") {
  std::string big;
  for (int i = 0; i < 30000; ++i) big += "{\"step\": " + std::to_string(i) + ", \"v\": " + std::to_string(i * 0.37) + "},";
  for (const std::string& data : {std::string(), std::string("x"), big}) {
    for (int level : {1, 2, 9}) {
      const std::string z = tune::GzipCompress(data, level);
      CHECK(Gunzip(z) == data);
      if (data.size() > 1000) CHECK(z.size() < data.size() / 3);
    }
  }
}

TEST_CASE("dashboard: the database's answers carry an entity tag: an unchanged database answers 304, a write a new one",
          "[dashboard]") {
  Experiment e;
  Dashboard dash(e.db, e.dir.path / "dash.log");
  for (const std::string path : {"/api/experiments", "/api/experiment?name=dash-api"}) {
    INFO(path);
    auto [head, body] = RawGet(dash.port(), path, "");
    static const std::regex kTag("\r\nETag: (\"[^\"]+\")\r\n");
    std::smatch m;
    REQUIRE(std::regex_search(head, m, kTag));
    const std::string tag = m[1];
    CHECK(head.find("Cache-Control: no-cache\r\n") != std::string::npos);
    // The same tag: 304, no body; also in a list and weak, with gzip asked for.
    for (const std::string& none_match : {tag, "\"other\", " + tag, "W/" + tag}) {
      auto [h304, b304] = RawGet(dash.port(), path, "If-None-Match: " + none_match + "\r\nAccept-Encoding: gzip\r\n");
      INFO(h304);
      CHECK(h304.rfind("HTTP/1.1 304", 0) == 0);
      CHECK(b304.empty());
    }
    auto [h200, b200] = RawGet(dash.port(), path, "If-None-Match: \"other\"\r\n");
    CHECK(h200.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(b200 == body);

    // Another process writes: the old tag gets the new answer, with a new tag.
    {
      auto writer = tune::OpenSqliteStorage(e.db);
      REQUIRE(writer.ok());
      auto exp = (*writer)->FindExperiment("dash-api");
      REQUIRE(exp.ok());
      REQUIRE((*writer)->SetExperimentRunSeconds(exp->id, exp->run_seconds + 100).ok());
    }
    auto [h_new, b_new] = RawGet(dash.port(), path, "If-None-Match: " + tag + "\r\n");
    INFO(h_new);
    CHECK(h_new.rfind("HTTP/1.1 200", 0) == 0);
    REQUIRE(std::regex_search(h_new, m, kTag));
    CHECK(m[1] != tag);
    json before = json::parse(body), after = json::parse(b_new);
    const json& b = before.is_array() ? before[0] : before;
    const json& a = after.is_array() ? after[0] : after;
    CHECK(a["run_seconds"].get<double>() == Approx(b["run_seconds"].get<double>() + 100));
  }
  // A trial's document also reads its log files: never tagged.
  auto [trial_head, trial_body] = RawGet(dash.port(), "/api/trial?experiment=dash-api&number=0", "");
  CHECK(trial_head.find("ETag") == std::string::npos);
  CHECK(trial_head.find("Cache-Control: no-store\r\n") != std::string::npos);
  // Errors are not tagged either.
  auto [missing_head, missing_body] = RawGet(dash.port(), "/api/experiment?name=none", "");
  CHECK(missing_head.rfind("HTTP/1.1 404", 0) == 0);
  CHECK(missing_head.find("ETag") == std::string::npos);
}
