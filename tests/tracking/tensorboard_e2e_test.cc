// `"tracking": {"tensorboard": ...}` and `tune export tensorboard`, read
// back with TensorBoard's own reader (PyPI tensorboard, in the cached
// environment of scripts/tracking-venv.sh): every scalar, hparam and status
// must equal what the database holds.
#include <nlohmann/json.hpp>

#include "storage/storage.h"
#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;

std::string TrackingPython() {
  Output o = Sh(Quote(std::string(TUNE_SOURCE_DIR) + "/scripts/tracking-venv.sh"));
  INFO(o.out);
  REQUIRE(o.code == 0);
  std::string out = o.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out.substr(out.rfind('\n') + 1);  // the last line; earlier ones are progress
}

// What TensorBoard reads under `logdir`: run -> {scalars, hparams, status}.
json ReadWithTensorBoard(const std::string& python, const fs::path& logdir) {
  Output o = Sh(Quote(python) + " " + Quote(std::string(TUNE_SOURCE_DIR) + "/tests/tracking/read_events.py") + " " +
                Quote(logdir.string()));
  INFO(o.out);
  REQUIRE(o.code == 0);
  return json::parse(o.out);
}

json ParamJson(const tune::ParamValue& v) {
  return std::visit([](const auto& x) -> json { return x; }, v);
}

// The database's view of trial run `trial_NNNN`, in read_events.py's form.
json Expected(tune::Storage& storage, const tune::TrialRecord& rec) {
  json scalars = json::object();
  auto reports = storage.ListTrialReports(rec.trial.id);
  REQUIRE(reports.ok());
  for (const auto& r : *reports) {
    if (r.attempt != rec.trial.attempt || !r.excluded.empty()) continue;
    // float32, as written (TensorBoard's default reader takes no float64).
    for (const auto& [tag, v] : r.report.values)
      scalars[tag].push_back({r.report.step, static_cast<double>(static_cast<float>(v))});
  }
  json hparams = json::object();
  for (const auto& [name, v] : rec.trial.params) {
    json j = ParamJson(v);
    hparams[name] = j.is_number() ? json(j.get<double>()) : j;  // TensorBoard keeps numbers as doubles
  }
  json status = rec.trial.state == tune::TrialState::kFailed ? json("STATUS_FAILURE") : json("STATUS_SUCCESS");
  return {{"scalars", scalars}, {"hparams", hparams}, {"status", status}};
}

std::string RunName(int number) {
  char b[32];
  std::snprintf(b, sizeof b, "trial_%04d", number);
  return b;
}

TEST_CASE("tracking.tensorboard: TensorBoard reads every trial's scalars, params and status as stored",
          "[tracking][e2e]") {
  const std::string python = TrackingPython();
  TempDir dir;
  const std::string bin = kBin + "/synthetic_trial";
  // Every trial's first attempt fails at step 7 after one report (below the
  // first rung, so ASHA never judges it); the retry runs to the end unless
  // ASHA stops it, reporting past max_t (40): those reports are stored as
  // excluded and must not reach TensorBoard either. TensorBoard must show only
  // the attempt the database counts.
  const std::string args = " --lr ${lr} --lora-r ${lora_r} --optimizer ${optimizer} --steps 50 --report-every 5 "
                           "--sleep-ms 2 --seed ${trial_id}";
  const std::string script = "if [ -e \"${trial_dir}/tried\" ]; then exec " + bin + args +
                             "; else touch \"${trial_dir}/tried\"; exec " + bin + args + " --fail-at 7; fi";
  json spec = {
      {"name", "tb"},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-4}, {"high", 1e-1}}},
        {"lora_r", {{"type", "choice"}, {"values", {4, 8, 16}}}},
        {"optimizer", {{"type", "choice"}, {"values", {"adamw", "sgd"}}}}}},
      {"search", {{"algorithm", "random"}, {"seed", 5}}},
      {"scheduler", {{"type", "asha"}, {"max_t", 40}, {"grace_period", 10}, {"reduction_factor", 2}}},
      {"limits", {{"max_trials", 6}, {"max_concurrent_trials", 2}}},
      {"trial", {{"command", {"sh", "-c", script}}, {"max_retries", 1}, {"timeout_s", 120}}},
      {"tracking", {{"tensorboard", true}}},
  };
  fs::path spec_path = dir.path / "tb.json";
  std::ofstream(spec_path) << spec.dump(2);
  const std::string db = (dir.path / "r.db").string();
  Output run = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  CHECK(run.out.find("not delivered") == std::string::npos);

  auto storage = tune::OpenSqliteStorage(db, false);
  REQUIRE(storage.ok());
  auto e = (*storage)->FindExperiment("tb");
  REQUIRE(e.ok());
  auto records = (*storage)->ListTrialRecords(e->id);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 6);

  json live = ReadWithTensorBoard(python, dir.path / "tune_runs" / "tb");
  int pruned = 0;
  for (const auto& rec : *records) {
    INFO("trial " << rec.trial.number << " " << tune::TrialStateName(rec.trial.state));
    CHECK(rec.trial.attempt == 1);
    pruned += rec.trial.state == tune::TrialState::kPruned;
    REQUIRE(live.contains(RunName(rec.trial.number)));
    const json& got = live[RunName(rec.trial.number)];
    json want = Expected(**storage, rec);
    CHECK(got["hparams"] == want["hparams"]);
    CHECK(got["status"] == want["status"]);
    CHECK(got["scalars"] == want["scalars"]);
    // The failed first attempt's point at step 5 is gone: one point per step.
    REQUIRE(got["scalars"].contains("eval_loss"));
    CHECK(got["scalars"]["eval_loss"][0][0] == 5);
    CHECK(got["scalars"]["eval_loss"][1][0] == 10);
    // One event file: the failed attempt's was replaced.
    int files = 0;
    for (const auto& f : fs::directory_iterator(dir.path / "tune_runs" / "tb" / RunName(rec.trial.number))) {
      files += f.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    }
    CHECK(files == 1);
  }
  CHECK(live.size() == 6);
  CHECK(pruned > 0);  // the case where a curve ends early is covered
  int excluded = 0;  // and reports past max_t, stored but not counted
  for (const auto& rec : *records) {
    // Named: a range-for over `*Result` of a temporary reads a destroyed
    // vector (ASan: stack-use-after-scope).
    auto reports = (*storage)->ListTrialReports(rec.trial.id);
    REQUIRE(reports.ok());
    for (const auto& r : *reports) excluded += !r.excluded.empty();
  }
  CHECK(excluded > 0);

  SECTION("tune export tensorboard writes the same from the database") {
    Output ex = Sh(Tune("export tensorboard --db " + Quote(db) + " --out " + Quote((dir.path / "out").string())));
    INFO(ex.out);
    REQUIRE(ex.code == 0);
    CHECK(ex.out.find("6 trials") != std::string::npos);
    json exported = ReadWithTensorBoard(python, dir.path / "out" / "tb");
    CHECK(exported == live);

    // Never mixes with an earlier export.
    Output again = Sh(Tune("export tensorboard --db " + Quote(db) + " --out " + Quote((dir.path / "out").string())));
    CHECK(again.code == 2);
    CHECK(again.out.find("exists already") != std::string::npos);
  }
}

TEST_CASE("tracking.tensorboard, several objectives and a constraint: TensorBoard reads each completed trial's "
          "final values at its last step, live and exported alike",
          "[tracking][e2e]") {
  const std::string python = TrackingPython();
  TempDir dir;
  // Two reports each; the second trial (mem 8) breaks mem <= 5.
  const std::string line =
      R"js(echo '{"step": 1, "loss": 2, "size": 3, "mem": 1}'; echo '{"step": 2, "loss": ${x}, "size": 2, "mem": ${mem}}')js";
  json spec = {
      {"name", "tbmo"},
      {"objective", {{{"metric", "loss"}, {"mode", "min"}}, {{"metric", "size"}, {"mode", "min"}}}},
      {"constraints", {{{"metric", "mem"}, {"max", 5}}}},
      {"parameters",
       {{"x", {{"type", "uniform"}, {"low", 0}, {"high", 1}}}, {"mem", {{"type", "choice"}, {"values", {2, 8}}}}}},
      {"search",
       {{"algorithm", "random"}, {"seed", 3},
        {"points_to_evaluate", {{{"x", 0.25}, {"mem", 2}}, {{"x", 0.75}, {"mem", 8}}}}}},
      {"limits", {{"max_trials", 2}, {"max_concurrent_trials", 2}}},
      {"trial", {{"command", {"sh", "-c", line}}}},
      {"tracking", {{"tensorboard", true}}},
  };
  fs::path spec_path = dir.path / "tbmo.json";
  std::ofstream(spec_path) << spec.dump(2);
  const std::string db = (dir.path / "r.db").string();
  Output run = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db) + " --quiet"));
  INFO(run.out);
  REQUIRE(run.code == 0);
  json live = ReadWithTensorBoard(python, dir.path / "tune_runs" / "tbmo");
  INFO(live.dump());
  REQUIRE(live.size() == 2);
  // [step, value] in order: the reports, then the final values at step 2.
  const json& feasible = live[RunName(0)]["scalars"];
  CHECK(feasible["loss"] == json::parse("[[1, 2.0], [2, 0.25], [2, 0.25]]"));
  CHECK(feasible["size"] == json::parse("[[1, 3.0], [2, 2.0], [2, 2.0]]"));
  CHECK(feasible["tune.constraint.mem"] == json::parse("[[2, -3.0]]"));
  CHECK(feasible["tune.feasible"] == json::parse("[[2, 1.0]]"));
  const json& broken = live[RunName(1)]["scalars"];
  CHECK(broken["tune.constraint.mem"] == json::parse("[[2, 3.0]]"));
  CHECK(broken["tune.feasible"] == json::parse("[[2, 0.0]]"));

  Output ex = Sh(Tune("export tensorboard --db " + Quote(db) + " --out " + Quote((dir.path / "out").string())));
  INFO(ex.out);
  REQUIRE(ex.code == 0);
  CHECK(ReadWithTensorBoard(python, dir.path / "out" / "tbmo") == live);
}

TEST_CASE("tracking.tensorboard takes true, false or a directory, and names the key otherwise", "[tracking][e2e]") {
  TempDir dir;
  json spec = {
      {"name", "tbv"},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters", {{"lr", {{"type", "uniform"}, {"low", 0.0}, {"high", 1.0}}}}},
      {"trial", {{"command", {kBin + "/synthetic_trial", "--lr", "${lr}"}}}},
      {"tracking", {{"tensorboard", 3}}},
  };
  fs::path p = dir.path / "tbv.json";
  std::ofstream(p) << spec.dump();
  Output bad = Sh(Tune("validate " + Quote(p.string())));
  CHECK(bad.code == 2);
  CHECK(bad.out.find("tracking.tensorboard: expected true, false or a directory for the event files, got 3") !=
        std::string::npos);

  spec["tracking"] = {{"mlflow", 3}};
  std::ofstream(p) << spec.dump();
  Output unknown = Sh(Tune("validate " + Quote(p.string())));
  CHECK(unknown.code == 2);
  CHECK(unknown.out.find("tracking.mlflow") != std::string::npos);

  spec["tracking"] = {{"tensorboard", "tb-logs"}};
  std::ofstream(p) << spec.dump();
  Output ok = Sh(Tune("validate " + Quote(p.string())));
  CHECK(ok.code == 0);
  CHECK(ok.out.find("tracking    TensorBoard event files in tb-logs/tbv/trial_NNNN") != std::string::npos);
}

}  // namespace
