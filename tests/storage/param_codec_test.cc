// Params round-trip exactly by type and bits, through JSON text and through
// a real database file.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <random>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/param_codec.h"
#include "storage/storage.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

// Same type and, for doubles, the same 64 bits (0.0 vs -0.0 included).
void CheckExact(const ParamMap& want, const ParamMap& got) {
  REQUIRE(want.size() == got.size());
  for (const auto& [name, v] : want) {
    INFO("parameter " << name << " = " << ParamToString(v));
    REQUIRE(got.count(name) == 1);
    const ParamValue& g = got.at(name);
    REQUIRE(g.index() == v.index());
    if (auto* d = std::get_if<double>(&v)) {
      double gd = std::get<double>(g);
      CHECK(std::memcmp(d, &gd, sizeof gd) == 0);
    } else {
      CHECK(ParamEquals(v, g));
    }
  }
}

ParamMap Tricky() {
  ParamMap p = {
      {"int_max", std::numeric_limits<int64_t>::max()},
      {"int_min", std::numeric_limits<int64_t>::min()},
      {"int_zero", int64_t{0}},
      {"float_whole", 8.0},  // must stay a float, not become the int 8
      {"float_neg_zero", -0.0},
      {"float_tiny", std::numeric_limits<double>::denorm_min()},
      {"float_max", std::numeric_limits<double>::max()},
      {"float_third", 1.0 / 3.0},
      {"float_lr", 3.0e-5},
      {"bool_t", true},
      {"bool_f", false},
      {"str", std::string("adamw")},
      {"str_number", std::string("16")},  // a string that looks like a number
      {"str_true", std::string("true")},
      {"str_tricky", std::string("quote\" back\\slash\nnew line, comma \xc3\xa9")},
      {"str_empty", std::string()},
  };
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 200; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    p["random_" + std::to_string(i)] = d;
  }
  return p;
}

TEST_CASE("params round-trip through their JSON text by type and bits", "[storage][params]") {
  ParamMap p = Tricky();
  auto back = ParamsFromJson(ParamsToJson(p));
  REQUIRE(back.ok());
  CheckExact(p, *back);
}

TEST_CASE("params JSON that is not a flat object is refused", "[storage][params]") {
  for (const char* bad : {"[1, 2]", "{\"a\": null}", "{\"a\": [1]}", "{\"a\": {\"b\": 1}}",
                          "{\"a\": 18446744073709551615}", "not json", ""}) {
    INFO(bad);
    CHECK(ParamsFromJson(bad).status().IsInvalidArgument());
  }
  CHECK(ParamsFromJson("{}")->empty());
}

TEST_CASE("params round-trip through a database file and fill trial_params", "[storage][params]") {
  testing::TempDir dir;
  const std::string path = dir.File("params.db");
  ParamMap p = Tricky();
  TrialId id = 0;
  {
    auto db = std::move(OpenSqliteStorage(path)).value();
    ExperimentId e = *db->CreateExperiment("exp", "{}", 1);
    auto t = db->CreateTrial(e, p);
    REQUIRE(t.ok());
    CheckExact(p, t->params);
    id = t->id;
  }
  auto db = std::move(OpenSqliteStorage(path)).value();
  auto e = db->FindExperiment("exp");
  REQUIRE(e.ok());
  CheckExact(p, (*db->ListTrials(e->id))[0].params);
  CheckExact(p, (*db->ListTrialRecords(e->id))[0].trial.params);

  // One row per parameter, typed, filterable by number in plain SQL.
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  CHECK(raw.execAndGet("SELECT count(*) FROM trial_params WHERE trial_id = " + std::to_string(id))
            .getInt() == static_cast<int>(p.size()));
  SQLite::Statement q(raw, "SELECT type, value_text, value_num FROM trial_params WHERE name = ?");
  q.bind(1, "int_min");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "int");
  CHECK(q.getColumn(1).getString() == "-9223372036854775808");
  CHECK(q.getColumn(2).getInt64() == std::numeric_limits<int64_t>::min());
  q.reset();
  q.bind(1, "float_third");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "float");
  CHECK(q.getColumn(2).getDouble() == 1.0 / 3.0);
  q.reset();
  q.bind(1, "bool_t");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "bool");
  CHECK(q.getColumn(1).getString() == "true");
  CHECK(q.getColumn(2).getInt() == 1);
  q.reset();
  q.bind(1, "str_number");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "string");
  CHECK(q.getColumn(1).getString() == "16");
  CHECK(q.getColumn(2).isNull());
}

}  // namespace
}  // namespace tune
