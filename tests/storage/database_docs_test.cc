// docs/database.md cannot rot: its example queries (and README.md's, which
// promises the same) run against a real database, and every table and
// column of the schema is documented.
#include <catch2/catch.hpp>

#include <cmath>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/storage.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

std::string ReadDoc(const std::string& name = "docs/database.md") {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The text of every ```sql block, in order.
std::vector<std::string> SqlBlocks(const std::string& doc) {
  std::vector<std::string> blocks;
  size_t pos = 0;
  while ((pos = doc.find("```sql\n", pos)) != std::string::npos) {
    size_t start = pos + 7;
    size_t end = doc.find("```", start);
    REQUIRE(end != std::string::npos);
    blocks.push_back(doc.substr(start, end - start));
    pos = end + 3;
  }
  return blocks;
}

struct Row {
  int number;
  double value;
  int64_t lora_r;
};

// Runs the three example queries (best trial; learning curve of trial 3;
// completed trials with lora_r = 16 by value) against a real database.
void CheckExampleQueries(const std::vector<std::string>& queries) {
  REQUIRE(queries.size() == 3);

  testing::TempDir dir;
  const std::string path = dir.File("tune.db");
  std::vector<Row> completed;
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    // A decoy experiment with better values must not leak into 'default'.
    ExperimentId decoy = *db->CreateExperiment("decoy", R"({"objective": {"mode": "min"}})", 1);
    ExperimentId e = *db->CreateExperiment(
        "default", R"({"objective": {"metric": "eval_loss", "mode": "min"}})", 2);
    const int64_t ranks[] = {4, 8, 16, 32};
    for (ExperimentId exp : {decoy, e}) {
      for (int i = 0; i < 12; ++i) {
        int64_t r = ranks[i % 4];
        Trial t = *db->CreateTrial(exp, {{"lora_r", r}, {"learning_rate", 1e-4 * (i + 1)}});
        REQUIRE(db->StartTrial(t.id, 0, "local").ok());
        // A deterministic but unordered final value per trial.
        double final_value = 1.0 + static_cast<double>((i * 7) % 12) / 10.0;
        if (exp == decoy) final_value -= 1.0;
        for (int64_t step = 10; step <= 50; step += 10) {
          MetricReport m;
          m.step = step;
          double v = final_value + static_cast<double>(50 - step) / 100.0;
          m.values = {{"eval_loss", v}, {"train_loss", v - 0.1}};
          REQUIRE(db->AppendReport(t.id, 0, m, v).ok());
        }
        // Printed after max_t: stored, but not part of the learning curve.
        MetricReport late;
        late.step = 55;
        late.values = {{"eval_loss", 0.01}, {"train_loss", 0.01}};
        REQUIRE(db->AppendExcludedReport(t.id, 0, late, 0.01, "after max_t").ok());
        TrialState end = i == 5 ? TrialState::kPruned : TrialState::kCompleted;
        REQUIRE(db->FinishTrial(t.id, end, final_value, std::nullopt, "").ok());
        if (exp == e && end == TrialState::kCompleted) {
          completed.push_back({t.number, final_value, r});
        }
      }
    }
  }
  SQLite::Database raw(path, SQLite::OPEN_READONLY);

  // 1. The best trial.
  {
    Row best = *std::min_element(completed.begin(), completed.end(), [](const Row& a, const Row& b) {
      return a.value < b.value || (a.value == b.value && a.number < b.number);
    });
    SQLite::Statement q(raw, queries[0]);
    REQUIRE(q.executeStep());
    CHECK(q.getColumn(0).getInt() == best.number);
    CHECK(q.getColumn(1).getDouble() == best.value);
    CHECK(std::string(q.getColumn(2).getString()).find("\"lora_r\": ") != std::string::npos);
    CHECK_FALSE(q.executeStep());
  }
  // 2. The learning curve of trial 3: five steps in order, decreasing.
  {
    SQLite::Statement q(raw, queries[1]);
    std::vector<std::pair<int64_t, double>> curve;
    while (q.executeStep()) curve.emplace_back(q.getColumn(0).getInt64(), q.getColumn(1).getDouble());
    REQUIRE(curve.size() == 5);
    double final3 = 1.0 + static_cast<double>((3 * 7) % 12) / 10.0;
    for (size_t i = 0; i < curve.size(); ++i) {
      CHECK(curve[i].first == static_cast<int64_t>(10 * (i + 1)));
      CHECK(curve[i].second == final3 + static_cast<double>(50 - curve[i].first) / 100.0);
    }
  }
  // 3. Completed trials with lora_r = 16, by value.
  {
    std::vector<Row> want;
    for (const Row& r : completed) {
      if (r.lora_r == 16) want.push_back(r);
    }
    std::sort(want.begin(), want.end(), [](const Row& a, const Row& b) { return a.value < b.value; });
    SQLite::Statement q(raw, queries[2]);
    std::vector<int> got;
    while (q.executeStep()) {
      got.push_back(q.getColumn(0).getInt());
      if (q.getColumnCount() > 2) CHECK(q.getColumn(2).getString() == "16");
    }
    std::vector<int> want_numbers;
    for (const Row& r : want) want_numbers.push_back(r.number);
    CHECK(got == want_numbers);
    CHECK(got.size() == 3);
  }
}

TEST_CASE("the example queries of docs/database.md give the right answers", "[docs]") {
  const std::string doc = ReadDoc();
  const size_t examples = doc.find("## Example queries");
  REQUIRE(examples != std::string::npos);
  CheckExampleQueries(SqlBlocks(doc.substr(examples)));
}

TEST_CASE("docs/database.md's query of the feasible trials' objective values gives the right answer", "[docs]") {
  const std::string doc = ReadDoc();
  const size_t start = doc.find("### `trial_values`");
  REQUIRE(start != std::string::npos);
  const std::vector<std::string> blocks = SqlBlocks(doc.substr(start, doc.find("\n## ", start) - start));
  REQUIRE(blocks.size() == 1);
  testing::TempDir dir;
  const std::string path = dir.File("tune.db");
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    ExperimentId e = *db->CreateExperiment("mo", "{}", 1);
    // 0: feasible; 1: breaks its constraint; 2: NaN constraint; 3: pruned.
    const std::vector<std::vector<double>> constraints = {{-1, 0}, {-1, 0.5}, {std::nan(""), -1}, {-1, -1}};
    for (int i = 0; i < 4; ++i) {
      TrialId t = db->CreateTrial(e, {{"lr", 0.1 * (i + 1)}})->id;
      REQUIRE(db->StartTrial(t, 0, "local").ok());
      const TrialState state = i == 3 ? TrialState::kPruned : TrialState::kCompleted;
      REQUIRE(db->FinishTrialWithValues(t, state, 1.5 + i, {1.5 + i, 2.0 * i}, constraints[i], std::nullopt, "done")
                  .ok());
    }
  }
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  SQLite::Statement q(raw, blocks[0]);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getInt() == 0);
  CHECK(q.getColumn(1).getString() == "1.5 0.0");
  CHECK_FALSE(q.executeStep());
}

TEST_CASE("the example queries of README.md give the right answers", "[docs]") {
  CheckExampleQueries(SqlBlocks(ReadDoc("README.md")));
}

TEST_CASE("docs/database.md documents every table and column of the schema", "[docs]") {
  const std::string doc = ReadDoc();
  testing::TempDir dir;
  const std::string path = dir.File("tune.db");
  REQUIRE(OpenSqliteStorage(path).ok());
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  SQLite::Statement tables(raw,
                           "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') "
                           "AND name NOT LIKE 'sqlite_%'");
  int count = 0;
  while (tables.executeStep()) {
    std::string table = tables.getColumn(0).getString();
    ++count;
    INFO("table " << table);
    size_t start = doc.find("### `" + table + "`");
    REQUIRE(start != std::string::npos);
    size_t end = doc.find("\n### ", start + 1);
    if (end == std::string::npos) end = doc.find("\n## ", start);
    const std::string section = doc.substr(start, end - start);
    SQLite::Statement cols(raw, "SELECT name FROM pragma_table_info(?)");
    cols.bind(1, table);
    int ncols = 0;
    while (cols.executeStep()) {
      std::string col = cols.getColumn(0).getString();
      ++ncols;
      INFO("column " << col);
      CHECK(section.find("| `" + col + "` |") != std::string::npos);
    }
    CHECK(ncols > 0);
  }
  CHECK(count == 9);  // eight tables and the observation_logs view
}

}  // namespace
}  // namespace tune
