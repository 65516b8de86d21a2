// KubernetesBackend under a misbehaving cluster (issue: a replaced pod, a
// failed API call, an unreadable log must never change a result): the real
// kubectl against fake_apiserver.py with its fault injection turned on.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/filesystem.hpp>
#include <boost/process/search_path.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "k8s/api_call.h"
#include "k8s/kubernetes_backend.h"
#include "k8s/render.h"
#include "tests/k8s/fake_cluster.h"

namespace tune {
namespace {

using nlohmann::json;
using testing::FakeCluster;
using testing::MakeTempDir;
namespace fs = boost::filesystem;

const std::string kSynthetic = TUNE_BIN_DIR "/synthetic_trial";

// Short backoffs, so that retries take tenths of seconds.
KubernetesOptions Fast(KubernetesOptions o) {
  o.api_backoff_initial_s = 0.1;
  o.api_backoff_max_s = 0.4;
  o.api_call_timeout_s = 10;
  o.api_deadline_s = 8;
  return o;
}

LaunchSpec Shell(const std::string& experiment, TrialId id, const std::string& script) {
  LaunchSpec s;
  s.trial_id = id;
  s.trial_number = static_cast<int>(id);
  s.experiment = experiment;
  s.argv = {"/bin/sh", "-c", script};
  s.env = {{"TUNE_TRIAL_ID", std::to_string(id)}};
  s.trial_dir = MakeTempDir("tune_k8s_trial_");
  s.workers = 1;
  s.cpu_per_worker = 0.1;
  return s;
}

struct Outcome {
  RunStatus status;
  std::vector<MetricReport> reports;
};

Outcome RunToEnd(TrialBackend& b, TrialId id, double limit_s = 60) {
  Outcome o;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (std::chrono::steady_clock::now() < deadline) {
    auto reports = b.Poll(id);
    REQUIRE(reports.ok());
    o.reports.insert(o.reports.end(), reports->begin(), reports->end());
    auto st = b.State(id);
    REQUIRE(st.ok());
    o.status = *st;
    if (st->state == RunState::kSucceeded || st->state == RunState::kFailed) return o;
    b.WaitForEvent(std::chrono::milliseconds(300));
  }
  FAIL("trial " << id << " did not end within " << limit_s << " s");
  return o;
}

// step -> loss, the last report of each step winning (as the tuner keeps them).
std::map<int64_t, double> Curve(const std::vector<MetricReport>& reports) {
  std::map<int64_t, double> out;
  for (const auto& r : reports) {
    INFO("a report of step " << r.step << " with " << r.values.size() << " values");
    REQUIRE(r.values.count("loss") == 1);
    out[r.step] = r.values.at("loss");
  }
  return out;
}

using testing::Slurp;

std::string Sel(const std::string& experiment) {
  return std::string(kExperimentLabel) + "=" + ExperimentLabelValue(experiment);
}

bool Gone(const FakeCluster& c, const std::string& sel, double limit_s = 20) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (c.Names("jobs,services,pods", sel).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

TEST_CASE("defect 1: the pod the Job finishes with speaks for the attempt", "[k8s][faults][replaced]") {
  FakeCluster cluster;
  const std::string exp = "faults-replaced";
  KubernetesOptions o = Fast(cluster.Options());
  o.backoff_limit = 1;  // the Job controller may replace a failed pod once
  KubernetesBackend backend(o, exp);
  std::string marker = cluster.dir() + "/first-pod-ran";
  LaunchSpec s = Shell(exp, 1, "for i in 1 2 3 4 5 6 7 8 9 10; do echo step=$i loss=0.$i; sleep 0.05; done");
  s.argv[2] = "if [ ! -e " + marker + " ]; then touch " + marker +
              "; for i in 1 2 3; do echo step=$i loss=9$i; sleep 0.2; done; exit 1; fi; sleep 0.5; "
              "for i in 1 2 3 4 5 6 7 8 9; do echo step=$i loss=0.$i; sleep 0.05; done; echo step=10 loss=0.1";
  REQUIRE(backend.Launch(s).ok());
  Outcome out = RunToEnd(backend, 1);
  INFO(out.status.message);
  CHECK(out.status.state == RunState::kSucceeded);
  // The dead pod's reports, then one restart marker, then the new pod's.
  auto restart = std::find_if(out.reports.begin(), out.reports.end(),
                              [](const MetricReport& r) { return !r.restart.empty(); });
  REQUIRE(restart != out.reports.end());
  CHECK(restart->restart == "replaced pod");
  CHECK(restart->values.empty());
  std::map<int64_t, double> dead = Curve({out.reports.begin(), restart});
  CHECK(dead == std::map<int64_t, double>{{1, 91}, {2, 92}, {3, 93}});
  std::map<int64_t, double> curve = Curve({restart + 1, out.reports.end()});
  REQUIRE(!curve.empty());
  CHECK(curve.begin()->first == 1);
  CHECK(curve.rbegin()->first == 10);
  CHECK(curve.rbegin()->second == Approx(0.1));
  // Every step the dead pod reported was reported again by its replacement.
  CHECK(curve.at(3) == Approx(0.3));
  std::string log = Slurp(s.trial_dir + "/rank_0.log");
  INFO(log);
  CHECK(log.find("was replaced by pod") != std::string::npos);
  CHECK(log.find("loss=93") < log.find("was replaced by pod"));
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(s.trial_dir);
}

TEST_CASE("defect 1: a pod deleted from outside is replaced and followed", "[k8s][faults][replaced]") {
  FakeCluster cluster;
  const std::string exp = "faults-evicted";
  KubernetesOptions o = Fast(cluster.Options());
  o.backoff_limit = 2;
  KubernetesBackend backend(o, exp);
  LaunchSpec s = Shell(exp, 2, "");
  s.argv = {kSynthetic, "--steps", "40", "--report-every", "1", "--sleep-ms", "60"};
  REQUIRE(backend.Launch(s).ok());
  // Wait until rank 0 has reported a few steps, then evict its pod.
  std::vector<MetricReport> seen;
  for (int i = 0; i < 100 && seen.size() < 5; ++i) {
    backend.WaitForEvent(std::chrono::milliseconds(100));
    auto r = backend.Poll(2);
    REQUIRE(r.ok());
    seen.insert(seen.end(), r->begin(), r->end());
  }
  REQUIRE(seen.size() >= 5);
  auto pods = cluster.Names("pods", "job-name=" + KubernetesObjectName(exp, 2, 0));
  REQUIRE(pods.size() == 1);
  REQUIRE(cluster.Cli().Check({"delete", pods[0], "--wait=false"}).ok());
  Outcome out = RunToEnd(backend, 2, 90);
  INFO(out.status.message);
  CHECK(out.status.state == RunState::kSucceeded);
  out.reports.insert(out.reports.begin(), seen.begin(), seen.end());
  REQUIRE(!out.reports.empty());
  CHECK(out.reports.back().step == 40);  // not the step the evicted pod reached
  // One restart marker between the evicted pod's reports and the new pod's,
  // which start again at step 1.
  auto marker = std::find_if(out.reports.begin(), out.reports.end(),
                             [](const MetricReport& r) { return !r.restart.empty(); });
  REQUIRE(marker != out.reports.end());
  CHECK(marker - out.reports.begin() >= 5);
  REQUIRE(marker + 1 != out.reports.end());
  CHECK((marker + 1)->step == 1);
  CHECK(std::count_if(out.reports.begin(), out.reports.end(),
                      [](const MetricReport& r) { return !r.restart.empty(); }) == 1);
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(s.trial_dir);
}

TEST_CASE("defect 3: transient API errors are retried, permanent ones are not", "[k8s][faults][retry]") {
  FakeCluster cluster;
  Kubectl kubectl = cluster.Cli();
  RetryPolicy p;
  p.initial_backoff = std::chrono::milliseconds(50);
  p.max_backoff = std::chrono::milliseconds(200);
  p.deadline = std::chrono::seconds(10);
  ApiStats stats;
  cluster.SetFaults(R"({"rules": [{"verb": "GET", "path": "/jobs$", "status": [500, 429, 503], "first": 3}]})");
  auto r = CallApi(kubectl, {"get", "jobs", "-o", "name"}, "", p, &stats);
  REQUIRE(r.ok());
  CHECK(r->ok);
  CHECK(r->tries == 4);
  CHECK(stats.retried == 3);
  // NotFound is permanent: one try, Kubernetes' reason.
  r = CallApi(kubectl, {"get", "job", "no-such-job"}, "", p, &stats);
  REQUIRE(r.ok());
  CHECK_FALSE(r->ok);
  CHECK(r->tries == 1);
  CHECK(r->failure.reason == "NotFound");
  CHECK_FALSE(r->failure.transient);
  // A refused connection is transient.
  CHECK(ClassifyKubectlError("The connection to the server 127.0.0.1:9 was refused - did you specify the right host or port?").transient);
  CHECK(ClassifyKubectlError("Error from server (TooManyRequests): the server has received too many requests").transient);
  CHECK_FALSE(ClassifyKubectlError("Error from server (Forbidden): jobs.batch is forbidden").transient);
}

TEST_CASE("defect 3: a create that fails transiently is retried, and a half-made one adopted",
          "[k8s][faults][retry]") {
  FakeCluster cluster;
  const std::string exp = "faults-create";
  KubernetesBackend backend(Fast(cluster.Options()), exp);
  LaunchSpec s = Shell(exp, 3, "echo step=1 loss=0.5");
  // The first Job create fails twice with 500 and once with 429; the Service
  // was created at the first try, so the retried Service create is never
  // needed, and the Job create ends in success.
  cluster.SetFaults(R"({"rules": [{"verb": "POST", "path": "/jobs$", "status": [500, 500, 429], "first": 3}]})");
  REQUIRE(backend.Launch(s).ok());
  Outcome out = RunToEnd(backend, 3);
  CHECK(out.status.state == RunState::kSucceeded);
  CHECK(out.reports.size() == 1);
  CHECK(backend.api_stats().retried >= 3);
  // Unknown outcome: the Job exists already (as after a create whose answer
  // was lost); a Launch of the same attempt adopts it by its labels.
  LaunchSpec again = Shell(exp, 4, "sleep 1; echo step=2 loss=0.25");
  auto text = RenderTrialManifests(cluster.Options(), again, KubernetesObjectName(exp, 4, 0));
  REQUIRE(text.ok());
  REQUIRE(cluster.Cli().Check({"create", "-f", "-"}, *text).ok());
  REQUIRE(backend.Launch(again).ok());
  Outcome adopted = RunToEnd(backend, 4);
  CHECK(adopted.status.state == RunState::kSucceeded);
  REQUIRE(adopted.reports.size() == 1);
  CHECK(adopted.reports[0].step == 2);
  backend.Shutdown();
  CHECK(backend.Leftovers().empty());
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(s.trial_dir);
  fs::remove_all(again.trial_dir);
}

TEST_CASE("defect 2: Kill never fails, failed deletes are retried and what stays is listed",
          "[k8s][faults][cleanup]") {
  FakeCluster cluster;
  const std::string exp = "faults-delete";
  KubernetesOptions o = Fast(cluster.Options());
  o.api_deadline_s = 2;
  KubernetesBackend backend(o, exp);
  LaunchSpec s = Shell(exp, 5, "for i in $(seq 1 400); do echo step=$i loss=1; sleep 0.05; done");
  REQUIRE(backend.Launch(s).ok());
  for (int i = 0; i < 100; ++i) {
    auto st = backend.State(5);
    REQUIRE(st.ok());
    if (st->state == RunState::kRunning) break;
    backend.WaitForEvent(std::chrono::milliseconds(100));
  }
  SECTION("a few failed deletes") {
    cluster.SetFaults(R"({"rules": [{"verb": "DELETE", "status": 500, "first": 3}]})");
    CHECK(backend.Kill(5).ok());
    CHECK(Gone(cluster, Sel(exp)));
    backend.Shutdown();
    CHECK(backend.Leftovers().empty());
  }
  SECTION("every delete fails") {
    cluster.SetFaults(R"({"rules": [{"verb": "DELETE", "status": 500}]})");
    CHECK(backend.Kill(5).ok());
    backend.Shutdown();
    std::vector<std::string> left = backend.Leftovers();
    CHECK(std::find(left.begin(), left.end(), "job.batch/" + KubernetesObjectName(exp, 5, 0)) != left.end());
    // The kubeconfig the backend used (no Preflight here, so no context pinned).
    CHECK(backend.LeftoverCommand() == "kubectl --kubeconfig=" + o.kubeconfig + " -n default delete " +
                                           "jobs,services,pods -l " + Sel(exp) + " --cascade=foreground");
    cluster.SetFaults("{}");
    REQUIRE(cluster.Cli().Check({"delete", "jobs,services", "-l", Sel(exp), "--cascade=foreground"}).ok());
    CHECK(Gone(cluster, Sel(exp)));
  }
  fs::remove_all(s.trial_dir);
}

TEST_CASE("defect 4: an unreadable log never turns a success into a failure", "[k8s][faults][logs]") {
  FakeCluster cluster;
  const std::string exp = "faults-logs";
  KubernetesOptions o = Fast(cluster.Options());
  o.api_deadline_s = 3;
  KubernetesBackend backend(o, exp);
  SECTION("log reads fail a few times, then work") {
    cluster.SetFaults(R"({"rules": [{"path": "/log$", "log": "fail", "first": 4},
                                     {"path": "/log$", "log": "truncate", "first": 2}]})");
    LaunchSpec s = Shell(exp, 6, "for i in 1 2 3 4 5; do echo step=$i loss=0.$i; done");
    REQUIRE(backend.Launch(s).ok());
    Outcome out = RunToEnd(backend, 6);
    INFO(out.status.message << "\n" << cluster.FaultStats());
    CHECK(out.status.state == RunState::kSucceeded);
    std::map<int64_t, double> curve = Curve(out.reports);
    CHECK(curve.size() == 5);
    CHECK(out.reports.size() == 5);  // no duplicates
    fs::remove_all(s.trial_dir);
  }
  SECTION("the log stays unreadable: a failure that says so") {
    cluster.SetFaults(R"({"rules": [{"path": "/log$", "log": "fail"}]})");
    LaunchSpec s = Shell(exp, 7, "echo step=1 loss=0.5");
    REQUIRE(backend.Launch(s).ok());
    Outcome out = RunToEnd(backend, 7);
    CHECK(out.status.state == RunState::kFailed);
    CHECK(out.status.message.find("the Job completed, but rank 0's log") != std::string::npos);
    CHECK(out.status.message.find("could not be read") != std::string::npos);
    CHECK(out.status.message.find("never reported") == std::string::npos);
    fs::remove_all(s.trial_dir);
  }
  cluster.SetFaults("{}");
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
}

TEST_CASE("defect 7: a stalled API server is announced, and its recovery", "[k8s][faults][stall]") {
  FakeCluster cluster;
  const std::string exp = "faults-stall";
  KubernetesOptions o = Fast(cluster.Options());
  o.api_call_timeout_s = 4;
  KubernetesBackend backend(o, exp);
  LaunchSpec s = Shell(exp, 9, "for i in $(seq 1 600); do echo step=$i loss=1; sleep 0.05; done");
  REQUIRE(backend.Launch(s).ok());
  CHECK(backend.TakeNotice().empty());
  // Every poll hangs from now on.
  cluster.SetFaults(R"({"rules": [{"verb": "GET", "path": "/(jobs|pods)$", "hang": true}]})");
  std::string notice;
  for (int i = 0; i < 100 && notice.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    notice = backend.TakeNotice();
  }
  INFO(notice);
  CHECK(notice.find("the Kubernetes API server has not answered for 1") == 0);  // 10-19 s
  cluster.SetFaults("{}");
  std::string back;
  for (int i = 0; i < 100 && back.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    back = backend.TakeNotice();
  }
  CHECK(back == "the Kubernetes API server answers again");
  CHECK(backend.Kill(9).ok());
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(s.trial_dir);
}

TEST_CASE("defect 8: a namespace that does not exist fails the preflight", "[k8s][faults][preflight]") {
  FakeCluster cluster;
  KubernetesOptions o = cluster.Options();
  o.namespace_ = "no-such-namespace";
  KubernetesBackend backend(o, "preflight-ns");
  Status st = backend.Preflight();
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == StatusCode::kFailedPrecondition);
  CHECK(st.message().find("namespace 'no-such-namespace' does not exist") != std::string::npos);
}

TEST_CASE("defect 8: a Job lost with the cluster's state gets a truthful reason", "[k8s][faults][state]") {
  FakeCluster cluster;
  const std::string exp = "faults-lost";
  KubernetesBackend backend(Fast(cluster.Options()), exp);
  LaunchSpec s = Shell(exp, 8, "for i in $(seq 1 1200); do echo step=$i loss=1; sleep 0.05; done");
  REQUIRE(backend.Launch(s).ok());
  RunState state = RunState::kStarting;
  for (int i = 0; i < 300 && state != RunState::kRunning; ++i) {
    auto st = backend.State(8);
    REQUIRE(st.ok());
    state = st->state;
    backend.WaitForEvent(std::chrono::milliseconds(100));
  }
  REQUIRE(state == RunState::kRunning);
  cluster.SetFaults(R"({"lose_state": 1})");
  Outcome out = RunToEnd(backend, 8);
  INFO(out.status.message);
  CHECK(out.status.state == RunState::kFailed);
  CHECK(out.status.message.find("no longer exists") != std::string::npos);
  CHECK(out.status.message.find("lost its state") != std::string::npos);
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(s.trial_dir);
}

TEST_CASE("thread tops: a malformed answer to the poller fails the attempt in one sentence, never terminate",
          "[k8s][faults][threads]") {
  FakeCluster cluster;
  const std::string exp = "faults-malformed";
  // kubectl, except that while `marker` exists the poller's listing is a
  // List whose item is a number (no real kubectl prints that).
  const std::string marker = cluster.dir() + "/malformed", wrapper = cluster.dir() + "/kubectl-wrapper";
  const std::string kubectl = boost::process::search_path("kubectl").string();
  REQUIRE_FALSE(kubectl.empty());
  std::ofstream(wrapper) << "#!/bin/sh\n"
                         << "if [ -e '" << marker << "' ]; then\n"
                         << "  for a; do\n"
                         << "    if [ \"$a\" = jobs,pods ]; then echo '{\"kind\": \"List\", \"items\": [1]}'; exit 0; fi\n"
                         << "  done\n"
                         << "fi\n"
                         << "exec '" << kubectl << "' \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  KubernetesOptions o = Fast(cluster.Options());
  o.kubectl = wrapper;
  KubernetesBackend backend(o, exp);
  REQUIRE(backend.Preflight().ok());
  LaunchSpec s = Shell(exp, 1, "for i in $(seq 1 400); do echo step=$i loss=1; sleep 0.05; done");
  REQUIRE(backend.Launch(s).ok());
  for (int i = 0; i < 100; ++i) {
    auto st = backend.State(1);
    REQUIRE(st.ok());
    if (st->state == RunState::kRunning) break;
    backend.WaitForEvent(std::chrono::milliseconds(100));
  }
  std::ofstream(marker) << "";
  // Before: the poller thread threw (json type_error) and the process
  // ended in std::terminate.
  Outcome out = RunToEnd(backend, 1);
  CHECK(out.status.state == RunState::kFailed);
  INFO(out.status.message);
  CHECK(out.status.message.rfind("the Kubernetes backend could not follow the Job " + KubernetesObjectName(exp, 1, 0) +
                                     ": reading the cluster's state failed ([json.exception.type_error.304] cannot "
                                     "use at() with number)",
                                 0) == 0);
  fs::remove(marker);
  // Its objects go (the attempt was abandoned, and its deletion queued).
  CHECK(Gone(cluster, Sel(exp)));
  backend.Shutdown();
  CHECK(backend.Leftovers().empty());
  CHECK(cluster.KubectlProcesses().empty());
  fs::remove_all(s.trial_dir);
}

}  // namespace
}  // namespace tune
