// KubernetesBackend end to end: the real kubectl against fake_apiserver.py,
// whose Job controller runs each pod as a local process.
#include "k8s/kubernetes_backend.h"

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <boost/filesystem.hpp>
#include <catch2/catch.hpp>

#include "k8s/render.h"
#include "tests/k8s/fake_cluster.h"

namespace tune {
namespace {

using testing::FakeCluster;
using testing::MakeTempDir;
namespace fs = boost::filesystem;

const std::string kSynthetic = TUNE_BIN_DIR "/synthetic_trial";

// The trial directories of this test process, under one temporary directory
// that is removed at exit, also after a failed REQUIRE.
std::string NewTrialDir() {
  static const struct Root {
    std::string path = MakeTempDir("tune_k8s_trial_");
    ~Root() {
      boost::system::error_code ec;
      fs::remove_all(path, ec);
    }
  } root;
  static int next = 0;
  std::string dir = root.path + "/" + std::to_string(next++);
  fs::create_directories(dir);
  return dir;
}

LaunchSpec Synthetic(const std::string& experiment, TrialId id, std::vector<std::string> args) {
  LaunchSpec s;
  s.trial_id = id;
  s.trial_number = static_cast<int>(id);
  s.experiment = experiment;
  s.argv = {kSynthetic};
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.env = {{"TUNE_TRIAL_ID", std::to_string(id)}, {"TUNE_EXPERIMENT", experiment}};
  s.trial_dir = NewTrialDir();
  s.workers = 2;
  s.cpu_per_worker = 0.1;
  return s;
}

struct Outcome {
  RunStatus status;
  std::vector<MetricReport> reports;
};

// Drives one attempt as the tuner does until its state is final.
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
    if (st->state == RunState::kSucceeded || st->state == RunState::kFailed) {
      auto rest = b.Poll(id);  // the contract: nothing is left to poll
      REQUIRE(rest.ok());
      CHECK(rest->empty());
      return o;
    }
    b.WaitForEvent(std::chrono::milliseconds(500));
  }
  FAIL("trial " << id << " did not end within " << limit_s << " s");
  return o;
}

std::vector<int64_t> Steps(const std::vector<MetricReport>& reports) {
  std::vector<int64_t> out;
  for (const auto& r : reports) out.push_back(r.step);
  return out;
}

using testing::Slurp;

std::string Sel(const std::string& experiment) {
  return std::string(kExperimentLabel) + "=" + ExperimentLabelValue(experiment);
}

// Waits until no object of `kinds` matches `sel` (deletions are asynchronous).
bool Gone(const FakeCluster& c, const std::string& kinds, const std::string& sel, double limit_s = 20) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (c.Names(kinds, sel).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

TEST_CASE("2-worker trials run to completion with rank 0's metrics", "[k8s][backend]") {
  FakeCluster cluster;
  const std::string exp = "e2e-complete";
  KubernetesBackend backend(cluster.Options(), exp);
  REQUIRE(backend.Preflight().ok());
  LaunchSpec a = Synthetic(exp, 1, {"--lr", "3e-4", "--steps", "50", "--report-every", "10", "--sleep-ms", "10"});
  LaunchSpec b = Synthetic(exp, 2, {"--lr", "1e-2", "--steps", "30", "--report-every", "10", "--json"});
  REQUIRE(backend.Launch(a).ok());
  REQUIRE(backend.Launch(b).ok());
  // Both ranks of a trial are pods of one Indexed Job.
  CHECK(cluster.Names("pods", "job-name=" + KubernetesObjectName(exp, 1, 0)).size() == 2);

  Outcome oa = RunToEnd(backend, 1);
  Outcome ob = RunToEnd(backend, 2);
  INFO(oa.status.message << " / " << ob.status.message);
  CHECK(oa.status.state == RunState::kSucceeded);
  CHECK(ob.status.state == RunState::kSucceeded);
  CHECK(oa.status.location == "k8s:default/job/" + KubernetesObjectName(exp, 1, 0));
  CHECK(Steps(oa.reports) == std::vector<int64_t>{10, 20, 30, 40, 50});
  CHECK(Steps(ob.reports) == std::vector<int64_t>{10, 20, 30});
  for (const auto& r : oa.reports) {
    CHECK(r.values.count("eval_loss") == 1);
    CHECK(r.values.count("train_loss") == 1);
    CHECK(r.time > 0);
  }
  CHECK(oa.reports.back().values.at("eval_loss") < oa.reports.front().values.at("eval_loss"));
  // Everything rank 0 printed is kept in the trial directory.
  std::string log = Slurp(a.trial_dir + "/rank_0.log");
  CHECK(log.find("synthetic_trial: learning rate") != std::string::npos);
  CHECK(log.find("step=50 ") != std::string::npos);
  // Ended attempts' objects are deleted once their state was read.
  CHECK(Gone(cluster, "jobs,services", Sel(exp)));
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(a.trial_dir);
  fs::remove_all(b.trial_dir);
}

TEST_CASE("every worker gets its rank and the torchrun environment", "[k8s][backend]") {
  FakeCluster cluster;
  const std::string exp = "e2e-env";
  KubernetesBackend backend(cluster.Options(), exp);
  LaunchSpec s = Synthetic(exp, 5, {});
  s.argv = {"/bin/sh", "-c",
            "echo \"ENV RANK=$RANK WORLD_SIZE=$WORLD_SIZE MASTER_ADDR=$MASTER_ADDR LOCAL_RANK=$LOCAL_RANK "
            "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE TUNE_TRIAL_ID=$TUNE_TRIAL_ID\"; echo step=1 rank=$RANK"};
  s.workers = 3;
  REQUIRE(backend.Launch(s).ok());
  Outcome o = RunToEnd(backend, 5);
  REQUIRE(o.status.state == RunState::kSucceeded);
  REQUIRE(o.reports.size() == 2);  // the ENV line has name=value pairs too
  CHECK(o.reports.back().values.at("rank") == 0);
  // The other ranks' output, as the fake kubelet kept it.
  std::set<std::string> lines;
  for (const auto& e : fs::directory_iterator(cluster.dir() + "/pods")) {
    std::string text = Slurp(e.path().string());
    if (text.rfind("ENV ", 0) == 0) lines.insert(text.substr(0, text.find('\n')));
  }
  for (int rank = 0; rank < 3; ++rank) {
    // MASTER_ADDR (<job>-0.<service>) was resolved to this machine by the fake.
    std::string want = "ENV RANK=" + std::to_string(rank) +
                       " WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 TUNE_TRIAL_ID=5";
    CHECK(lines.count(want) == 1);
  }
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(s.trial_dir);
}

TEST_CASE("$(VAR) in argv and env reaches the trial as written, not expanded", "[k8s][backend][escape]") {
  // Kubernetes expands $(NAME) in command, args and env values (and turns
  // $$ into $); the fake kubelet does the same, so an unescaped value would
  // show the experiment's name or a lone '$' here.
  FakeCluster cluster;
  const std::string exp = "e2e-escape";
  KubernetesBackend backend(cluster.Options(), exp);
  LaunchSpec s = Synthetic(exp, 9, {});
  const std::string arg = "$(TUNE_EXPERIMENT) $$(HOME) $(NOT_DEFINED) a$b $";
  s.argv = {"/bin/sh", "-c", "printf 'ARG=%s\\n' \"$1\"; printf 'ENV=%s\\n' \"$TUNE_PARAM_X\"; echo step=1", "sh", arg};
  s.env["TUNE_PARAM_X"] = "$(TUNE_TRIAL_ID)$$(PATH)";
  s.workers = 1;
  REQUIRE(backend.Launch(s).ok());
  Outcome o = RunToEnd(backend, 9);
  INFO(o.status.message);
  REQUIRE(o.status.state == RunState::kSucceeded);
  std::string log = Slurp(s.trial_dir + "/rank_0.log");
  INFO(log);
  CHECK(log.find("ARG=" + arg + "\n") != std::string::npos);
  CHECK(log.find("ENV=$(TUNE_TRIAL_ID)$$(PATH)\n") != std::string::npos);
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(s.trial_dir);
}

TEST_CASE("Kill deletes the Job, its pods and its Service", "[k8s][backend]") {
  FakeCluster cluster;
  const std::string exp = "e2e-kill";
  KubernetesBackend backend(cluster.Options(), exp);
  LaunchSpec s = Synthetic(exp, 3, {"--steps", "2000", "--report-every", "5", "--sleep-ms", "10"});
  REQUIRE(backend.Launch(s).ok());
  std::vector<MetricReport> seen;
  for (int i = 0; i < 200 && seen.empty(); ++i) {
    backend.WaitForEvent(std::chrono::milliseconds(100));
    auto r = backend.Poll(3);
    REQUIRE(r.ok());
    seen = *r;
  }
  REQUIRE_FALSE(seen.empty());  // it really runs
  const std::string name = KubernetesObjectName(exp, 3, 0);
  CHECK(cluster.Names("pods", "job-name=" + name).size() == 2);
  REQUIRE(backend.Kill(3).ok());
  // Foreground deletion: when Kill returns, the pods are gone with the Job.
  CHECK(cluster.Names("jobs,services,pods", "tune.io/trial-id=3").empty());
  CHECK(backend.Kill(3).ok());  // idempotent
  REQUIRE(backend.Poll(3).ok());  // what rank 0 printed before the kill
  auto st = backend.State(3);
  REQUIRE(st.ok());
  CHECK(st->state == RunState::kFailed);
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(s.trial_dir);
}

TEST_CASE("a failing Job is a failed attempt with Kubernetes' reason", "[k8s][backend]") {
  FakeCluster cluster;
  const std::string exp = "e2e-fail";
  KubernetesBackend backend(cluster.Options(), exp);
  LaunchSpec s = Synthetic(exp, 4, {"--steps", "10", "--report-every", "1", "--fail-at", "3", "--exit-code", "3"});
  REQUIRE(backend.Launch(s).ok());
  Outcome o = RunToEnd(backend, 4);
  CHECK(o.status.state == RunState::kFailed);
  CHECK(o.status.message.find("BackoffLimitExceeded") != std::string::npos);
  // With FallbackToLogsOnError the pod's status carries its log's tail,
  // and the message quotes the last line.
  CHECK(o.status.message.find("exited with code 3 (Error): \"synthetic_trial: failing at step 3 as asked\"") !=
        std::string::npos);
  CHECK(Steps(o.reports) == std::vector<int64_t>{1, 2});
  // A retry is a fresh Job; the failed one is deleted.
  s.attempt = 1;
  s.argv = {kSynthetic, "--steps", "3", "--report-every", "1"};
  REQUIRE(backend.Launch(s).ok());
  Outcome retry = RunToEnd(backend, 4);
  CHECK(retry.status.state == RunState::kSucceeded);
  CHECK(retry.status.location == "k8s:default/job/" + KubernetesObjectName(exp, 4, 1));
  CHECK(Steps(retry.reports) == std::vector<int64_t>{1, 2, 3});
  CHECK(Gone(cluster, "jobs,services,pods", Sel(exp)));
  fs::remove_all(s.trial_dir);
}

TEST_CASE("a pod Pending beyond pending_timeout_s fails the attempt with the reason", "[k8s][backend]") {
  FakeCluster cluster;
  const std::string exp = "e2e-pending";
  KubernetesOptions o = cluster.Options();
  o.pending_timeout_s = 1;
  SECTION("image pull error") {
    o.image = "registry.example/does-not-exist:1";
    KubernetesBackend backend(o, exp);
    REQUIRE(backend.Launch(Synthetic(exp, 6, {"--steps", "5"})).ok());
    Outcome out = RunToEnd(backend, 6);
    CHECK(out.status.state == RunState::kFailed);
    INFO(out.status.message);
    CHECK((out.status.message.find("ImagePullBackOff") != std::string::npos ||
           out.status.message.find("ErrImagePull") != std::string::npos));
    CHECK(out.reports.empty());
  }
  SECTION("unschedulable") {
    o.node_selector = {{"accelerator", "tpu-v9"}};
    KubernetesBackend backend(o, exp);
    REQUIRE(backend.Launch(Synthetic(exp, 7, {"--steps", "5"})).ok());
    Outcome out = RunToEnd(backend, 7);
    CHECK(out.status.state == RunState::kFailed);
    INFO(out.status.message);
    CHECK(out.status.message.find("Unschedulable") != std::string::npos);
    CHECK(out.status.message.find("node affinity/selector") != std::string::npos);
  }
  CHECK(Gone(cluster, "jobs,services,pods", Sel(exp)));
}

TEST_CASE("a dropped log stream is resumed without duplicate reports", "[k8s][backend]") {
  // The fake ends every followed log stream after 0.3 s, mid-line.
  FakeCluster cluster({"--log-stream-max-seconds", "0.3"});
  const std::string exp = "e2e-reconnect";
  KubernetesBackend backend(cluster.Options(), exp);
  LaunchSpec s = Synthetic(exp, 8, {"--steps", "40", "--report-every", "2", "--sleep-ms", "40"});
  REQUIRE(backend.Launch(s).ok());
  Outcome o = RunToEnd(backend, 8);
  CHECK(o.status.state == RunState::kSucceeded);
  std::vector<int64_t> want;
  for (int t = 2; t <= 40; t += 2) want.push_back(t);
  CHECK(Steps(o.reports) == want);
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  fs::remove_all(s.trial_dir);
}

TEST_CASE("Preflight reports what is missing, once and clearly", "[k8s][backend][preflight]") {
  SECTION("RBAC denial") {
    FakeCluster cluster({"--deny", "get:pods/log", "--deny", "delete:jobs"});
    KubernetesBackend backend(cluster.Options(), "preflight");
    Status st = backend.Preflight();
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == StatusCode::kFailedPrecondition);
    CHECK(st.message().find("RBAC") != std::string::npos);
    CHECK(st.message().find("get pods/log") != std::string::npos);
    CHECK(st.message().find("delete jobs.batch") != std::string::npos);
    CHECK(st.message().find("create jobs.batch") == std::string::npos);
    CHECK(st.message().find("namespace 'default'") != std::string::npos);
  }
  SECTION("no kubectl") {
    KubernetesOptions o;
    o.image = "img";
    o.kubectl = "/nonexistent/bin/kubectl";
    KubernetesBackend backend(o, "preflight");
    Status st = backend.Preflight();
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == StatusCode::kFailedPrecondition);
    CHECK(st.message().find("kubectl") != std::string::npos);
  }
  SECTION("no cluster") {
    std::string dir = NewTrialDir();
    {
      std::ofstream kc(dir + "/kubeconfig");
      // Port 9 (discard) on loopback: nothing listens, the connection is refused.
      kc << R"({"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"http://127.0.0.1:9"}}],)"
         << R"("users":[{"name":"u","user":{}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],)"
         << R"("current-context":"x"})";
    }
    KubernetesOptions o;
    o.image = "img";
    o.kubeconfig = dir + "/kubeconfig";
    KubernetesBackend backend(o, "preflight");
    Status st = backend.Preflight();
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == StatusCode::kUnavailable);
    CHECK(st.message().find("cannot reach the Kubernetes API server") != std::string::npos);
    fs::remove_all(dir);
  }
  SECTION("everything in place") {
    FakeCluster cluster;
    KubernetesBackend backend(cluster.Options(), "preflight");
    Status st = backend.Preflight();
    INFO(st.message());
    CHECK(st.ok());
  }
}

TEST_CASE("resume adopts running Jobs, harvests ended ones and cleans up the rest", "[k8s][backend][resume]") {
  FakeCluster cluster;
  const std::string exp = "e2e-resume";
  // What a tuner that crashed left behind: trial 1 running (8 s, so that it
  // is still running when adopted on a loaded machine), trial 2 running but
  // no longer wanted, trial 3 finished.
  std::map<TrialId, LaunchSpec> left = {
      {1, Synthetic(exp, 1, {"--steps", "40", "--report-every", "10", "--sleep-ms", "200"})},
      {2, Synthetic(exp, 2, {"--steps", "2000", "--sleep-ms", "10"})},
      {3, Synthetic(exp, 3, {"--steps", "1"})}};
  Kubectl kubectl = cluster.Cli();
  for (auto& [id, spec] : left) {
    auto text = RenderTrialManifests(cluster.Options(), spec, KubernetesObjectName(exp, spec.trial_number, 0));
    REQUIRE(text.ok());
    REQUIRE(kubectl.Check({"create", "-f", "-"}, *text).ok());
  }
  // Wait for trial 3's Job to complete.
  for (int i = 0; i < 100; ++i) {
    auto c = kubectl.Check({"get", "job", KubernetesObjectName(exp, 3, 0), "-o",
                            "jsonpath={.status.conditions[?(@.type==\"Complete\")].status}"});
    if (c.ok() && *c == "True") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  KubernetesBackend backend(cluster.Options(), exp);
  auto adopted = backend.AdoptOrClean({{1, left[1]}, {3, left[3]}});
  REQUIRE(adopted.ok());
  // Trial 3's Job completed while the tuner was down: adopted too, so that
  // its result is harvested from its log instead of running it again.
  CHECK(*adopted == std::set<TrialId>{1, 3});
  CHECK(cluster.Names("jobs,services,pods", "tune.io/trial-id=2").empty());
  CHECK(cluster.Names("jobs", Sel(exp)) == std::vector<std::string>{"job.batch/" + KubernetesObjectName(exp, 1, 0),
                                                                    "job.batch/" + KubernetesObjectName(exp, 3, 0)});
  Outcome o = RunToEnd(backend, 1);
  CHECK(o.status.state == RunState::kSucceeded);
  CHECK(Steps(o.reports) == std::vector<int64_t>{10, 20, 30, 40});
  Outcome harvested = RunToEnd(backend, 3);
  CHECK(harvested.status.state == RunState::kSucceeded);
  CHECK(Steps(harvested.reports) == std::vector<int64_t>{1});
  backend.Shutdown();
  CHECK(cluster.Names("jobs,services,pods", Sel(exp)).empty());
  for (auto& [id, spec] : left) fs::remove_all(spec.trial_dir);
}

}  // namespace
}  // namespace tune
