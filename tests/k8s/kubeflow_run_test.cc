// `tune run` with backend.job_kind "pytorchjob" and "trainjob" end to end:
// the real tune and kubectl against fake_apiserver.py serving the Kubeflow
// CRDs and playing their operators (tests/k8s/fake_kubeflow.py). ASHA over
// 2-worker trials of synthetic_trial: pruned trials' jobs are deleted, rank
// 0's reports are the trial's, and nothing is left behind. Without the CRDs
// the preflight says the operator is not installed.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <boost/filesystem.hpp>
#include <boost/process.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "k8s/render.h"
#include "tests/k8s/fake_cluster.h"

namespace tune {
namespace {

namespace bp = boost::process;
using nlohmann::json;
using testing::FakeCluster;

using testing::Slurp;

// 6 s per trial, so that ASHA has time to prune.
const std::vector<std::string> kTrialArgs = {"--steps", "60", "--report-every", "10", "--sleep-ms", "100"};

// synthetic_trial's eval_loss per step for `lr`, as rank 0 prints it.
std::map<long, double> LocalCurve(const std::string& dir, double lr, int steps = 60) {
  std::vector<std::string> args = {"--lr", std::to_string(lr), "--steps", std::to_string(steps), "--report-every",
                                   "10"};
  bp::ipstream out;
  bp::child c(TUNE_BIN_DIR "/synthetic_trial", args, bp::std_out > out, bp::env["RANK"] = "0",
              bp::start_dir = dir);
  std::map<long, double> curve;
  for (std::string line; std::getline(out, line);) {
    long step;
    double train, eval;
    if (std::sscanf(line.c_str(), "step=%ld train_loss=%lf eval_loss=%lf", &step, &train, &eval) == 3) {
      curve[step] = eval;
    }
  }
  c.wait();
  return curve;
}

// Live processes running synthetic_trial from `dir` (a pod's working dir).
int TrialProcesses(const std::string& dir) {
  int n = 0;
  DIR* proc = opendir("/proc");
  if (!proc) return 0;
  while (dirent* e = readdir(proc)) {
    if (std::atoi(e->d_name) <= 0) continue;
    std::string base = std::string("/proc/") + e->d_name;
    std::string cmdline = Slurp(base + "/cmdline");
    if (cmdline.find("synthetic_trial") == std::string::npos) continue;
    char cwd[4096];
    ssize_t len = readlink((base + "/cwd").c_str(), cwd, sizeof(cwd) - 1);
    if (len <= 0) continue;
    cwd[len] = '\0';
    std::string stat = Slurp(base + "/stat");
    size_t close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') continue;
    if (std::string(cwd).rfind(dir, 0) == 0) ++n;
  }
  closedir(proc);
  return n;
}

struct Run {
  int rc;
  std::string out, err;
  json trials;
};

// `patch` is merged into the experiment (JSON merge patch).
Run TuneRun(const FakeCluster& cluster, const std::string& job_kind, json command, const json& patch = json::object()) {
  const std::string dir = cluster.dir();
  json exp = {
      {"name", "kf-" + job_kind},
      {"objective", {{"metric", "eval_loss"}, {"mode", "min"}}},
      {"parameters", {{"lr", {{"type", "grid"}, {"values", {0.0003, 0.003, 0.03, 0.3}}}}}},
      {"search", {{"algorithm", "grid"}}},
      {"scheduler", {{"type", "asha"}, {"time_attr", "step"}, {"max_t", 60}, {"grace_period", 10},
                     {"reduction_factor", 3}}},
      {"limits", {{"max_trials", 4}, {"max_concurrent_trials", 2}}},
      {"trial", {{"command", command}, {"workers", 2}, {"resources_per_worker", {{"cpu", 0.1}}}}},
      {"backend", {{"type", "kubernetes"}, {"job_kind", job_kind}, {"namespace", "default"},
                   {"image", "registry.example/tune:test"}, {"kubeconfig", cluster.Options().kubeconfig}}},
      {"storage", {{"path", dir + "/tune.db"}}}};
  exp.merge_patch(patch);
  std::ofstream(dir + "/experiment.json") << exp.dump(2);
  Run r;
  for (const char* f : {"/run.out", "/run.err", "/trials.json", "/tune.db"}) boost::filesystem::remove(dir + f);
  r.rc = bp::system(TUNE_BIN_DIR "/tune", "run", dir + "/experiment.json", "--quiet", bp::std_out > dir + "/run.out",
                    bp::std_err > dir + "/run.err", bp::start_dir = dir);
  r.out = Slurp(dir + "/run.out");
  r.err = Slurp(dir + "/run.err");
  if (boost::filesystem::exists(dir + "/tune.db")) {
    bp::system(TUNE_BIN_DIR "/tune", "trials", "--db", dir + "/tune.db", "--format", "json",
               bp::std_out > dir + "/trials.json", bp::std_err > dir + "/trials.err");
    r.trials = json::parse(Slurp(dir + "/trials.json"), nullptr, false);
  }
  return r;
}

// ASHA over four learning rates: every trial ends completed or pruned, at
// least one of each; each trial's value is rank 0's last eval_loss; the
// objects are gone.
void CheckAsha(const FakeCluster& cluster, const Run& r, const std::string& kind, const std::string& resources) {
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  INFO(r.trials.dump(2));
  REQUIRE(r.trials.is_array());
  REQUIRE(r.trials.size() == 4);
  int completed = 0, pruned = 0;
  for (const json& t : r.trials) {
    CHECK(t["location"].get<std::string>().rfind("k8s:default/" + kind + "/kf-" + kind + "-t", 0) == 0);
    std::string state = t["state"];
    completed += state == "completed";
    pruned += state == "pruned";
    REQUIRE((state == "completed" || state == "pruned"));
    // The value is what rank 0 printed last (scope "last"): a step of the
    // local run's curve, step 60 for a completed trial.
    std::map<long, double> curve = LocalCurve(cluster.dir(), t["params"]["lr"].get<double>());
    REQUIRE(curve.size() == 6);
    double value = t["value"].get<double>();
    bool on_curve = false;
    for (const auto& [step, eval] : curve) on_curve |= std::fabs(eval - value) < 1e-6;
    CHECK(on_curve);
    if (state == "completed") CHECK(std::fabs(curve[60] - value) < 1e-6);
  }
  CHECK(completed >= 1);
  CHECK(pruned >= 1);
  // Nothing labelled with the experiment, nor the operators' pods and
  // Services, nor a kubectl or a trial process is left.
  CHECK(cluster.Names(resources, std::string(kExperimentLabel) + "=kf-" + kind).empty());
  CHECK(cluster.Names("pods,services", "training.kubeflow.org/job-name").empty());
  CHECK(cluster.Names("pods", "jobset.sigs.k8s.io/jobset-name").empty());
  CHECK(cluster.KubectlProcesses().empty());
  CHECK(TrialProcesses(cluster.dir()) == 0);
}

TEST_CASE("tune run: ASHA over 2-worker PyTorchJob trials on a cluster with the training operator",
          "[k8s][e2e][kubeflow]") {
  FakeCluster cluster(testing::KubeflowFlags());
  json command = {TUNE_BIN_DIR "/synthetic_trial", "--lr", "${lr}"};
  for (const std::string& a : kTrialArgs) command.push_back(a);
  Run r = TuneRun(cluster, "pytorchjob", command);
  CheckAsha(cluster, r, "pytorchjob", "pytorchjobs.kubeflow.org,pods");
  // rank 0's log is the Master's: the operator gave it RANK=0 and the
  // worker RANK=1 (synthetic_trial prints metrics only on rank 0).
  std::string log = Slurp(cluster.dir() + "/tune_runs/kf-pytorchjob/trial_0000/rank_0.log");
  CHECK(log.find("step=10 train_loss=") != std::string::npos);
}

TEST_CASE("tune run: ASHA over 2-node TrainJob trials on a cluster with Kubeflow Trainer", "[k8s][e2e][kubeflow]") {
  FakeCluster cluster(testing::KubeflowFlags());
  // Not started by torchrun: the command takes its rank from the runtime's
  // PET_NODE_RANK ($$ is a literal $ for Kubernetes' expansion, as tune
  // writes every $).
  std::string args;
  for (const std::string& a : kTrialArgs) args += " " + a;
  json command = {"/bin/sh", "-c",
                  "RANK=$PET_NODE_RANK exec " TUNE_BIN_DIR "/synthetic_trial --lr ${lr}" + args};
  Run r = TuneRun(cluster, "trainjob", command);
  CheckAsha(cluster, r, "trainjob", "trainjobs.trainer.kubeflow.org");
}

// Trials that end before the backend's poller (0.5 s, backing off to 4 s
// while nothing changes) looks again: the pods are still there to read,
// because tune renders cleanPodPolicy None and deletes the job itself once
// it has read rank 0's log. (With cleanPodPolicy All the operator deletes
// the pods as the job ends, and such a trial "never reported the
// objective".)
TEST_CASE("tune run: PyTorchJob and TrainJob trials that end within a poll still report rank 0's value",
          "[k8s][e2e][kubeflow]") {
  FakeCluster cluster(testing::KubeflowFlags());
  for (std::string kind : {"pytorchjob", "trainjob"}) {
    INFO(kind);
    // 5 trials of 20 steps: about 1 s (50 ms a step) and at once (0 ms).
    for (int sleep_ms : {50, 0}) {
      INFO("sleep_ms " << sleep_ms);
      std::string prog = std::string(TUNE_BIN_DIR "/synthetic_trial --lr ${lr} --steps 20 --report-every 10 --sleep-ms ") +
                         std::to_string(sleep_ms);
      json command = kind == "pytorchjob" ? json::array({"/bin/sh", "-c", "exec " + prog})
                                          : json::array({"/bin/sh", "-c", "RANK=$PET_NODE_RANK exec " + prog});
      json patch = {{"parameters", {{"lr", {{"type", "grid"}, {"values", {0.0003, 0.001, 0.003, 0.01, 0.03}}}}}},
                    {"scheduler", nullptr},
                    {"limits", {{"max_trials", 5}, {"max_concurrent_trials", 2}}}};
      Run r = TuneRun(cluster, kind, command, patch);
      INFO(r.out << r.err);
      REQUIRE(r.rc == 0);
      INFO(r.trials.dump(2));
      REQUIRE(r.trials.size() == 5);
      for (const json& t : r.trials) {
        CHECK(t["state"] == "completed");
        std::map<long, double> curve = LocalCurve(cluster.dir(), t["params"]["lr"].get<double>(), 20);
        REQUIRE(curve.count(20));
        CHECK(t["value"].is_number());
        if (t["value"].is_number()) CHECK(std::fabs(t["value"].get<double>() - curve[20]) < 1e-6);
      }
      // tune deleted each job and its pods once it had read the log.
      CHECK(cluster.Names(kind == "pytorchjob" ? "pytorchjobs.kubeflow.org,pods" : "trainjobs.trainer.kubeflow.org",
                          std::string(kExperimentLabel) + "=kf-" + kind)
                .empty());
      CHECK(cluster.Names("pods,services", "training.kubeflow.org/job-name").empty());
      CHECK(cluster.Names("pods", "jobset.sigs.k8s.io/jobset-name").empty());
    }
  }
}

TEST_CASE("tune run: a TrainJob whose runtime does not exist fails with Trainer's JobsBuildFailed",
          "[k8s][e2e][kubeflow]") {
  FakeCluster cluster(testing::KubeflowFlags());
  json patch = {{"parameters", {{"lr", {{"type", "grid"}, {"values", {0.01}}}}}},
                {"scheduler", nullptr},
                {"limits", {{"max_trials", 1}}},
                {"backend", {{"runtime_ref", "no-such-runtime"}}}};
  Run r = TuneRun(cluster, "trainjob", json::array({"true"}), patch);
  INFO(r.out << r.err);
  CHECK(r.rc == 1);
  INFO(r.trials.dump(2));
  REQUIRE(r.trials.size() == 1);
  CHECK(r.trials[0]["state"] == "failed");
  CHECK(r.trials[0]["message"].get<std::string>().find(
            "TrainJob failed: JobsBuildFailed (Failed to build Jobs (from the ClusterTrainingRuntime "
            "\"no-such-runtime\" that backend.runtime_ref names: does it exist?))") != std::string::npos);
  CHECK(cluster.Names("trainjobs.trainer.kubeflow.org", std::string(kExperimentLabel) + "=kf-trainjob").empty());
}

// The stand-in's training operator ends a PyTorchJob as v1.9 does: once
// the Master has succeeded, cleanPodPolicy All deletes every pod and its
// Service, Running the pods still running (a Worker) and theirs, None
// nothing. (This is what made short trials lose their log under All.)
TEST_CASE("the stand-in's training operator applies cleanPodPolicy All, Running and None", "[k8s][kubeflow]") {
  FakeCluster cluster(testing::KubeflowFlags());
  KubernetesOptions o = cluster.Options();
  o.job_kind = "pytorchjob";
  LaunchSpec s;
  s.trial_id = 1;
  s.experiment = "kf-clean";
  s.workers = 2;
  // The Master ends at once, the Worker runs on.
  s.argv = {"/bin/sh", "-c", "[ \"$RANK\" = 0 ] || exec sleep 60"};
  for (const char* policy : {"All", "Running", "None"}) {
    INFO(policy);
    s.trial_number = std::string(policy) == "All" ? 0 : std::string(policy) == "Running" ? 1 : 2;
    const std::string name = KubernetesObjectName(s.experiment, s.trial_number, 0);
    auto rendered = RenderTrialManifests(o, s, name);
    REQUIRE(rendered.ok());
    json job = json::parse(*rendered)["items"][0];
    job["spec"]["runPolicy"]["cleanPodPolicy"] = policy;
    REQUIRE(cluster.Cli().Check({"create", "-f", "-"}, job.dump()).ok());
    std::string succeeded;
    for (int i = 0; i < 100 && succeeded != "True"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      auto st = cluster.Cli().Check({"get", "pytorchjobs.kubeflow.org/" + name, "-o",
                                     "jsonpath={.status.conditions[?(@.type==\"Succeeded\")].status}"});
      if (st.ok()) succeeded = *st;
    }
    REQUIRE(succeeded == "True");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the operator's next passes
    std::vector<std::string> left = cluster.Names("pods,services", "training.kubeflow.org/job-name=" + name);
    std::sort(left.begin(), left.end());
    std::vector<std::string> want;
    if (std::string(policy) == "Running") {
      want = {"pod/" + name + "-master-0", "service/" + name + "-master-0"};
    } else if (std::string(policy) == "None") {
      want = {"pod/" + name + "-master-0", "pod/" + name + "-worker-0", "service/" + name + "-master-0",
              "service/" + name + "-worker-0"};
    }
    CHECK(left == want);
    REQUIRE(cluster.Cli()
                .Check({"delete", "pytorchjobs.kubeflow.org/" + name, "--cascade=foreground", "--wait=true"})
                .ok());
    CHECK(cluster.Names("pods,services", "training.kubeflow.org/job-name=" + name).empty());
  }
}

TEST_CASE("tune run: without the Kubeflow CRDs the preflight says the operator is not installed",
          "[k8s][e2e][kubeflow]") {
  FakeCluster cluster;
  for (const char* kind : {"pytorchjob", "trainjob"}) {
    Run r = TuneRun(cluster, kind, json::array({"true"}));
    INFO(r.out << r.err);
    CHECK(r.rc == 2);
    std::string want = std::string(kind) == "pytorchjob"
                           ? "the Kubeflow training operator is not installed: the cluster serves no "
                             "pytorchjobs.kubeflow.org"
                           : "Kubeflow Trainer is not installed: the cluster serves no trainjobs.trainer.kubeflow.org";
    CHECK(r.err.find(want) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(boost::filesystem::exists(cluster.dir() + "/tune.db"));
  }
}

TEST_CASE("tune run: a failed PyTorchJob or TrainJob and one past trial.timeout_s are failed attempts with the reason",
          "[k8s][e2e][kubeflow]") {
  FakeCluster cluster(testing::KubeflowFlags());
  for (std::string kind : {"pytorchjob", "trainjob"}) {
    INFO(kind);
    std::string prog = std::string(TUNE_BIN_DIR "/synthetic_trial --fail-at ${fail_at} --steps 60 --sleep-ms 200");
    json command = kind == "pytorchjob" ? json::array({"/bin/sh", "-c", "exec " + prog})
                                        : json::array({"/bin/sh", "-c", "RANK=$PET_NODE_RANK exec " + prog});
    json patch = {{"parameters", {{"lr", nullptr}, {"fail_at", {{"type", "grid"}, {"values", {4, -1}}}}}},
                  {"scheduler", nullptr},
                  {"limits", {{"max_trials", 2}, {"max_concurrent_trials", 2}}},
                  {"trial", {{"timeout_s", 4}}}};
    Run r = TuneRun(cluster, kind, command, patch);
    INFO(r.out << r.err);
    CHECK(r.rc == 1);  // every trial failed
    CHECK((r.out + r.err).find("every trial failed (2)") != std::string::npos);
    INFO(r.trials.dump(2));
    REQUIRE(r.trials.size() == 2);
    for (const json& t : r.trials) {
      CHECK(t["state"] == "failed");
      std::string msg = t["message"];
      if (t["params"]["fail_at"] == 4) {
        // The operator's reason, then the failed pods' exit codes and last
        // lines (a TrainJob keeps its pods) or, when the operator deleted
        // them at once (a PyTorchJob with backoffLimit 0 deletes every pod
        // at the first failure, whatever its cleanPodPolicy), rank 0's last
        // log line.
        if (kind == "pytorchjob") {
          CHECK(msg.find("PyTorchJob failed: PyTorchJobFailed (Job kf-pytorchjob-t") != std::string::npos);
          CHECK(msg.find("has failed because it has reached the specified backoff limit)") != std::string::npos);
          CHECK(msg.find("rank 0's last log line: \"synthetic_trial: failing at step 4 as asked\"") !=
                std::string::npos);
        } else {
          // Trainer's Failed condition is the JobSet's, reason and message.
          CHECK(msg.find("TrainJob failed: FailedJobs (jobset failed due to one or more job failures (first failed "
                         "job: kf-trainjob-t0-a0-trainer-node-0))") != std::string::npos);
          CHECK(msg.find("rank 0 (pod kf-trainjob-t0-a0-trainer-node-0-0-") != std::string::npos);
          CHECK(msg.find("exited with code 3 (Error)") != std::string::npos);
          CHECK(msg.find("rank 0's last log line: \"synthetic_trial: failing at step 4 as asked\"") !=
                std::string::npos);
        }
      } else {
        // Stopped at the deadline (4 s of 12), not run to its end.
        CHECK(t["last_step"].get<int>() < 60);
        CHECK(msg.find(kind == "pytorchjob" ? "has failed because it was active longer than specified deadline)"
                                            : "TrainJob failed: DeadlineExceeded (it ran longer than trial.timeout_s, 4 s)") !=
              std::string::npos);
      }
    }
    CHECK(cluster.Names("pods,services", "training.kubeflow.org/job-name").empty());
    CHECK(cluster.Names("pods", "jobset.sigs.k8s.io/jobset-name").empty());
    CHECK(TrialProcesses(cluster.dir()) == 0);
  }
}

}  // namespace
}  // namespace tune
