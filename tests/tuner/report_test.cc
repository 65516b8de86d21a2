// The query commands' output (tuner/report.h) on a real database: the JSON
// is parsed back with nlohmann, the CSV with an RFC 4180 reader.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/common/temp_dir.h"
#include "tuner/report.h"

namespace tune {
namespace {

using nlohmann::json;

constexpr const char kSpec[] =
    R"({"name": "demo", "objective": {"metric": "eval_loss", "mode": "min"}})";

struct Fixture {
  testing::TempDir dir;
  std::unique_ptr<Storage> db = std::move(OpenSqliteStorage(dir.File("tune.db"))).value();
  ExperimentId e = 0;
  std::vector<Trial> trials;

  // Trials 0..4: completed 2.0, completed 1.5, pruned 1.0 (better, but not a
  // candidate), failed after a retry, running.
  Fixture() {
    e = *db->CreateExperiment("demo", kSpec, 7);
    auto add = [&](double lr, int64_t r, const std::string& opt, bool flag) {
      trials.push_back(*db->CreateTrial(
          e, {{"learning_rate", lr}, {"lora_r", r}, {"optimizer", opt}, {"use_rslora", flag}}));
      return trials.back().id;
    };
    auto report = [&](TrialId id, int attempt, int64_t step, double v) {
      MetricReport m;
      m.step = step;
      m.values = {{"eval_loss", v}, {"train_loss", v + 0.25}};
      REQUIRE(db->AppendReport(id, attempt, m, v).ok());
    };
    TrialId t0 = add(1e-3, 8, "adamw", false);
    REQUIRE(db->StartTrial(t0, 0, "local:pid 10").ok());
    report(t0, 0, 100, 2.0);
    REQUIRE(db->FinishTrial(t0, TrialState::kCompleted, 2.0, std::nullopt, "completed").ok());

    TrialId t1 = add(3e-4, 16, "sgd", true);
    REQUIRE(db->StartTrial(t1, 0, "local:pid 11").ok());
    report(t1, 0, 100, 1.5);
    REQUIRE(db->FinishTrial(t1, TrialState::kCompleted, 1.5, std::nullopt, "completed").ok());

    TrialId t2 = add(5e-3, 32, "adamw", false);
    REQUIRE(db->StartTrial(t2, 0, "local:pid 12").ok());
    report(t2, 0, 20, 1.0);
    REQUIRE(db->FinishTrial(t2, TrialState::kPruned, 1.0, 20, "below rung 20").ok());

    TrialId t3 = add(1e-2, 4, "adamw", true);
    REQUIRE(db->StartTrial(t3, 0, "local:pid 13").ok());
    REQUIRE(db->RetryTrial(t3, "exit status 1").ok());
    REQUIRE(db->StartTrial(t3, 1, "local:pid 14").ok());
    REQUIRE(db->FinishTrial(t3, TrialState::kFailed, std::nullopt, std::nullopt,
                            "exit status 1, \"killed\"\nby signal 9").ok());

    TrialId t4 = add(2e-4, 8, "sgd", false);
    REQUIRE(db->StartTrial(t4, 0, "local:pid 15").ok());
    report(t4, 0, 40, 1.75);
  }
};

std::string Run(const std::function<Status(std::ostream&)>& f) {
  std::ostringstream out;
  Status st = f(out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out.str();
}

// RFC 4180: fields separated by commas, records by CRLF, quoted fields may
// hold commas, CR, LF and doubled quotes.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  size_t i = 0;
  bool quoted = false;
  while (i < text.size()) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        i += 2;
      } else if (c == '"') {
        quoted = false;
        ++i;
      } else {
        field += c;
        ++i;
      }
    } else if (c == '"') {
      REQUIRE(field.empty());  // a quote only opens a field
      quoted = true;
      ++i;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      ++i;
    } else if (c == '\r') {
      REQUIRE(i + 1 < text.size());
      REQUIRE(text[i + 1] == '\n');  // records end with CRLF
      row.push_back(field);
      field.clear();
      rows.push_back(row);
      row.clear();
      i += 2;
    } else {
      REQUIRE(c != '\n');  // a bare LF outside quotes is not RFC 4180
      field += c;
      ++i;
    }
  }
  REQUIRE_FALSE(quoted);
  REQUIRE(row.empty());
  REQUIRE(field.empty());
  return rows;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

TEST_CASE("best as JSON is the best completed trial with exactly typed params", "[report]") {
  Fixture f;
  std::string text = Run([&](std::ostream& o) { return PrintBest(*f.db, "demo", "json", o); });
  json j = json::parse(text);
  CHECK(j["experiment"] == "demo");
  CHECK(j["trial_id"] == f.trials[1].id);
  CHECK(j["number"] == 1);
  CHECK(j["value"] == 1.5);
  CHECK(j["metric"] == "eval_loss");
  CHECK(j["mode"] == "min");
  const json& p = j["params"];
  REQUIRE(p.size() == 4);
  CHECK(p["learning_rate"].is_number_float());
  CHECK(p["learning_rate"].get<double>() == 3e-4);
  CHECK(p["lora_r"].is_number_integer());
  CHECK(p["lora_r"] == 16);
  CHECK(p["optimizer"] == "sgd");
  CHECK(p["use_rslora"].is_boolean());
  CHECK(p["use_rslora"] == true);

  // The mode can be overridden; the pruned trial (1.0) is never a candidate.
  json max = json::parse(
      Run([&](std::ostream& o) { return PrintBest(*f.db, "demo", "json", o, Mode::kMax); }));
  CHECK(max["number"] == 0);
  CHECK(max["mode"] == "max");
}

TEST_CASE("best reads the mode from the stored spec", "[report]") {
  testing::TempDir dir;
  auto db = std::move(OpenSqliteStorage(dir.File("tune.db"))).value();
  ExperimentId e = *db->CreateExperiment(
      "acc", R"({"objective": {"metric": "accuracy", "mode": "max"}})", 1);
  for (double v : {0.7, 0.9, 0.8}) {
    Trial t = *db->CreateTrial(e, {{"x", v}});
    REQUIRE(db->StartTrial(t.id, 0, "local").ok());
    REQUIRE(db->FinishTrial(t.id, TrialState::kCompleted, v, std::nullopt, "").ok());
  }
  json j = json::parse(Run([&](std::ostream& o) { return PrintBest(*db, "", "json", o); }));
  CHECK(j["number"] == 1);
  CHECK(j["value"] == 0.9);
  CHECK(j["metric"] == "accuracy");
  CHECK(j["mode"] == "max");
}

TEST_CASE("best as a table names the trial, value and every param", "[report]") {
  Fixture f;
  std::string text = Run([&](std::ostream& o) { return PrintBest(*f.db, "", "table", o); });
  auto lines = Lines(text);
  REQUIRE(lines.size() == 9);
  CHECK(Words(lines[0]) == std::vector<std::string>{"experiment", "demo"});
  CHECK(Words(lines[1])[1] == "1");
  CHECK(Words(lines[2]) == std::vector<std::string>{"eval_loss", "1.5", "(min)"});
  CHECK(Words(lines[5]) == std::vector<std::string>{"learning_rate", "0.0003"});
  CHECK(Words(lines[6]) == std::vector<std::string>{"lora_r", "16"});
}

TEST_CASE("best fails and prints nothing when nothing completed", "[report]") {
  testing::TempDir dir;
  auto db = std::move(OpenSqliteStorage(dir.File("tune.db"))).value();
  std::ostringstream out;
  Status none = PrintBest(*db, "", "json", out);
  CHECK(none.code() == StatusCode::kFailedPrecondition);
  CHECK(none.message().find("no experiments") != std::string::npos);

  ExperimentId e = *db->CreateExperiment("fresh", kSpec, 1);
  Trial t = *db->CreateTrial(e, {});
  REQUIRE(db->StartTrial(t.id, 0, "local").ok());
  REQUIRE(db->FinishTrial(t.id, TrialState::kPruned, 1.0, 1, "").ok());
  Status st = PrintBest(*db, "fresh", "json", out);
  CHECK(st.code() == StatusCode::kFailedPrecondition);
  CHECK(st.message().find("'fresh' has no completed trial") != std::string::npos);
  CHECK(PrintBest(*db, "other", "json", out).IsNotFound());
  CHECK(PrintBest(*db, "fresh", "yaml", out).IsInvalidArgument());
  CHECK(out.str().empty());
}

TEST_CASE("the empty experiment name means the most recently created one", "[report]") {
  Fixture f;
  ExperimentId newer = *f.db->CreateExperiment("newer", kSpec, 1);
  Trial t = *f.db->CreateTrial(newer, {{"lora_r", int64_t{64}}});
  REQUIRE(f.db->StartTrial(t.id, 0, "local").ok());
  REQUIRE(f.db->FinishTrial(t.id, TrialState::kCompleted, 9.0, std::nullopt, "").ok());
  json j = json::parse(Run([&](std::ostream& o) { return PrintBest(*f.db, "", "json", o); }));
  CHECK(j["experiment"] == "newer");
  json arr = json::parse(
      Run([&](std::ostream& o) { return PrintTrials(*f.db, "", {}, "json", o); }));
  CHECK(arr.size() == 1);
}

TEST_CASE("trials as JSON: one object per trial with its state's details", "[report]") {
  Fixture f;
  json arr = json::parse(
      Run([&](std::ostream& o) { return PrintTrials(*f.db, "demo", {}, "json", o); }));
  REQUIRE(arr.is_array());
  REQUIRE(arr.size() == 5);
  for (size_t i = 0; i < arr.size(); ++i) CHECK(arr[i]["number"] == i);
  CHECK(arr[0]["state"] == "completed");
  CHECK(arr[0]["value"] == 2.0);
  CHECK(arr[0]["last_step"] == 100);
  CHECK(arr[0]["attempts"] == 1);
  CHECK(arr[0]["duration_s"].is_number());
  CHECK(arr[0]["pruned_rung"].is_null());
  CHECK(arr[0]["params"]["lora_r"].is_number_integer());
  CHECK(arr[2]["state"] == "pruned");
  CHECK(arr[2]["pruned_rung"] == 20);
  CHECK(arr[3]["state"] == "failed");
  CHECK(arr[3]["attempts"] == 2);
  CHECK(arr[3]["value"].is_null());
  CHECK(arr[3]["location"] == "local:pid 14");
  CHECK(arr[4]["state"] == "running");
  CHECK(arr[4]["value"] == 1.75);
  CHECK(arr[4]["ended_at"].is_null());

  json pruned = json::parse(Run(
      [&](std::ostream& o) { return PrintTrials(*f.db, "demo", TrialListing{TrialState::kPruned}, "json", o); }));
  REQUIRE(pruned.size() == 1);
  CHECK(pruned[0]["number"] == 2);
}

TEST_CASE("trials sorted by value: best first as tune best ranks, then limited", "[report]") {
  Fixture f;
  auto numbers = [&](const std::string& experiment, const TrialListing& listing) {
    json arr = json::parse(
        Run([&](std::ostream& o) { return PrintTrials(*f.db, experiment, listing, "json", o); }));
    std::vector<int> n;
    for (const json& t : arr) n.push_back(t["number"].get<int>());
    return n;
  };
  TrialListing best;
  best.best_first = true;
  // Completed 1 (1.5) and 0 (2.0); then the others with a value, pruned 2
  // (1.0, better but not a candidate) and running 4 (1.75); then failed 3.
  CHECK(numbers("demo", best) == std::vector<int>{1, 0, 2, 4, 3});
  best.limit = 2;
  CHECK(numbers("demo", best) == std::vector<int>{1, 0});
  // The first row is what tune best prints.
  json b = json::parse(Run([&](std::ostream& o) { return PrintBest(*f.db, "demo", "json", o); }));
  CHECK(b["number"] == numbers("demo", best)[0]);
  // A limit without sorting keeps the first trials by number.
  TrialListing first;
  first.limit = 3;
  CHECK(numbers("demo", first) == std::vector<int>{0, 1, 2});
  // The state filter applies before the limit.
  TrialListing pruned{TrialState::kPruned, true, 1};
  CHECK(numbers("demo", pruned) == std::vector<int>{2});

  // mode max: larger is better; equal values keep number order.
  ExperimentId up = *f.db->CreateExperiment(
      "up", R"({"name": "up", "objective": {"metric": "accuracy", "mode": "max"}})", 1);
  for (double v : {0.5, 0.9, 0.7, 0.9}) {
    Trial t = *f.db->CreateTrial(up, {{"x", v}});
    REQUIRE(f.db->StartTrial(t.id, 0, "local").ok());
    REQUIRE(f.db->FinishTrial(t.id, TrialState::kCompleted, v, std::nullopt, "").ok());
  }
  TrialListing top;
  top.best_first = true;
  CHECK(numbers("up", top) == std::vector<int>{1, 3, 2, 0});

  std::ostringstream none;
  TrialListing negative;
  negative.limit = -1;
  Status st = PrintTrials(*f.db, "demo", negative, "table", none);
  CHECK(st.IsInvalidArgument());
  CHECK(none.str().empty());
}

TEST_CASE("trials as CSV is RFC 4180 with one column per parameter", "[report]") {
  Fixture f;
  std::string text =
      Run([&](std::ostream& o) { return PrintTrials(*f.db, "demo", {}, "csv", o); });
  auto rows = ParseCsv(text);
  REQUIRE(rows.size() == 6);
  const auto& header = rows[0];
  for (const auto& row : rows) CHECK(row.size() == header.size());
  auto col = [&](const std::string& name) {
    auto it = std::find(header.begin(), header.end(), name);
    REQUIRE(it != header.end());
    return static_cast<size_t>(it - header.begin());
  };
  CHECK(rows[2][col("number")] == "1");
  CHECK(rows[2][col("value")] == "1.5");
  CHECK(rows[2][col("params_lora_r")] == "16");
  CHECK(rows[2][col("params_learning_rate")] == "0.0003");
  CHECK(rows[2][col("params_use_rslora")] == "true");
  CHECK(rows[3][col("state")] == "pruned");
  CHECK(rows[3][col("pruned_rung")] == "20");
  CHECK(rows[1][col("pruned_rung")].empty());
  // A message with a comma, quotes and a newline survives quoting.
  CHECK(rows[4][col("message")] == "exit status 1, \"killed\"\nby signal 9");
  CHECK(rows[4][col("attempts")] == "2");
}

TEST_CASE("trials as a table: aligned columns, metric and parameter headers", "[report]") {
  Fixture f;
  std::string text =
      Run([&](std::ostream& o) { return PrintTrials(*f.db, "demo", {}, "table", o); });
  auto lines = Lines(text);
  REQUIRE(lines.size() == 6);
  auto header = Words(lines[0]);
  CHECK(header == std::vector<std::string>{"#", "state", "eval_loss", "step", "rung", "attempts",
                                           "duration", "learning_rate", "lora_r", "optimizer",
                                           "use_rslora", "error"});
  // Every column starts at the same offset on every line.
  size_t state_col = lines[0].find("state");
  size_t lr_col = lines[0].find("learning_rate");
  for (size_t i = 1; i < lines.size(); ++i) {
    INFO(lines[i]);
    CHECK(lines[i].substr(state_col, 3) == Words(lines[i])[1].substr(0, 3));
    CHECK(lines[i][state_col - 1] == ' ');
    CHECK(lines[i][lr_col - 1] == ' ');
    CHECK(lines[i][lr_col] != ' ');
  }
  CHECK(Words(lines[3])[1] == "pruned");
  CHECK(Words(lines[3])[4] == "20");
  CHECK(Words(lines[1])[3] == "100");
  // The failed trial's message, on one line, in the last column; "-" for
  // the others (a pruned trial's reason is not an error).
  size_t error_col = lines[0].find("error");
  CHECK(Words(lines[4])[1] == "failed");
  CHECK(lines[4].substr(error_col) == "exit status 1, \"killed\" by signal 9");
  CHECK(lines[3].substr(error_col) == "-");

  // Without failed trials there is no error column.
  std::string pruned =
      Run([&](std::ostream& o) { return PrintTrials(*f.db, "demo", TrialListing{TrialState::kPruned}, "table", o); });
  CHECK(Lines(pruned)[0].find("error") == std::string::npos);

  std::ostringstream none;
  REQUIRE(PrintTrials(*f.db, "demo", TrialListing{TrialState::kStopped}, "table", none).ok());
  CHECK(none.str() == "experiment 'demo' has no stopped trials\n");
  CHECK(PrintTrials(*f.db, "demo", {}, "xml", none).IsInvalidArgument());
}

TEST_CASE("importance: every parameter of the stored spec, or a clear refusal", "[report]") {
  Fixture f;
  std::ostringstream none;
  // The fixture's stored spec has no parameters section: nothing to rank by.
  Status st = PrintImportance(*f.db, "demo", "table", none);
  CHECK(st.code() == StatusCode::kFailedPrecondition);
  CHECK(st.message().find("stored spec of experiment 'demo' does not parse") != std::string::npos);
  CHECK(none.str().empty());
  CHECK(PrintImportance(*f.db, "demo", "csv", none).IsInvalidArgument());
  CHECK(PrintImportance(*f.db, "nope", "table", none).code() == StatusCode::kNotFound);

  ExperimentId e = *f.db->CreateExperiment("imp", R"({"name": "imp",
      "objective": {"metric": "eval_loss", "mode": "max"},
      "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-1},
                     "opt": {"type": "choice", "values": ["adamw", "sgd"]}},
      "trial": {"command": ["prog"]}})", 1);
  auto finish = [&](double lr, const std::string& opt, double value, TrialState state) {
    Trial t = *f.db->CreateTrial(e, {{"lr", lr}, {"opt", opt}});
    REQUIRE(f.db->StartTrial(t.id, 0, "local").ok());
    REQUIRE(f.db->FinishTrial(t.id, state, value, std::nullopt, "").ok());
  };
  finish(1e-3, "adamw", 0.5, TrialState::kCompleted);
  st = PrintImportance(*f.db, "imp", "table", none);
  CHECK(st.code() == StatusCode::kFailedPrecondition);
  CHECK(st.message() == "experiment 'imp': importances need at least 2 completed trials with a finite value, got 1");
  finish(2e-3, "sgd", 0.9, TrialState::kPruned);  // pruned trials do not count
  CHECK(PrintImportance(*f.db, "imp", "table", none).code() == StatusCode::kFailedPrecondition);
  for (int i = 0; i < 20; ++i) finish(1e-5 * std::pow(1.5, i), i % 2 ? "sgd" : "adamw", 0.01 * i, TrialState::kCompleted);

  json j = json::parse(Run([&](std::ostream& o) { return PrintImportance(*f.db, "imp", "json", o); }));
  CHECK(j["experiment"] == "imp");
  CHECK(j["mode"] == "max");
  CHECK(j["method"] == "ped-anova");
  CHECK(j["trials"] == 21);
  CHECK(j["top_trials"] == 3);  // ceil(0.1 * 21)
  REQUIRE(j["importances"].size() == 2);
  // The value rises with lr, whatever the optimizer: lr decides.
  CHECK(j["importances"][0]["parameter"] == "lr");
  const std::string table = Run([&](std::ostream& o) { return PrintImportance(*f.db, "imp", "table", o); });
  auto lines = Lines(table);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "experiment 'imp': what sets the best 3 of 21 completed trials apart (eval_loss, max; PED-ANOVA)");
  CHECK(Words(lines[1]) == std::vector<std::string>{"parameter", "importance"});
  CHECK(Words(lines[2])[0] == "lr");
  CHECK(lines[4].rfind("note: the best 10% are only 3 trial(s)", 0) == 0);
}

TEST_CASE("status lists every experiment with counts per state and the best value",
          "[report]") {
  Fixture f;
  ExperimentId other = *f.db->CreateExperiment("other", "not json at all", 1);
  REQUIRE(f.db->SetExperimentState(other, ExperimentState::kFailed, "boom").ok());
  std::string text = Run([&](std::ostream& o) { return PrintStatus(*f.db, o); });
  auto lines = Lines(text);
  REQUIRE(lines.size() == 3);
  CHECK(Words(lines[0]) == std::vector<std::string>{"experiment", "state", "trials", "pending",
                                                    "running", "paused", "completed", "pruned", "failed",
                                                    "stopped", "best", "metric", "elapsed"});
  auto demo = Words(lines[1]);
  REQUIRE(demo.size() == 15);
  CHECK(demo[0] == "demo");
  CHECK(demo[1] == "running");
  CHECK(demo[2] == "5");
  CHECK(std::vector<std::string>(demo.begin() + 3, demo.begin() + 10) ==
        std::vector<std::string>{"0", "1", "0", "2", "1", "1", "0"});
  CHECK(demo[10] == "1.5");
  CHECK(demo[11] == "(#1)");
  CHECK(demo[12] == "eval_loss");
  CHECK(demo[13] == "min");
  auto o = Words(lines[2]);
  CHECK(o[0] == "other");
  CHECK(o[1] == "failed");
  CHECK(o[2] == "0");
  CHECK(o[10] == "-");
  CHECK(o[11] == "loss");  // the default objective when the spec does not parse

  testing::TempDir dir;
  auto empty = std::move(OpenSqliteStorage(dir.File("empty.db"))).value();
  CHECK(Run([&](std::ostream& s) { return PrintStatus(*empty, s); }) == "no experiments yet\n");
}

// Population Based Training: trial 0 took trial 1's checkpoint-20 with a new
// learning rate, then trial 1 took trial 0's checkpoint-40; trial 2 paused.
struct PbtFixture {
  testing::TempDir dir;
  std::unique_ptr<Storage> db = std::move(OpenSqliteStorage(dir.File("tune.db"))).value();
  ExperimentId e = *db->CreateExperiment("pbt", kSpec, 7);
  TrialId t0 = db->CreateTrial(e, {{"learning_rate", 0.1}, {"lora_r", int64_t{8}}})->id;
  TrialId t1 = db->CreateTrial(e, {{"learning_rate", 0.2}, {"lora_r", int64_t{8}}})->id;
  TrialId t2 = db->CreateTrial(e, {{"learning_rate", 0.3}, {"lora_r", int64_t{8}}})->id;

  void Report(TrialId t, int attempt, int64_t step, double v) {
    MetricReport m;
    m.step = step;
    m.values = {{"eval_loss", v}};
    REQUIRE(db->AppendReport(t, attempt, m, v).ok());
  }
  PbtFixture() {
    for (TrialId t : {t0, t1, t2}) REQUIRE(db->StartTrial(t, 0, "local").ok());
    Report(t0, 0, 20, 0.9);
    Report(t1, 0, 20, 0.5);
    REQUIRE(db->PauseTrial(t0, "exploit").ok());
    REQUIRE(db->RecordExploit(t0, 20, t1, 20, {{"learning_rate", 0.24}, {"lora_r", int64_t{8}}}).ok());
    REQUIRE(db->ContinueTrial(t0, 1, "local", 20).ok());
    Report(t0, 1, 40, 0.2);
    Report(t1, 0, 40, 0.45);
    REQUIRE(db->PauseTrial(t1, "exploit").ok());
    REQUIRE(db->RecordExploit(t1, 40, t0, 40, {{"learning_rate", 0.3}, {"lora_r", int64_t{8}}}).ok());
    REQUIRE(db->ContinueTrial(t1, 1, "local", 40).ok());
    Report(t1, 1, 60, 0.1);
    REQUIRE(db->FinishTrial(t1, TrialState::kCompleted, 0.1, std::nullopt, "completed").ok());
    REQUIRE(db->FinishTrial(t0, TrialState::kCompleted, 0.2, std::nullopt, "completed").ok());
    REQUIRE(db->PauseTrial(t2, "waiting for a slot").ok());
  }
};

TEST_CASE("trials as JSON: every trial has its schedule, first parameters first", "[report][pbt]") {
  PbtFixture f;
  json arr = json::parse(Run([&](std::ostream& o) { return PrintTrials(*f.db, "pbt", {}, "json", o); }));
  REQUIRE(arr.size() == 3);
  const json& s0 = arr[0]["schedule"];
  REQUIRE(s0.size() == 2);
  CHECK(s0[0]["step"] == 0);
  CHECK(s0[0]["params"]["learning_rate"] == 0.1);
  CHECK(s0[0]["params"]["lora_r"].is_number_integer());
  CHECK(s0[0]["donor"].is_null());
  CHECK(s0[0]["donor_step"].is_null());
  CHECK(s0[1]["step"] == 20);
  CHECK(s0[1]["params"]["learning_rate"] == 0.24);
  CHECK(s0[1]["donor"] == 1);
  CHECK(s0[1]["donor_step"] == 20);
  CHECK(arr[0]["params"]["learning_rate"] == 0.24);  // the current parameters
  CHECK(arr[1]["schedule"].size() == 2);
  CHECK(arr[1]["schedule"][1]["donor"] == 0);
  CHECK(arr[1]["schedule"][1]["step"] == 40);
  // A trial that was never exploited: one entry.
  REQUIRE(arr[2]["schedule"].size() == 1);
  CHECK(arr[2]["schedule"][0]["params"]["learning_rate"] == 0.3);
  CHECK(arr[2]["state"] == "paused");
  CHECK(arr[2]["failed_attempts"] == 0);
  // The carried reports count: trial 1's curve led to step 60.
  CHECK(arr[1]["last_step"] == 60);
  // Filtering by the paused state.
  TrialListing paused;
  paused.state = TrialState::kPaused;
  json only = json::parse(Run([&](std::ostream& o) { return PrintTrials(*f.db, "pbt", paused, "json", o); }));
  REQUIRE(only.size() == 1);
  CHECK(only[0]["number"] == 2);
}

TEST_CASE("best prints the best trial's schedule when PBT changed its parameters", "[report][pbt]") {
  PbtFixture f;
  json j = json::parse(Run([&](std::ostream& o) { return PrintBest(*f.db, "pbt", "json", o); }));
  CHECK(j["number"] == 1);
  REQUIRE(j["schedule"].size() == 2);
  CHECK(j["schedule"][0]["params"]["learning_rate"] == 0.2);
  CHECK(j["schedule"][1]["donor"] == 0);
  CHECK(j["schedule"][1]["donor_step"] == 40);
  const std::string text = Run([&](std::ostream& o) { return PrintBest(*f.db, "pbt", "table", o); });
  INFO(text);
  CHECK(text.find("schedule\n  from step 0: learning_rate=0.2, lora_r=8\n"
                  "  from step 40: learning_rate=0.3, lora_r=8 (from trial 0's checkpoint-40)\n") !=
        std::string::npos);
  // Without exploits, no schedule in the table; JSON still has one entry.
  Fixture plain;
  const std::string none = Run([&](std::ostream& o) { return PrintBest(*plain.db, "demo", "table", o); });
  CHECK(none.find("schedule") == std::string::npos);
  json pj = json::parse(Run([&](std::ostream& o) { return PrintBest(*plain.db, "demo", "json", o); }));
  CHECK(pj["schedule"].size() == 1);
}

TEST_CASE("one trial's details with its schedule (tune trials --trial N)", "[report][pbt]") {
  PbtFixture f;
  const std::string text = Run([&](std::ostream& o) { return PrintTrial(*f.db, "pbt", 0, "table", o); });
  INFO(text);
  auto lines = Lines(text);
  REQUIRE(lines.size() >= 4);
  CHECK(Words(lines[0]) == std::vector<std::string>{"experiment", "pbt"});
  CHECK(Words(lines[2]) == std::vector<std::string>{"state", "completed"});
  bool attempts_line = false;
  for (const std::string& l : lines) attempts_line |= Words(l) == std::vector<std::string>{"attempts", "2"};
  CHECK(attempts_line);
  CHECK(text.find("  from step 20: learning_rate=0.24, lora_r=8 (from trial 1's checkpoint-20)\n") !=
        std::string::npos);
  json j = json::parse(Run([&](std::ostream& o) { return PrintTrial(*f.db, "pbt", 1, "json", o); }));
  CHECK(j["number"] == 1);
  CHECK(j["schedule"].size() == 2);
  const std::string paused = Run([&](std::ostream& o) { return PrintTrial(*f.db, "pbt", 2, "table", o); });
  CHECK(paused.find("schedule") == std::string::npos);
  CHECK(paused.find("paused") != std::string::npos);
  std::ostringstream out;
  Status missing = PrintTrial(*f.db, "pbt", 9, "table", out);
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message().find("no trial 9") != std::string::npos);
  CHECK(out.str().empty());
}

TEST_CASE("durations read well", "[report]") {
  const std::pair<double, const char*> cases[] = {
      {0, "0.0s"},        {4.25, "4.2s"},      {59.94, "59.9s"},     {60, "1m00s"},
      {185, "3m05s"},     {3599, "59m59s"},    {3600, "1h00m"},      {7620, "2h07m"},
      {86400, "1d00h"},   {97200, "1d03h"},    {-1, "0.0s"},
  };
  for (const auto& [s, want] : cases) {
    INFO(s);
    CHECK(FormatDuration(s) == want);
  }
}

TEST_CASE("CSV records quote only what needs quoting", "[report]") {
  CHECK(CsvRecord({"a", "b c", ""}) == "a,b c,\r\n");
  CHECK(CsvRecord({"x,y", "say \"hi\"", "two\nlines"}) ==
        "\"x,y\",\"say \"\"hi\"\"\",\"two\nlines\"\r\n");
}

}  // namespace
}  // namespace tune
