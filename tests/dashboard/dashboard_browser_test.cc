// The dashboard page and a `tune report` file in headless Chromium, driven
// through the DevTools protocol (browser_check.py): no console error, the
// charts draw what the database holds, a hostile value stays text, and the
// page follows a running `tune run` without a reload. Screenshots go to
// the build's test-output/dashboard directory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "tests/dashboard/dashboard_util.h"

namespace {

using namespace tune::dashboard_test;

const fs::path kShots = TUNE_TEST_OUTPUT_DIR;

// Runs browser_check.py with `steps`; its JSON answer.
json Browse(const std::vector<std::string>& steps, double timeout = 60) {
  std::string cmd = Quote(TUNE_BROWSER_PYTHON) + " " +
                    Quote(std::string(TUNE_SOURCE_DIR) + "/tests/dashboard/browser_check.py") +
                    " --timeout " + std::to_string(timeout);
  for (const std::string& s : steps) cmd += " " + Quote(s);
  Output o = Sh(cmd);
  INFO(o.out);
  json out;
  REQUIRE_NOTHROW(out = json::parse(o.out));
  INFO(out.dump(2));
  CHECK(out["error"].is_null());
  CHECK(out["console_errors"].empty());
  CHECK(out["dialogs"].empty());  // alert(1) never ran
  return out;
}

// JS: points of the history chart's trial datasets in finished states.
const std::string kHistoryPoints =
    "tuneCharts.history.data.datasets.filter(d => ['completed','pruned','failed','stopped'].includes(d.tuneState))"
    ".reduce((a, d) => a + d.data.length, 0)";
// JS: [trial, last step drawn, stored rung, radius of the last point] of each pruned curve.
const std::string kPrunedEnds =
    "tuneCharts.curves.data.datasets.filter(d => d.tuneState === 'pruned')"
    ".map(d => [d.tuneTrial, d.data[d.data.length - 1].x, d.tunePrunedRung, d.pointRadius[d.pointRadius.length - 1]])";
// JS: table cells whose text is the hostile value, and <img> elements (none may exist).
const std::string kHostileCells =
    "Array.from(document.querySelectorAll('#trials td')).filter(td => td.textContent === " + json(kHostile).dump() +
    ").length";

// Finished trials, and pruned ones (number -> rung), from `tune trials`.
struct Expected {
  int finished = 0;
  std::map<int, int> pruned;
  int hostile = 0;
  int hostile_trial = -1;  // the first trial with the hostile value
};
Expected FromDb(const std::string& db, const std::string& name) {
  Output o = Sh(Tune("trials --db " + Quote(db) + " --experiment " + name + " --format json"));
  REQUIRE(o.code == 0);
  Expected e;
  for (const json& r : json::parse(o.out)) {
    std::string state = r["state"];
    if (state == "completed" || state == "pruned" || state == "failed" || state == "stopped") ++e.finished;
    if (state == "pruned") e.pruned[r["number"].get<int>()] = r["pruned_rung"].get<int>();
    if (r["params"]["optimizer"] == kHostile && e.hostile++ == 0) e.hostile_trial = r["number"].get<int>();
  }
  return e;
}

// JS: true once the page shows trial `number` with its log.
std::string OnTrialPage(int number) {
  return "document.querySelector('h2').textContent.endsWith(' trial " + std::to_string(number) +
         "') && document.querySelector('pre.log')";
}

void CheckViews(const json& v, const Expected& want) {
  CHECK(v["history"] == want.finished);
  std::map<int, int> drawn;
  for (const json& p : v["pruned"]) {
    CHECK(p[1] == p[2]);        // the curve ends at the rung it was stopped at
    CHECK(p[3].get<int>() > 0);  // with a marker
    drawn[p[0].get<int>()] = p[1].get<int>();
  }
  CHECK(drawn == want.pruned);
  CHECK(v["hostile_cells"] == want.hostile);
  CHECK(v["imgs"] == 0);
}

std::vector<std::string> ExperimentSteps(const std::string& url, const std::string& shot) {
  return {"goto:" + url,
          "wait:document.body.dataset.loaded >= 1 && window.tuneCharts.history",
          "eval:history=" + kHistoryPoints,
          "eval:pruned=" + kPrunedEnds,
          "eval:hostile_cells=" + kHostileCells,
          "eval:imgs=document.querySelectorAll('img').length",
          "shot:" + (kShots / shot).string()};
}

}  // namespace

TEST_CASE("dashboard in Chromium: every page loads clean and draws the database", "[dashboard][browser]") {
  fs::create_directories(kShots);
  TempDir dir;
  fs::path spec = WriteSpec(dir.path, AshaSpec("dash-browser", 10, 2));
  const std::string db = (dir.path / "results.db").string();
  Output run = Sh(Tune("run " + Quote(spec.string()) + " --db " + Quote(db) + " --quiet"));
  REQUIRE(run.code == 0);
  const Expected want = FromDb(db, "dash-browser");
  REQUIRE(want.pruned.size() > 0);
  REQUIRE(want.hostile > 0);

  Dashboard dash(db, dir.path / "dash.log");
  std::vector<std::string> steps = {
      "goto:" + dash.url(), "wait:document.querySelector('#experiments a')",
      "eval:name=document.querySelector('#experiments a').textContent",
      // The experiments table as {column: text} for its one row.
      "eval:row=Object.fromEntries(Array.from(document.querySelectorAll('#experiments th')).map((th, i) =>"
      " [th.textContent, document.querySelectorAll('#experiments tbody td')[i].textContent]))",
      "shot:" + (kShots / "dashboard-experiments.png").string()};
  for (const std::string& s : ExperimentSteps(dash.url() + "#/e/dash-browser", "dashboard-experiment.png"))
    steps.push_back(s);
  // Polls of a finished experiment: 304 from the server, nothing redrawn.
  for (const std::string& s : std::vector<std::string>{
           "eval:polls_before=(window.__drawn = tuneCharts.history.data, Number(document.body.dataset.loaded))",
           "wait:Number(document.body.dataset.loaded) >= 3",
           "eval:redrawn=tuneCharts.history.data !== window.__drawn",
           "eval:not_modified=performance.getEntriesByType('resource').filter(r => r.name.includes('api/experiment?') "
           "&& r.responseStatus === 304).length"})
    steps.push_back(s);
  // A trial with the hostile value: in its parameters and its log, as text.
  for (const std::string& s : std::vector<std::string>{
           "goto:" + dash.url() + "#/e/dash-browser/t/" + std::to_string(want.hostile_trial),
           "wait:" + OnTrialPage(want.hostile_trial) + " && document.querySelector('pre.log').textContent.includes('optimizer')",
           "eval:hostile_log=document.querySelector('pre.log').textContent",
           "eval:hostile_param=Array.from(document.querySelectorAll('#trial-params td')).map(td => td.textContent)",
           "eval:hostile_imgs=document.querySelectorAll('img').length"})
    steps.push_back(s);
  for (const std::string& s : std::vector<std::string>{
           "goto:" + dash.url() + "#/e/dash-browser/t/" + std::to_string(want.pruned.begin()->first),
           // This trial's page, not the one before it (the hash changes; the page is replaced a moment later).
           "wait:" + OnTrialPage(want.pruned.begin()->first) + " && window.tuneCharts['metric:eval_loss']",
           "eval:log=document.querySelector('pre.log').textContent",
           "eval:params=document.querySelector('#trial-params').textContent",
           "shot:" + (kShots / "dashboard-trial.png").string()})
    steps.push_back(s);
  json out = Browse(steps);
  const json& v = out["values"];
  CHECK(v["name"] == "dash-browser");
  CHECK(v["redrawn"] == false);
  CHECK(v["hostile_log"].get<std::string>().find("optimizer " + kHostile + "\n") != std::string::npos);
  CHECK(std::count(v["hostile_param"].begin(), v["hostile_param"].end(), json(kHostile)) == 1);
  CHECK(v["hostile_imgs"] == 0);
  CHECK(v["not_modified"].get<int>() >= 3 - v["polls_before"].get<int>());
  CHECK(v["not_modified"].get<int>() >= 1);
  // Every state has its count (from the same database).
  const json& row = v["row"];
  CHECK(row["trials"] == "10");
  CHECK(row["pruned"] == std::to_string(want.pruned.size()));
  CHECK(row["completed"] == std::to_string(want.finished - want.pruned.size()));
  for (const char* state : {"failed", "stopped", "running", "pending"}) CHECK(row[state] == "0");
  CheckViews(v, want);
  CHECK(v["log"].get<std::string>().rfind("synthetic_trial:", 0) == 0);
}

TEST_CASE("tune report in Chromium: one file, offline, the same views", "[dashboard][browser]") {
  fs::create_directories(kShots);
  TempDir dir;
  fs::path spec = WriteSpec(dir.path, AshaSpec("dash-report", 10, 2));
  const std::string db = (dir.path / "results.db").string();
  REQUIRE(Sh(Tune("run " + Quote(spec.string()) + " --db " + Quote(db) + " --quiet")).code == 0);
  const Expected want = FromDb(db, "dash-report");
  const fs::path html = kShots / "report.html";
  Output made = Sh(Tune("report --db " + Quote(db) + " --experiment dash-report --out " + Quote(html.string())));
  INFO(made.out);
  REQUIRE(made.code == 0);
  // Self-contained: no script or style is fetched.
  std::ifstream f(html);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(text.find("<script src=") == std::string::npos);
  CHECK(text.find("stylesheet") == std::string::npos);

  std::vector<std::string> steps = ExperimentSteps("file://" + html.string(), "report-experiment.png");
  steps.push_back("goto:file://" + html.string() + "#/e/dash-report/t/" + std::to_string(want.pruned.begin()->first));
  steps.push_back("wait:document.querySelector('pre.log') && window.tuneCharts['metric:eval_loss']");
  steps.push_back("eval:state=document.querySelector('#trial-info td').textContent");
  steps.push_back("shot:" + (kShots / "report-trial.png").string());
  json out = Browse(steps);
  CheckViews(out["values"], want);
  CHECK(out["values"]["state"] == "pruned");
}

TEST_CASE("dashboard in Chromium: the page follows a running tune run without a reload", "[dashboard][browser]") {
  fs::create_directories(kShots);
  TempDir dir;
  // Slow trials: about 3 s each, two at a time.
  fs::path spec = WriteSpec(dir.path, AshaSpec("dash-live", 8, 100));
  const std::string db = (dir.path / "results.db").string();
  Child run({kBin + "/tune", "run", spec.string(), "--db", db, "--quiet"}, dir.path / "run.log");
  // The dashboard needs the database and its experiment: wait for them.
  for (int i = 0; i < 200 && Sh(Tune("trials --db " + Quote(db) + " --experiment dash-live")).code != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Dashboard dash(db, dir.path / "dash.log");
  json out = Browse({"goto:" + dash.url() + "#/e/dash-live",
                     "wait:document.body.dataset.loaded >= 1 && window.tuneCharts.history",
                     "eval:before=(window.__notReloaded = true, " + kHistoryPoints + ")",
                     "eval:state_before=document.querySelector('.summary').textContent",
                     "wait:" + kHistoryPoints + " >= 8",
                     "eval:after=" + kHistoryPoints,
                     "eval:same_page=window.__notReloaded === true",
                     "eval:polls=Number(document.body.dataset.loaded)",
                     "wait:document.querySelector('.summary').textContent.startsWith('completed')",
                     "shot:" + (kShots / "dashboard-live.png").string()},
                    120);
  const json& v = out["values"];
  INFO(v.dump());
  CHECK(v["before"].get<int>() < 8);
  CHECK(v["after"] == 8);
  CHECK(v["same_page"] == true);
  CHECK(v["polls"].get<int>() > 1);
  CHECK(v["state_before"].get<std::string>().rfind("running", 0) == 0);
  CHECK(run.Wait(60) == 0);
}

TEST_CASE("dashboard in Chromium: reports after max_t are red triangles, outside the curve", "[dashboard][browser]") {
  fs::create_directories(kShots);
  TempDir dir;
  // max_t 30, but the trials report up to step 60: ASHA completes a trial at
  // step 30 and what it prints later is stored as "after max_t".
  json spec = AshaSpec("dash-maxt", 3, 2);
  for (json& arg : spec["trial"]["command"])
    if (arg == "30") arg = "60";
  const std::string db = (dir.path / "results.db").string();
  Output run = Sh(Tune("run " + Quote(WriteSpec(dir.path, spec).string()) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  // A completed trial with late reports, and their steps, from SQLite itself.
  Output late = Sh("sqlite3 " + Quote(db) +
                   " \"SELECT t.number, group_concat(r.step) FROM trials t JOIN reports r ON r.trial_id = t.id "
                   "WHERE t.state = 'completed' AND r.excluded = 'after max_t' GROUP BY t.number ORDER BY t.number "
                   "LIMIT 1\"");
  INFO(late.out);
  REQUIRE(late.code == 0);
  const size_t bar = late.out.find('|');
  REQUIRE(bar != std::string::npos);
  const int number = std::stoi(late.out.substr(0, bar));
  json late_steps = json::array();
  std::istringstream steps(late.out.substr(bar + 1));
  for (std::string s; std::getline(steps, s, ',');) late_steps.push_back(std::stoi(s));
  REQUIRE(late_steps.size() > 0);

  Dashboard dash(db, dir.path / "dash.log");
  const std::string chart = "tuneCharts['metric:eval_loss']";
  // For each drawn point of the "not counted" dataset: whether the canvas
  // holds a red (#d62728 border) pixel within 6 px of it.
  const std::string red_drawn =
      "(() => { const c = " + chart + "; const i = c.data.datasets.findIndex(d => d.tuneExcluded);"
      " const ctx = c.canvas.getContext('2d'); const r = window.devicePixelRatio || 1;"
      " return c.getDatasetMeta(i).data.map(p => { const px = ctx.getImageData(Math.round((p.x - 6) * r),"
      " Math.round((p.y - 6) * r), Math.round(13 * r), Math.round(13 * r)).data;"
      " for (let k = 0; k < px.length; k += 4) if (px[k] > 170 && px[k + 1] < 110 && px[k + 2] < 110) return true;"
      " return false; }); })()";
  json out = Browse(
      {"goto:" + dash.url() + "#/e/dash-maxt/t/" + std::to_string(number),
       "wait:window." + chart + " && " + chart + ".data.datasets.some(d => d.tuneExcluded)",
       "eval:excluded=" + chart + ".data.datasets.filter(d => d.tuneExcluded).map(d => ["
           "d.label, d.pointStyle, d.borderColor, d.showLine, d.data.map(p => p.x)])",
       "eval:counted_steps=" + chart + ".data.datasets.filter(d => !d.tuneExcluded).flatMap(d => d.data.map(p => p.x))",
       "eval:red=" + red_drawn,
       "shot:" + (kShots / "dashboard-trial-after-max-t.png").string(),
       "goto:" + dash.url() + "#/e/dash-maxt",
       "wait:document.body.dataset.loaded >= 1 && window.tuneCharts.curves",
       "eval:curve_steps=tuneCharts.curves.data.datasets.filter(d => d.tuneTrial === " + std::to_string(number) +
           ").flatMap(d => d.data.map(p => p.x))"});
  const json& v = out["values"];
  INFO(v.dump());
  REQUIRE(v["excluded"].size() == 1);
  const json& tri = v["excluded"][0];
  CHECK(tri[0] == "not counted (after max_t)");  // the legend says why
  CHECK(tri[1] == "triangle");
  CHECK(tri[2] == "#d62728");
  CHECK(tri[3] == false);  // points, not joined into a line
  CHECK(tri[4] == late_steps);
  CHECK(v["red"] == json(std::vector<bool>(late_steps.size(), true)));
  // Neither the trial's own chart nor the experiment's learning curves
  // carry a report past max_t.
  REQUIRE(v["counted_steps"].size() > 0);
  for (const json& s : v["counted_steps"]) CHECK(s.get<int>() <= 30);
  REQUIRE(v["curve_steps"].size() > 0);
  CHECK(v["curve_steps"].back() == 30);
  for (const json& s : v["curve_steps"]) CHECK(s.get<int>() <= 30);
}

TEST_CASE("dashboard and tune report in Chromium: several objectives, the front and the hypervolume",
          "[dashboard][browser][pareto]") {
  fs::create_directories(kShots);
  TempDir dir;
  // eval_loss against adapter_mb (synthetic_trial --costs: 0.25 MB per unit
  // of rank), peak_mem_gb (6 + 0.08 per unit of rank) at most 10: rank 64
  // is infeasible, and the first trial has it.
  json spec = {
      {"name", "dash-mo"},
      {"objective", {{{"metric", "eval_loss"}, {"mode", "min"}}, {{"metric", "adapter_mb"}, {"mode", "min"}}}},
      {"constraints", {{{"metric", "peak_mem_gb"}, {"max", 10}}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-4}, {"high", 1e-1}}},
        {"lora_r", {{"type", "choice"}, {"values", {4, 8, 16, 32, 64}}}}}},
      {"search", {{"algorithm", "random"}, {"seed", 7}, {"points_to_evaluate", {{{"lora_r", 64}}}}}},
      {"limits", {{"max_trials", 12}, {"max_concurrent_trials", 2}}},
      {"trial",
       {{"command",
         {kBin + "/synthetic_trial", "--lr", "${lr}", "--lora-r", "${lora_r}", "--dropout", "0.1", "--steps", "10",
          "--report-every", "5", "--costs"}},
        {"timeout_s", 60}}},
  };
  const std::string db = (dir.path / "results.db").string();
  Output run = Sh(Tune("run " + Quote(WriteSpec(dir.path, spec).string()) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  const fs::path html = kShots / "report-pareto.html";
  Output made = Sh(Tune("report --db " + Quote(db) + " --experiment dash-mo --out " + Quote(html.string())));
  INFO(made.out);
  REQUIRE(made.code == 0);
  // The report's data: the front the page must draw.
  std::ifstream f(html);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string tag = "window.TUNE_REPORT = ";
  const size_t at = text.find(tag);
  REQUIRE(at != std::string::npos);
  const json doc = json::parse(text.substr(at + tag.size(), text.find(";</script>", at) - at - tag.size()));
  const json& pareto = doc["experiment"]["pareto"];
  json front = json::array();
  for (const json& p : pareto["front"]) front.push_back(p["number"]);
  REQUIRE(front.size() > 0);
  REQUIRE(pareto["infeasible"].size() > 0);
  CHECK(pareto["infeasible"][0] == 0);  // rank 64's trial
  CHECK(pareto["hypervolume"].get<double>() > 0);

  // What the page draws: the front as a step line (in the front's order),
  // the other feasible trials, the infeasible one, the hypervolume curve and
  // the sentence naming its reference point; the table's objective columns.
  const std::string chart = "tuneCharts['pareto:0-1']";
  const std::string set = chart + ".data.datasets.find(d => d.tunePareto === ";
  const std::vector<std::string> checks = {
      "wait:document.body.dataset.loaded >= 1 && window." + chart + " && window.tuneCharts.hypervolume",
      "eval:front=" + set + "'front').data.map(p => p.n)",
      "eval:stepped=" + set + "'front').stepped",
      "eval:drawn=" + chart + ".getDatasetMeta(0).data.length",
      "eval:feasible=" + set + "'feasible').data.length",
      "eval:infeasible=" + set + "'infeasible').data.map(p => p.n)",
      "eval:hv=tuneCharts.hypervolume.data.datasets[0].data.map(p => p.x)",
      "eval:hv_note=document.getElementById('hypervolume').closest('.card').querySelector('.note').textContent",
      "eval:columns=Array.from(document.querySelectorAll('#trials th')).map(th => th.textContent)",
  };
  Dashboard dash(db, dir.path / "dash.log");
  std::vector<std::string> steps = {"goto:" + dash.url() + "#/e/dash-mo"};
  auto add = [&](const std::string& prefix) {
    for (const std::string& s : checks) {
      const size_t eq = s.find('=');
      steps.push_back(s.rfind("eval:", 0) == 0 ? "eval:" + prefix + s.substr(5, eq - 5) + s.substr(eq) : s);
    }
  };
  add("dash_");
  steps.push_back("shot:" + (kShots / "dashboard-pareto.png").string());
  steps.push_back("goto:file://" + html.string());
  add("report_");
  // Three objectives (tokens_per_s maximised): a report with one scatter
  // per pair, the front's points in each, no step line.
  spec["name"] = "dash-mo3";
  spec["objective"].push_back({{"metric", "tokens_per_s"}, {"mode", "max"}});
  REQUIRE(Sh(Tune("run " + Quote(WriteSpec(dir.path, spec).string()) + " --db " + Quote(db) + " --quiet")).code == 0);
  const fs::path html3 = kShots / "report-pareto-3.html";
  REQUIRE(Sh(Tune("report --db " + Quote(db) + " --experiment dash-mo3 --out " + Quote(html3.string()))).code == 0);
  const std::string pairs = "Object.keys(tuneCharts).filter(k => k.startsWith('pareto:')).sort()";
  steps.push_back("goto:file://" + html3.string());
  steps.push_back("wait:document.body.dataset.loaded >= 1 && window.tuneCharts.hypervolume && " + pairs +
                  ".length === 3");
  steps.push_back("eval:pairs=" + pairs);
  steps.push_back("eval:pair_fronts=" + pairs + ".map(k => [tuneCharts[k].data.datasets[0].data.length, "
                  "tuneCharts[k].data.datasets[0].showLine, tuneCharts[k].getDatasetMeta(0).data.length])");
  steps.push_back("eval:front3=tuneCharts['pareto:0-1'].data.datasets[0].data.map(p => p.n)");
  steps.push_back("shot:" + (kShots / "report-pareto-3.png").string());
  json out = Browse(steps);
  const json& v = out["values"];
  INFO(v.dump());
  for (const std::string p : {"dash_", "report_"}) {
    CHECK(v[p + "front"] == front);
    CHECK(v[p + "stepped"] == "before");
    CHECK(v[p + "drawn"] == front.size());
    CHECK(v[p + "feasible"].get<size_t>() + front.size() == pareto["feasible"].size());
    CHECK(v[p + "infeasible"] == pareto["infeasible"]);
    CHECK(v[p + "hv"].size() == pareto["hypervolume_curve"].size());
    CHECK(v[p + "hv_note"].get<std::string>().find(pareto["reference_text"].get<std::string>()) != std::string::npos);
    const json& columns = v[p + "columns"];
    for (const char* c : {"eval_loss", "adapter_mb", "front", "feasible"})
      CHECK(std::find(columns.begin(), columns.end(), json(c)) != columns.end());
  }
  CHECK(v["pairs"] == json({"pareto:0-1", "pareto:0-2", "pareto:1-2"}));
  std::ifstream f3(html3);
  const std::string text3((std::istreambuf_iterator<char>(f3)), std::istreambuf_iterator<char>());
  const size_t at3 = text3.find(tag);
  REQUIRE(at3 != std::string::npos);
  const json front3 = json::parse(text3.substr(at3 + tag.size(), text3.find(";</script>", at3) - at3 - tag.size()))
                          ["experiment"]["pareto"]["front"];
  REQUIRE(front3.size() > 0);
  json numbers3 = json::array();
  for (const json& p : front3) numbers3.push_back(p["number"]);
  CHECK(v["front3"] == numbers3);
  for (const json& pair : v["pair_fronts"]) CHECK(pair == json({front3.size(), false, front3.size()}));
}
