// `tune run` with backend.job_kind "pytorchjob" and "trainjob" when things
// go wrong: tune is killed and resumed (the adopted PyTorchJob or TrainJob
// is the same attempt, a finished one is harvested from its log), rank 0 is
// killed and runs again under its pod name (the training operator makes
// the pod again; the kubelet restarts a TrainJob's container in place),
// and the API server answers 500. The real tune and kubectl against fake_apiserver.py playing
// the Kubeflow operators (tests/k8s/fake_kubeflow.py). Each test checks the
// recorded values and states, and that nothing is left.
#include <signal.h>

#include <chrono>
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

using testing::Slurp;

// The kind's resource and the command that runs synthetic_trial with rank 0
// on the Master (PyTorchJob: the operator's RANK) or node 0 (TrainJob: the
// runtime's PET_NODE_RANK).
struct Kind {
  std::string job_kind, resource;
  json Command(const std::string& args) const {
    std::string rank = job_kind == "trainjob" ? "RANK=$PET_NODE_RANK " : "";
    return json::array({"/bin/sh", "-c", rank + "exec " TUNE_BIN_DIR "/synthetic_trial " + args});
  }
};
const Kind kPyTorchJob{"pytorchjob", "pytorchjobs.kubeflow.org"};
const Kind kTrainJob{"trainjob", "trainjobs.trainer.kubeflow.org"};

std::string Sel(const std::string& name) { return std::string(kExperimentLabel) + "=" + ExperimentLabelValue(name); }

// A grid over synthetic_trial's --steps (report every 5, `sleep_ms` a
// step), 2 workers, short API backoffs.
json Experiment(const FakeCluster& cluster, const Kind& kind, const std::string& name, std::vector<int> steps,
                int sleep_ms) {
  return {{"name", name},
          {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
          {"parameters", {{"steps", {{"type", "grid"}, {"values", steps}}}}},
          {"search", {{"algorithm", "grid"}}},
          {"scheduler", {{"type", "fifo"}}},
          {"limits", {{"max_trials", steps.size()}, {"max_concurrent_trials", 3}}},
          {"trial",
           {{"command", kind.Command("--lr 0.001 --steps ${steps} --report-every 5 --sleep-ms " +
                                     std::to_string(sleep_ms))},
            {"workers", 2},
            {"resources_per_worker", {{"cpu", 0.1}}},
            {"max_retries", 0}}},
          {"backend",
           {{"type", "kubernetes"}, {"job_kind", kind.job_kind}, {"namespace", "default"},
            {"image", "registry.example/tune:test"}, {"kubeconfig", cluster.Options().kubeconfig},
            {"api_backoff_initial_s", 0.1}, {"api_backoff_max_s", 0.5}, {"api_call_timeout_s", 10},
            {"api_deadline_s", 6}}},
          {"storage", {{"path", cluster.dir() + "/tune.db"}}}};
}

struct Run {
  int rc = -1;
  std::string out, err;
};

Run TuneRun(const FakeCluster& cluster, const json& exp, std::vector<std::string> extra = {}) {
  const std::string dir = cluster.dir();
  std::ofstream(dir + "/experiment.json") << exp.dump(2);
  for (const char* f : {"/run.out", "/run.err"}) boost::filesystem::remove(dir + f);
  std::vector<std::string> args = {"run", dir + "/experiment.json", "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  Run r;
  r.rc = bp::system(TUNE_BIN_DIR "/tune", bp::args = args, bp::std_out > dir + "/run.out",
                    bp::std_err > dir + "/run.err", bp::start_dir = dir);
  r.out = Slurp(dir + "/run.out");
  r.err = Slurp(dir + "/run.err");
  return r;
}

// Starts tune run in the background; returns once `name` has `jobs`
// objects of the kind.
bp::child StartTune(const FakeCluster& cluster, const Kind& kind, const json& exp, const std::string& name,
                    size_t jobs) {
  const std::string dir = cluster.dir();
  std::ofstream(dir + "/experiment.json") << exp.dump(2);
  for (const char* f : {"/bg.out", "/bg.err"}) boost::filesystem::remove(dir + f);
  bp::child c(TUNE_BIN_DIR "/tune", "run", dir + "/experiment.json", "--quiet", bp::std_out > dir + "/bg.out",
              bp::std_err > dir + "/bg.err", bp::start_dir = dir);
  for (int i = 0; i < 300 && cluster.Names(kind.resource, Sel(name)).size() < jobs; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return c;
}

json Trials(const FakeCluster& cluster) {
  const std::string dir = cluster.dir();
  // Boost.Process appends to an existing file: start from empty ones.
  for (const char* f : {"/trials.json", "/trials.err"}) boost::filesystem::remove(dir + f);
  int rc = bp::system(TUNE_BIN_DIR "/tune", "trials", "--db", dir + "/tune.db", "--format", "json",
                      bp::std_out > dir + "/trials.json", bp::std_err > dir + "/trials.err");
  REQUIRE(rc == 0);
  return json::parse(Slurp(dir + "/trials.json"));
}

// synthetic_trial's last eval_loss, run here as rank 0.
double TrueFinal(int steps) {
  bp::ipstream out;
  bp::child c(TUNE_BIN_DIR "/synthetic_trial", "--lr", "0.001", "--steps", std::to_string(steps), "--report-every",
              "5", bp::std_out > out, bp::env["RANK"] = "0");
  std::string line, last;
  while (std::getline(out, line)) {
    if (line.find("eval_loss=") != std::string::npos) last = line;
  }
  c.wait();
  size_t at = last.find("eval_loss=");
  REQUIRE(at != std::string::npos);
  return std::stod(last.substr(at + 10));
}

// The kind's objects, its operator's pods and Services, and kubectl
// processes: none left.
void CheckNothingLeft(const FakeCluster& cluster, const Kind& kind, const std::string& name) {
  CHECK(cluster.Names(kind.resource, Sel(name)).empty());
  CHECK(cluster.Names("pods,services", "training.kubeflow.org/job-name").empty());
  CHECK(cluster.Names("pods", "jobset.sigs.k8s.io/jobset-name").empty());
  CHECK(cluster.KubectlProcesses().empty());
}

// As the Job version in tune_faults_test.cc: tune dies (SIGKILL) with three
// trials running; two end while it is down, one of them is deleted; on
// --resume the running one is followed and the finished one harvested as
// the same attempt, the deleted one runs again.
TEST_CASE("tune run --resume adopts running PyTorchJobs and TrainJobs and harvests finished ones",
          "[k8s][kubeflow][faults][e2e][resume]") {
  FakeCluster cluster(testing::KubeflowFlags());
  for (const Kind& kind : {kPyTorchJob, kTrainJob}) {
    INFO(kind.job_kind);
    const std::string name = "kf-resume-" + kind.job_kind;
    // Trials 0 and 1 end about 6 s after they start, trial 2 about 15 s.
    json exp = Experiment(cluster, kind, name, {120, 130, 300}, 50);
    boost::filesystem::remove(cluster.dir() + "/tune.db");
    bp::child tune = StartTune(cluster, kind, exp, name, 3);
    REQUIRE(cluster.Names(kind.resource, Sel(name)).size() == 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // trial 2's start is recorded
    ::kill(tune.id(), SIGKILL);
    tune.wait();
    for (int i = 0; i < 30 && !cluster.KubectlProcesses().empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK(cluster.KubectlProcesses().empty());
    // The trials the database calls running are the ones to adopt (trial 0
    // may have ended before the kill on a slow machine; trial 1 must not
    // have, or its job could not be gone on resume).
    int expect_adopted = 0;
    for (const json& t : Trials(cluster)) {
      if (t["number"] == 1) REQUIRE(t["state"] == "running");
      if (t["number"] != 1 && t["state"] == "running") ++expect_adopted;
    }
    REQUIRE(expect_adopted >= 1);  // trial 2 runs on
    // The short trials' jobs finish while tune is down; the long one runs on.
    const std::string done_type = kind.job_kind == "pytorchjob" ? "Succeeded" : "Complete";
    for (int i = 0; i < 200; ++i) {
      auto done = cluster.Cli().Check({"get", kind.resource, "-l", Sel(name), "-o",
                                       "jsonpath={.items[*].status.conditions[?(@.type==\"" + done_type +
                                           "\")].status}"});
      if (done.ok() && *done == "True True") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // Trial 1's job is gone before tune comes back: it runs again.
    const std::string gone = KubernetesObjectName(name, 1, 0);
    REQUIRE(cluster.Cli().Check({"delete", kind.resource + "/" + gone, "--cascade=foreground", "--wait=true"}).ok());
    Run r = TuneRun(cluster, exp, {"--resume"});
    INFO(r.out << r.err);
    CHECK(r.rc == 0);
    const std::string plural = kind.job_kind == "pytorchjob" ? "PyTorchJobs" : "TrainJobs";
    CHECK(r.out.find("tune: adopted the " + plural + " of " + std::to_string(expect_adopted) + " trial" +
                     (expect_adopted == 1 ? " " : "s ")) != std::string::npos);
    CHECK(r.out.find("tune: trial 1: its " + plural.substr(0, plural.size() - 1) +
                     " was gone on resume, so it runs again\n") != std::string::npos);
    json trials = Trials(cluster);
    REQUIRE(trials.size() == 3);
    for (const json& t : trials) {
      INFO("trial " << t["number"]);
      CHECK(t["state"] == "completed");
      CHECK(t["value"].get<double>() == Approx(TrueFinal(t["params"]["steps"].get<int>())));
      CHECK(t["location"].get<std::string>().rfind("k8s:default/" + kind.job_kind + "/", 0) == 0);
      if (t["number"] == 1) {
        CHECK(t["attempts"] == 2);  // rerun as a new attempt, a new job
        CHECK(t["location"].get<std::string>().find("-a1") != std::string::npos);
      } else {
        CHECK(t["attempts"] == 1);  // the adopted job is the same attempt
        CHECK(t["location"].get<std::string>().find("-a0") != std::string::npos);
      }
    }
    // The adopted trial's whole log counts, read once; the reports stored
    // before the kill are kept, excluded as read again.
    SQLite::Database db(cluster.dir() + "/tune.db", SQLite::OPEN_READONLY);
    CHECK(db.execAndGet("SELECT count(*) FROM observation_logs WHERE trial_number = 2 AND metric = 'eval_loss' "
                        "AND excluded IS NULL").getInt() == 300 / 5);
    CHECK(db.execAndGet("SELECT count(*) FROM observation_logs WHERE trial_number = 2 AND metric = 'eval_loss' "
                        "AND excluded IS NOT NULL AND excluded <> 'read again on resume'").getInt() == 0);
    CheckNothingLeft(cluster, kind, name);
  }
}

// As issue 22 asks for Jobs: rank 0 runs again under the same pod name,
// and the dead run's reports are stored as excluded, the new run speaks for
// the attempt, and the value is its. PyTorchJob: the training operator
// makes the killed master pod (exit 137, restartPolicy ExitCode, which tune
// renders for backend.backoff_limit > 0) again under its name. TrainJob:
// the kubelet restarts the killed node-0 container in place (the JobSet's
// restartPolicy OnFailure).
TEST_CASE("tune run: rank 0 run again under its pod name speaks anew and the dead run's reports are excluded",
          "[k8s][kubeflow][faults][e2e]") {
  FakeCluster cluster(testing::KubeflowFlags());
  for (const Kind& kind : {kPyTorchJob, kTrainJob}) {
    INFO(kind.job_kind);
    const std::string name = "kf-replaced-" + kind.job_kind;
    json exp = Experiment(cluster, kind, name, {60}, 50);  // 3 s
    exp["backend"]["backoff_limit"] = 1;
    boost::filesystem::remove(cluster.dir() + "/tune.db");
    // The first rank-0 pod is killed after it has run 1 s (about 4 reports).
    const int replaced_before = json::parse(cluster.FaultStats())["pods_replaced"];  // counts add up
    cluster.SetFaults(R"({"replace_pods": {"first": 1, "after": 1.0, "index": 0}})");
    Run r = TuneRun(cluster, exp);
    INFO(r.out << r.err << cluster.FaultStats());
    CHECK(r.rc == 0);
    CHECK(json::parse(cluster.FaultStats())["pods_replaced"] == replaced_before + 1);
    json trials = Trials(cluster);
    REQUIRE(trials.size() == 1);
    CHECK(trials[0]["state"] == "completed");
    CHECK(trials[0]["attempts"] == 1);  // a replaced pod is not a failed attempt
    CHECK(trials[0]["value"].get<double>() == Approx(TrueFinal(60)));
    // The dead run's reports are kept, excluded as "replaced pod"; then the
    // new run's twelve reports (steps 5..60) count, each once.
    {
      SQLite::Database db(cluster.dir() + "/tune.db", SQLite::OPEN_READONLY);
      SQLite::Statement q(db,
                          "SELECT step, excluded FROM observation_logs WHERE metric = 'eval_loss' ORDER BY report_id");
      std::vector<std::pair<int64_t, std::string>> rows;
      while (q.executeStep()) {
        rows.emplace_back(q.getColumn(0).getInt64(), q.getColumn(1).isNull() ? "" : q.getColumn(1).getString());
      }
      REQUIRE(rows.size() > 12);
      const size_t dead = rows.size() - 12;
      CHECK(dead < 12);  // killed before its end
      for (size_t i = 0; i < rows.size(); ++i) {
        INFO("report " << i);
        if (i < dead) {
          CHECK(rows[i].first == static_cast<int64_t>(5 * (i + 1)));
          CHECK(rows[i].second == "replaced pod");
        } else {
          CHECK(rows[i].first == static_cast<int64_t>(5 * (i - dead + 1)));
          CHECK(rows[i].second == "");
        }
      }
      CHECK(db.execAndGet("SELECT last_step FROM trials").getInt64() == 60);
    }
    // rank_0.log says where the new run's log begins.
    std::string log = Slurp(cluster.dir() + "/tune_runs/" + name + "/trial_0000/rank_0.log");
    CHECK(log.find(kind.job_kind == "pytorchjob" ? "was replaced by a new pod of the same name"
                                                 : "was restarted in place") != std::string::npos);
    CheckNothingLeft(cluster, kind, name);
  }
}

TEST_CASE("tune run: one HTTP 500 on create and on delete of a PyTorchJob is retried", "[k8s][kubeflow][faults][e2e]") {
  FakeCluster cluster(testing::KubeflowFlags());
  const std::string name = "kf-500";
  cluster.SetFaults(R"({"rules": [
      {"verb": "POST", "path": "/pytorchjobs$", "status": 500, "first": 1},
      {"verb": "DELETE", "path": "/pytorchjobs/", "status": 500, "first": 1}]})");
  Run r = TuneRun(cluster, Experiment(cluster, kPyTorchJob, name, {10, 20}, 20));
  INFO(r.out << r.err << cluster.FaultStats());
  CHECK(r.rc == 0);
  CHECK(json::parse(cluster.FaultStats())["status"] == 2);
  json trials = Trials(cluster);
  REQUIRE(trials.size() == 2);
  for (const json& t : trials) {
    CHECK(t["state"] == "completed");
    CHECK(t["attempts"] == 1);  // a retried call is not a failed attempt
    CHECK(t["value"].get<double>() == Approx(TrueFinal(t["params"]["steps"].get<int>())));
  }
  CheckNothingLeft(cluster, kPyTorchJob, name);
}

}  // namespace
}  // namespace tune
