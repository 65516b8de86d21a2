// `tune run --backend kubernetes` end to end while the cluster misbehaves:
// the real tune binary and the real kubectl against fake_apiserver.py with
// fault injection. Each test checks the recorded values, the trials' states
// and reasons, the exit status, that nothing labelled with the experiment
// is left, and that no kubectl process is left.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include <boost/filesystem.hpp>
#include <boost/process.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <SQLiteCpp/SQLiteCpp.h>

#include "k8s/render.h"
#include "tests/k8s/fake_cluster.h"

namespace tune {
namespace {

namespace bp = boost::process;
using nlohmann::json;
using testing::FakeCluster;
using Clock = std::chrono::steady_clock;

using testing::Slurp;

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// An experiment of `trials` grid points over synthetic_trial's --lr, with
// short API backoffs.
json Experiment(const FakeCluster& cluster, const std::string& name, std::vector<double> lrs, int steps,
                int sleep_ms) {
  return {{"name", name},
          {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
          {"parameters", {{"lr", {{"type", "grid"}, {"values", lrs}}}}},
          {"search", {{"algorithm", "grid"}}},
          {"scheduler", {{"type", "fifo"}}},
          {"limits", {{"max_trials", lrs.size()}, {"max_concurrent_trials", 3}}},
          {"trial",
           {{"command", {TUNE_BIN_DIR "/synthetic_trial", "--lr", "${lr}", "--steps", std::to_string(steps),
                         "--report-every", "5", "--sleep-ms", std::to_string(sleep_ms)}},
            {"workers", 1},
            {"resources_per_worker", {{"cpu", 0.1}}},
            {"max_retries", 0}}},
          {"backend",
           {{"type", "kubernetes"}, {"namespace", "default"}, {"image", "registry.example/tune:test"},
            {"kubeconfig", cluster.Options().kubeconfig}, {"api_backoff_initial_s", 0.1},
            {"api_backoff_max_s", 0.5}, {"api_call_timeout_s", 10}, {"api_deadline_s", 6}}},
          {"storage", {{"path", cluster.dir() + "/tune.db"}}}};
}

struct Run {
  int rc = -1;
  std::string out, err;
};

Run TuneRun(const FakeCluster& cluster, const json& exp, std::vector<std::string> extra = {}) {
  const std::string dir = cluster.dir();
  std::ofstream(dir + "/experiment.json") << exp.dump(2);
  std::vector<std::string> args = {"run", dir + "/experiment.json", "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  Run r;
  r.rc = bp::system(TUNE_BIN_DIR "/tune", bp::args = args, bp::std_out > dir + "/run.out",
                    bp::std_err > dir + "/run.err", bp::start_dir = dir);
  r.out = Slurp(dir + "/run.out");
  r.err = Slurp(dir + "/run.err");
  return r;
}

// `tune ARGS` in the cluster's directory.
Run Tune(const FakeCluster& cluster, std::vector<std::string> args) {
  const std::string dir = cluster.dir();
  // Boost.Process appends to an existing file: start from empty ones.
  boost::filesystem::remove(dir + "/cmd.out");
  boost::filesystem::remove(dir + "/cmd.err");
  Run r;
  r.rc = bp::system(TUNE_BIN_DIR "/tune", bp::args = args, bp::std_out > dir + "/cmd.out",
                    bp::std_err > dir + "/cmd.err", bp::start_dir = dir);
  r.out = Slurp(dir + "/cmd.out");
  r.err = Slurp(dir + "/cmd.err");
  return r;
}

json Trials(const FakeCluster& cluster) {
  const std::string dir = cluster.dir();
  int rc = bp::system(TUNE_BIN_DIR "/tune", "trials", "--db", dir + "/tune.db", "--format", "json",
                      bp::std_out > dir + "/trials.json", bp::std_err > dir + "/trials.err");
  REQUIRE(rc == 0);
  return json::parse(Slurp(dir + "/trials.json"));
}

std::string Sel(const std::string& name) { return std::string(kExperimentLabel) + "=" + ExperimentLabelValue(name); }

// synthetic_trial's last report, run here as the cluster would run it.
double TrueFinal(double lr, int steps) {
  bp::ipstream out;
  bp::child c(TUNE_BIN_DIR "/synthetic_trial", "--lr", std::to_string(lr), "--steps", std::to_string(steps),
              "--report-every", "5", bp::std_out > out, bp::env["RANK"] = "0");
  std::string line, last;
  while (std::getline(out, line)) {
    if (line.find("eval_loss=") != std::string::npos) last = line;
  }
  c.wait();
  size_t at = last.find("eval_loss=");
  REQUIRE(at != std::string::npos);
  return std::stod(last.substr(at + 10));
}

TEST_CASE("tune run: failed creates and deletes are retried, results are right, nothing is left",
          "[k8s][faults][e2e]") {
  FakeCluster cluster;
  const std::string name = "faults-run";
  // The first creates and deletes of Jobs fail (500 and 429), and the
  // first two polls.
  cluster.SetFaults(R"({"seed": 3, "rules": [
      {"verb": "POST", "path": "/jobs$", "status": [500, 429], "first": 2},
      {"verb": "DELETE", "path": "/jobs/", "status": 500, "first": 2},
      {"verb": "GET", "path": "/jobs$", "status": 503, "first": 2}]})");
  Run r = TuneRun(cluster, Experiment(cluster, name, {0.0003, 0.01}, 20, 20));
  INFO(r.out << r.err << cluster.FaultStats());
  CHECK(r.rc == 0);
  json trials = Trials(cluster);
  REQUIRE(trials.size() == 2);
  for (const json& t : trials) {
    CHECK(t["state"] == "completed");
    CHECK(t["attempts"] == 1);  // a retried call is not a failed attempt
    CHECK(t["value"].get<double>() == Approx(TrueFinal(t["params"]["lr"].get<double>(), 20)));
  }
  CHECK(json::parse(cluster.FaultStats())["status"] == 6);
  CHECK(cluster.Names("jobs,services,pods", Sel(name)).empty());
  CHECK(cluster.KubectlProcesses().empty());
}

TEST_CASE("tune run: deletes that always fail end the run with the leftovers and exit 1",
          "[k8s][faults][e2e]") {
  FakeCluster cluster;
  const std::string name = "faults-leftover";
  cluster.SetFaults(R"({"rules": [{"verb": "DELETE", "status": 500}]})");
  Run r = TuneRun(cluster, Experiment(cluster, name, {0.001}, 10, 10));
  INFO(r.out << r.err);
  CHECK(r.rc == 1);
  CHECK(r.err.find("could not delete") != std::string::npos);
  // The same kubeconfig and context as tune's calls (the context current
  // when the run started).
  const std::string command = "kubectl --kubeconfig=" + cluster.Options().kubeconfig +
                              " --context=fake -n default delete jobs,services,pods -l " + Sel(name) +
                              " --cascade=foreground";
  CHECK(r.err.find("delete them with: " + command + " (or run:") != std::string::npos);
  CHECK(r.err.find("(or run: tune cleanup --db " + cluster.dir() + "/tune.db --experiment " + name + ")") !=
        std::string::npos);
  json trials = Trials(cluster);
  REQUIRE(trials.size() == 1);
  CHECK(trials[0]["state"] == "completed");  // never left `running`
  CHECK(cluster.KubectlProcesses().empty());
  const std::string db = cluster.dir() + "/tune.db";
  const auto left = cluster.Names("jobs,services", Sel(name));
  REQUIRE(left.size() == 2);

  // tune cleanup: a dry run lists and deletes nothing.
  Run dry = Tune(cluster, {"cleanup", "--db", db, "--dry-run"});
  INFO(dry.out << dry.err);
  CHECK(dry.rc == 0);
  for (const std::string& o : left) CHECK(dry.out.find("would delete " + o + "\n") != std::string::npos);
  CHECK(cluster.Names("jobs,services", Sel(name)) == left);
  // While every delete fails: retried, then named, with the command; exit 1.
  Run failed = Tune(cluster, {"cleanup", "--db", db, "--experiment", name});
  INFO(failed.out << failed.err);
  CHECK(failed.rc == 1);
  CHECK(failed.err.find("could not delete") != std::string::npos);
  CHECK(failed.err.find("delete them with: " + command + "\n") != std::string::npos);
  CHECK(cluster.Names("jobs,services", Sel(name)) == left);
  // Once deletes work: everything labelled with the experiment goes.
  cluster.SetFaults("{}");
  Run ok = Tune(cluster, {"cleanup", "--db", db});
  INFO(ok.out << ok.err);
  CHECK(ok.rc == 0);
  for (const std::string& o : left) CHECK(ok.out.find("deleted " + o + "\n") != std::string::npos);
  CHECK(cluster.Names("jobs,services,pods", Sel(name)).empty());
  Run again = Tune(cluster, {"cleanup", "--db", db, "--experiment", name});
  CHECK(again.rc == 0);
  CHECK(again.out.find("nothing to delete") != std::string::npos);
  // An experiment the database does not hold: one sentence, exit 2.
  Run unknown = Tune(cluster, {"cleanup", "--db", db, "--experiment", "nope"});
  CHECK(unknown.rc == 2);
  CHECK(unknown.err == "tune: --experiment: no experiment 'nope' in " + db + " (tune status --db " + db +
                           " lists them)\n");
  CHECK(cluster.KubectlProcesses().empty());
}

TEST_CASE("tune run: the printed cleanup command reaches the same cluster from another shell",
          "[k8s][faults][e2e][cleanup]") {
  FakeCluster cluster;
  const std::string name = "faults-paste";
  // A kubeconfig whose path needs quoting, with a second context that
  // reaches nothing; the fake one is current while tune runs.
  const std::string conf_dir = cluster.dir() + "/kube conf";
  boost::filesystem::create_directory(conf_dir);
  const std::string kubeconfig = conf_dir + "/it's config.json";
  json conf = json::parse(Slurp(cluster.Options().kubeconfig));
  conf["clusters"].push_back({{"name", "elsewhere"}, {"cluster", {{"server", "https://127.0.0.1:1"}}}});
  conf["contexts"].push_back({{"name", "other"}, {"context", {{"cluster", "elsewhere"}, {"user", "fake"}}}});
  std::ofstream(kubeconfig) << conf.dump(2);
  json exp = Experiment(cluster, name, {0.001}, 10, 10);
  exp["backend"]["kubeconfig"] = kubeconfig;
  cluster.SetFaults(R"({"rules": [{"verb": "DELETE", "status": 500}]})");
  Run r = TuneRun(cluster, exp);
  INFO(r.out << r.err);
  CHECK(r.rc == 1);
  const std::string from = "delete them with: ", to = " (or run: tune cleanup";
  const size_t at = r.err.find(from), end = r.err.find(to);
  REQUIRE(at != std::string::npos);
  REQUIRE(end != std::string::npos);
  const std::string command = r.err.substr(at + from.size(), end - at - from.size());
  // Before: "kubectl -n default delete ...", which another shell runs
  // against its own kubeconfig and context.
  CHECK(command == "kubectl --kubeconfig='" + conf_dir + "/it'\\''s config.json' --context=fake -n default " +
                       "delete jobs,services,pods -l " + Sel(name) + " --cascade=foreground");
  REQUIRE(cluster.Names("jobs,services", Sel(name)).size() == 2);

  // Another shell: no KUBECONFIG, a HOME without ~/.kube, and the
  // kubeconfig's current context switched to the other cluster meanwhile.
  cluster.SetFaults("{}");
  conf["current-context"] = "other";
  std::ofstream(kubeconfig) << conf.dump(2);
  const std::string home = cluster.dir() + "/home";
  boost::filesystem::create_directory(home);
  bp::environment env;
  env["PATH"] = std::getenv("PATH");
  env["HOME"] = home;
  const int rc = bp::system("/bin/sh", "-c", command, env, bp::std_out > cluster.dir() + "/paste.out",
                            bp::std_err > cluster.dir() + "/paste.err");
  INFO(Slurp(cluster.dir() + "/paste.err"));
  CHECK(rc == 0);
  CHECK(cluster.Names("jobs,services,pods", Sel(name)).empty());
  CHECK(cluster.KubectlProcesses().empty());
}

TEST_CASE("tune run: a replaced rank-0 pod's dead reports never become the result", "[k8s][faults][e2e]") {
  FakeCluster cluster;
  const std::string name = "faults-replaced-run";
  json exp = Experiment(cluster, name, {0.001}, 10, 10);
  const std::string marker = cluster.dir() + "/first-pod-ran";
  exp["trial"]["command"] = {"/bin/sh", "-c",
                             "if [ ! -e " + marker + " ]; then touch " + marker +
                                 "; for i in 1 2 3; do echo step=$i eval_loss=9$i; sleep 0.2; done; exit 1; fi; "
                                 "sleep 0.5; for i in 1 2 3 4 5 6 7 8 9; do echo step=$i eval_loss=0.$i; done; "
                                 "echo step=10 eval_loss=0.1"};
  exp["backend"]["backoff_limit"] = 1;
  Run r = TuneRun(cluster, exp);
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  json trials = Trials(cluster);
  REQUIRE(trials.size() == 1);
  CHECK(trials[0]["state"] == "completed");
  CHECK(trials[0]["value"].get<double>() == Approx(0.1));
  CHECK(trials[0]["attempts"] == 1);  // a replaced pod is not a failed attempt
  // The dead pod's reports are kept, excluded as "replaced pod"; the new
  // pod's ten count.
  SQLite::Database db(cluster.dir() + "/tune.db", SQLite::OPEN_READONLY);
  SQLite::Statement q(db, "SELECT step, value, excluded FROM observation_logs WHERE metric = 'eval_loss' "
                          "ORDER BY report_id");
  std::vector<std::tuple<int64_t, double, std::string>> rows;
  while (q.executeStep()) {
    rows.emplace_back(q.getColumn(0).getInt64(), q.getColumn(1).getDouble(),
                      q.getColumn(2).isNull() ? "" : q.getColumn(2).getString());
  }
  REQUIRE(rows.size() == 13);
  for (int i = 0; i < 3; ++i) {
    CHECK(std::get<0>(rows[i]) == i + 1);
    CHECK(std::get<1>(rows[i]) == Approx(91 + i));
    CHECK(std::get<2>(rows[i]) == "replaced pod");
  }
  for (int i = 3; i < 13; ++i) {
    CHECK(std::get<0>(rows[i]) == i - 2);
    CHECK(std::get<2>(rows[i]) == "");
  }
  CHECK(db.execAndGet("SELECT last_step FROM trials").getInt64() == 10);
  CHECK(cluster.Names("jobs,services,pods", Sel(name)).empty());
  CHECK(cluster.KubectlProcesses().empty());
}

TEST_CASE("tune run: the preflight refuses before the database is touched", "[k8s][faults][e2e][preflight]") {
  SECTION("no such namespace") {
    FakeCluster cluster;
    json exp = Experiment(cluster, "faults-ns", {0.001}, 5, 0);
    exp["backend"]["namespace"] = "missing";
    Run r = TuneRun(cluster, exp);
    CHECK(r.rc == 2);
    CHECK(r.err.find("namespace 'missing' does not exist") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one message, once
    CHECK_FALSE(Exists(cluster.dir() + "/tune.db"));
  }
  SECTION("RBAC") {
    FakeCluster cluster({"--deny", "create:jobs"});
    Run r = TuneRun(cluster, Experiment(cluster, "faults-rbac", {0.001}, 5, 0));
    CHECK(r.rc == 2);
    CHECK(r.err.find("RBAC") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(Exists(cluster.dir() + "/tune.db"));
  }
}

// Starts tune run in the background; returns once `name` has `jobs` Jobs.
bp::child StartTune(const FakeCluster& cluster, const json& exp, const std::string& name, size_t jobs,
                    std::vector<std::string> extra = {}) {
  const std::string dir = cluster.dir();
  std::ofstream(dir + "/experiment.json") << exp.dump(2);
  std::vector<std::string> args = {"run", dir + "/experiment.json", "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  bp::child c(TUNE_BIN_DIR "/tune", bp::args = args, bp::std_out > dir + "/bg.out", bp::std_err > dir + "/bg.err",
              bp::start_dir = dir);
  for (int i = 0; i < 300 && cluster.Names("jobs", Sel(name)).size() < jobs; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return c;
}

TEST_CASE("tune run: Ctrl-C with a hung API server ends tune in seconds and leaves the Jobs",
          "[k8s][faults][e2e][interrupt]") {
  FakeCluster cluster;
  const std::string name = "faults-hung";
  bp::child tune = StartTune(cluster, Experiment(cluster, name, {0.001, 0.01}, 400, 50), name, 2);
  REQUIRE(cluster.Names("jobs", Sel(name)).size() == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  cluster.SetFaults(R"({"rules": [{"hang": true}]})");
  std::this_thread::sleep_for(std::chrono::seconds(2));  // calls pile up on the hung server
  auto start = Clock::now();
  ::kill(tune.id(), SIGINT);
  std::error_code ec;
  bool ended = tune.wait_for(std::chrono::seconds(30), ec);
  double took = std::chrono::duration<double>(Clock::now() - start).count();
  if (!ended) tune.terminate(ec);
  INFO(Slurp(cluster.dir() + "/bg.out") << Slurp(cluster.dir() + "/bg.err"));
  REQUIRE(ended);
  // Seconds, not the minutes (or never) of a tuner that waits for the hung
  // calls. (8 s, the hung calls' api_call_timeout_s less the 2 s above, was
  // seen under load while the stop watcher could miss the flag; now 0.04 to
  // 0.3 s, also at a load average of 30.)
  CHECK(took < 5);
  CHECK(tune.exit_code() == 130);
  CHECK(cluster.KubectlProcesses().empty());
  cluster.SetFaults("{}");
  // The Jobs are left for --resume.
  CHECK(cluster.Names("jobs", Sel(name)).size() == 2);
  REQUIRE(cluster.Cli().Check({"delete", "jobs,services,pods", "-l", Sel(name), "--cascade=foreground"}).ok());
}

TEST_CASE("tune cleanup refuses an experiment that a tune run is running", "[k8s][faults][e2e][cleanup]") {
  FakeCluster cluster;
  const std::string name = "cleanup-busy";
  bp::child tune = StartTune(cluster, Experiment(cluster, name, {0.001}, 400, 50), name, 1);
  REQUIRE(cluster.Names("jobs", Sel(name)).size() == 1);
  const std::string db = cluster.dir() + "/tune.db";
  Run named = Tune(cluster, {"cleanup", "--db", db, "--experiment", name});
  INFO(named.out << named.err);
  CHECK(named.rc == 2);
  CHECK(named.err.find("experiment '" + name + "' in " + db + " is being run by another tune process") !=
        std::string::npos);
  Run all = Tune(cluster, {"cleanup", "--db", db});
  INFO(all.out << all.err);
  CHECK(all.rc == 1);  // skipped, and said so
  CHECK(all.err.find("is being run by another tune process") != std::string::npos);
  CHECK(cluster.Names("jobs", Sel(name)).size() == 1);  // untouched
  ::kill(tune.id(), SIGINT);
  std::error_code ec;
  if (!tune.wait_for(std::chrono::seconds(30), ec)) tune.terminate(ec);
  CHECK(tune.exit_code() == 130);
  // The interrupted run left its Job for --resume; now cleanup may delete it.
  REQUIRE(cluster.Names("jobs", Sel(name)).size() == 1);
  Run after = Tune(cluster, {"cleanup", "--db", db, "--experiment", name});
  INFO(after.out << after.err);
  CHECK(after.rc == 0);
  CHECK(after.out.find("deleted job.batch/") != std::string::npos);
  CHECK(cluster.Names("jobs,services,pods", Sel(name)).empty());
  CHECK(cluster.KubectlProcesses().empty());
}

TEST_CASE("tune run --resume adopts running Jobs and harvests finished ones", "[k8s][faults][e2e][resume]") {
  FakeCluster cluster;
  const std::string name = "faults-resume";
  // Trials 0 and 1 end about 6 s after they start (enough for tune to
  // create all three Jobs on a loaded machine), trial 2 about 15 s.
  json exp = Experiment(cluster, name, {0.001}, 60, 50);
  exp["parameters"] = {{"steps", {{"type", "grid"}, {"values", {120, 130, 300}}}}};
  exp["trial"]["command"] = {TUNE_BIN_DIR "/synthetic_trial", "--lr", "0.001", "--steps", "${steps}",
                             "--report-every", "5", "--sleep-ms", "50"};
  exp["limits"]["max_trials"] = 3;
  bp::child tune = StartTune(cluster, exp, name, 3);
  REQUIRE(cluster.Names("jobs", Sel(name)).size() == 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // trial 2's start is recorded
  ::kill(tune.id(), SIGKILL);  // tune dies without a word; its kubectl with it
  tune.wait();
  // Its kubectl children die with it (PR_SET_PDEATHSIG), a moment later.
  for (int i = 0; i < 30 && !cluster.KubectlProcesses().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO(cluster.KubectlProcesses().size() << " kubectl processes left");
  CHECK(cluster.KubectlProcesses().empty());
  // The trials the database calls running are the ones to adopt (trial 0
  // may have ended before the kill on a slow machine; trial 1 must not
  // have, or its Job could not be gone on resume).
  int expect_adopted = 0;
  for (const json& t : Trials(cluster)) {
    if (t["number"] == 1) REQUIRE(t["state"] == "running");
    if (t["number"] != 1 && t["state"] == "running") ++expect_adopted;
  }
  REQUIRE(expect_adopted >= 1);  // trial 2 runs on
  // The short trials' Jobs finish while tune is down; the long one runs on.
  for (int i = 0; i < 200; ++i) {
    auto done = cluster.Cli().Check({"get", "jobs", "-l", Sel(name), "-o",
                                     "jsonpath={.items[*].status.conditions[?(@.type==\"Complete\")].status}"});
    if (done.ok() && *done == "True True") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Trial 1's Job is gone before tune comes back (deleted, or its TTL ran
  // out): it is run again, and says why.
  const std::string gone = KubernetesObjectName(name, 1, 0);
  REQUIRE(cluster.Cli().Check({"delete", "job/" + gone, "--cascade=foreground", "--wait=true"}).ok());
  Run r = TuneRun(cluster, exp, {"--resume"});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(r.out.find(expect_adopted == 2 ? "adopted the Kubernetes Jobs of 2 trials"
                                        : "adopted the Kubernetes Jobs of 1 trial ") != std::string::npos);
  CHECK(r.out.find("tune: trial 1: its Job was gone on resume, so it runs again\n") != std::string::npos);
  json trials = Trials(cluster);
  REQUIRE(trials.size() == 3);  // each trial counted once
  for (const json& t : trials) {
    INFO("trial " << t["number"]);
    CHECK(t["state"] == "completed");
    CHECK(t["value"].get<double>() == Approx(TrueFinal(0.001, t["params"]["steps"].get<int>())));
    if (t["number"] == 1) {
      // Rerun as a new attempt, a new Job.
      CHECK(t["attempts"] == 2);
      CHECK(t["location"].get<std::string>().find("-a1") != std::string::npos);
    } else {
      // Harvested from (or followed on) the first Job's log, not rerun; the
      // adopted Job is the same attempt.
      CHECK(t["attempts"] == 1);
      CHECK(t["location"].get<std::string>().find("-a0") != std::string::npos);
    }
  }
  // An adopted trial's reports stored before the kill are kept, excluded;
  // what counts is its whole log, read again once.
  SQLite::Database db(cluster.dir() + "/tune.db", SQLite::OPEN_READONLY);
  CHECK(db.execAndGet("SELECT count(*) FROM observation_logs WHERE trial_number = 2 AND metric = 'eval_loss' "
                      "AND excluded IS NULL").getInt() == 300 / 5);
  CHECK(db.execAndGet("SELECT count(*) FROM observation_logs WHERE trial_number = 2 AND metric = 'eval_loss' "
                      "AND excluded IS NOT NULL AND excluded <> 'read again on resume'").getInt() == 0);
  CHECK(cluster.Names("jobs,services,pods", Sel(name)).empty());
  CHECK(cluster.KubectlProcesses().empty());
}

}  // namespace
}  // namespace tune
