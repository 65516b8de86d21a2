// The tracking URI where a user meets it: `tune validate` and `tune run`
// (the real binary) with tracking.mlflow.tracking_uri values that used to
// pass validation and then abort the run (issue 28 point 4: a port past
// 2^31), and with credentials in the URI, which must log in to the server
// (a loopback stand-in, tests/tracking/mlflow_fakes.h) but appear in no
// output and nowhere in the database (point 9).
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_util.h"
#include "tests/tracking/mlflow_fakes.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;

json Spec(const json& mlflow) {
  return {{"name", "creds"},
          {"objective", {{"metric", "loss"}, {"mode", "min"}}},
          {"parameters", {{"x", {{"type", "uniform"}, {"low", 0}, {"high", 1}}}}},
          {"search", {{"algorithm", "random"}, {"seed", 1}}},
          {"limits", {{"max_trials", 3}, {"max_concurrent_trials", 3}}},
          {"trial", {{"command", {"/bin/echo", "loss=${x}"}}}},
          {"tracking", {{"mlflow", mlflow}}}};
}

std::string Write(const fs::path& dir, const json& spec) {
  const fs::path p = dir / "experiment.json";
  std::ofstream(p) << spec.dump(2);
  return p.string();
}

// Every byte of the database files (the file, its WAL and shared memory).
std::string DatabaseBytes(const std::string& db) {
  std::string all;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::ifstream f(db + suffix, std::ios::binary);
    all.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return all;
}

TEST_CASE("tune validate refuses a tracking_uri port outside 1-65535, and tune run says why instead of aborting",
          "[tracking][mlflow][e2e]") {
  TempDir dir;
  for (const char* port : {"2147483648", "99999999999999999999", "65536", "0"}) {
    INFO(port);
    const std::string path = Write(dir.path, Spec({{"tracking_uri", std::string("http://127.0.0.1:") + port}}));
    for (const std::string& command : {"validate " + Quote(path),
                                       "run " + Quote(path) + " --db " + Quote((dir.path / "t.db").string())}) {
      Output o = Sh(Tune(command));
      INFO(command << o.out);
      CHECK(o.code == 2);
      CHECK(o.out.find(path + ": tracking.mlflow.tracking_uri: expected an http:// or https:// URL of an MLflow "
                              "tracking server with a port from 1 to 65535 after the host") != std::string::npos);
      CHECK(o.out.find("terminate") == std::string::npos);
    }
  }
  CHECK(!fs::exists(dir.path / "t.db"));
  // The same URI from the environment: checked when tune run starts.
  const std::string path = Write(dir.path, Spec(true));
  Output o = Sh("MLFLOW_TRACKING_URI=http://127.0.0.1:2147483648 " +
                Tune("run " + Quote(path) + " --db " + Quote((dir.path / "t.db").string())));
  INFO(o.out);
  CHECK(o.code == 2);
  CHECK(o.out.find("MLFLOW_TRACKING_URI: expected an http:// or https:// URL of an MLflow tracking server with a port "
                   "from 1 to 65535 after the host, got \"http://127.0.0.1:2147483648\"") != std::string::npos);
  CHECK(!fs::exists(dir.path / "t.db"));

  // A parent-run tag MLflow would refuse (it would stop all logging) is
  // refused by tune validate.
  const std::string tagged = Write(dir.path, Spec({{"tags", {{"acc(%)", "x"}}}}));
  Output tag = Sh(Tune("validate " + Quote(tagged)));
  INFO(tag.out);
  CHECK(tag.code == 2);
  CHECK(tag.out.find(tagged + ": tracking.mlflow.tags[\"acc(%)\"]: expected a tag key MLflow takes (letters, digits, "
                     "'_', '-', '.', ' ', ':' and '/', a normalised path); this one has a character other than") !=
        std::string::npos);
}

TEST_CASE("credentials in tracking_uri log in but are printed nowhere and stored nowhere", "[tracking][mlflow][e2e]") {
  tune::testing::FakeMlflow server;
  TempDir dir;
  const std::string hostport = "127.0.0.1:" + std::to_string(server.port());
  // The password has characters that JSON and URLs escape.
  const std::string uri = "http://alice:s3cr%2Ft@" + hostport + "/";
  const std::string path = Write(dir.path, Spec({{"tracking_uri", uri}, {"tags", {{"team", "nlp"}}}}));
  const std::string db = (dir.path / "t.db").string();

  Output validate = Sh(Tune("validate " + Quote(path)));
  INFO(validate.out);
  REQUIRE(validate.code == 0);
  CHECK(validate.out.find("tracking    MLflow at http://***@" + hostport + "/") != std::string::npos);

  // A tracking_uri that does not parse is quoted masked.
  const std::string bad = Write(dir.path, Spec({{"tracking_uri", "http://alice:s3cr%2Ft@" + hostport + ":1"}}));
  Output refused = Sh(Tune("validate " + Quote(bad)));
  INFO(refused.out);
  CHECK(refused.code == 2);
  CHECK(refused.out.find("got \"http://***@" + hostport + ":1\"") != std::string::npos);

  Write(dir.path, Spec({{"tracking_uri", uri}, {"tags", {{"team", "nlp"}}}}));
  Output run = Sh("MLFLOW_TRACKING_USERNAME= MLFLOW_TRACKING_PASSWORD= MLFLOW_TRACKING_TOKEN= " +
                  Tune("run " + Quote(path) + " --db " + Quote(db)));
  INFO(run.out);
  REQUIRE(run.code == 0);
  CHECK(run.out.find("not delivered") == std::string::npos);
  // Logged in with them: every request carried alice:s3cr/t.
  auto seen = server.seen();
  REQUIRE(!seen.empty());
  for (const auto& s : seen) CHECK(s.authorization == "Basic YWxpY2U6czNjci90");
  // The stored experiment.json keeps its layout and loses the credentials.
  Output stored = Sh("sqlite3 " + Quote(db) + " 'SELECT spec_json FROM experiments'");
  json spec = json::parse(stored.out);
  CHECK(spec["tracking"]["mlflow"]["tracking_uri"] == "http://" + hostport);
  CHECK(spec["tracking"]["mlflow"]["tags"]["team"] == "nlp");
  CHECK(stored.out.find("\n  \"tracking\"") != std::string::npos);

  for (const std::string& text : {run.out, validate.out, refused.out, DatabaseBytes(db)}) {
    CHECK(text.find("s3cr") == std::string::npos);
    CHECK(text.find("alice") == std::string::npos);
  }
}

}  // namespace
