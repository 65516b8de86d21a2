// Every manifest in k8s/ and every rendered trial passes kubectl's own
// strict validation against the real Kubernetes v1.32 schema (served by the
// fake API server), and a manifest with a misspelled field does not.
#include <boost/filesystem.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "k8s/render.h"
#include "spec/experiment_spec.h"
#include "tests/k8s/fake_cluster.h"

namespace tune {
namespace {

using nlohmann::json;
using testing::FakeCluster;

const std::string kKit = TUNE_SOURCE_DIR "/k8s";

LaunchSpec Spec(int workers) {
  LaunchSpec s;
  s.trial_id = 7;
  s.trial_number = 2;
  s.attempt = 0;
  s.experiment = "validation";
  s.argv = {"lora_train", "--lr", "0.001"};
  s.env = {{"TUNE_PARAMS", R"({"lr": 0.001})"}, {"TUNE_EXPERIMENT", "validation"}};
  // trial.env {"secret", "key"}: valueFrom.secretKeyRef, checked against the schema.
  s.secret_env = {{"HF_TOKEN", {"hf-token", "token"}}};
  s.workers = workers;
  s.cpu_per_worker = 0.5;
  s.gpu_per_worker = 1;
  s.memory_per_worker = "2Gi";
  s.timeout_s = 600;
  return s;
}

KubernetesOptions FullOptions(KubernetesOptions o) {
  o.image_pull_policy = "Always";
  o.service_account = "default";
  o.node_selector = {{"kubernetes.io/os", "linux"}};
  o.tolerations_json = R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}])";
  o.volumes_json = R"([{"name":"data","persistentVolumeClaim":{"claimName":"tune-data"}},
                      {"name":"shm","emptyDir":{"medium":"Memory"}}])";
  o.volume_mounts_json = R"([{"name":"data","mountPath":"/data"},{"name":"shm","mountPath":"/dev/shm"}])";
  o.labels = {{"app.kubernetes.io/part-of", "tune"}};
  o.annotations = {{"example.com/note", "a value with spaces"}};
  o.ttl_seconds_after_finished = 300;
  o.backoff_limit = 2;
  return o;
}

// kubectl bound to the kit's namespace.
Kubectl KitKubectl(const FakeCluster& cluster) {
  KubernetesOptions o = cluster.Options();
  o.namespace_ = "tune";
  return Kubectl(o);
}

TEST_CASE("the cluster kit in k8s/ validates strictly against the real schema", "[k8s][validate]") {
  FakeCluster cluster;
  Kubectl kubectl = KitKubectl(cluster);
  auto out = kubectl.Run({"apply", "--dry-run=client", "--validate=strict", "-k", kKit, "-o", "name"});
  REQUIRE(out.ok());
  INFO(out->err);
  REQUIRE(out->exit_code == 0);
  for (const char* obj : {"namespace/tune", "serviceaccount/tune-runner", "role.rbac.authorization.k8s.io/tune-runner",
                          "rolebinding.rbac.authorization.k8s.io/tune-runner", "configmap/tune-experiment",
                          "persistentvolumeclaim/tune-data", "job.batch/tune-tuner", "secret/tune-postgres",
                          "service/tune-postgres", "statefulset.apps/tune-postgres", "deployment.apps/tune-dashboard",
                          "service/tune-dashboard"}) {
    CHECK(out->out.find(obj) != std::string::npos);
  }
  // Each file on its own too (kustomize must not be what makes them valid).
  int files = 0;
  for (const auto& e : boost::filesystem::directory_iterator(kKit)) {
    std::string path = e.path().string();
    if (e.path().extension() != ".yaml" || e.path().filename() == "kustomization.yaml") continue;
    ++files;
    auto r = kubectl.Run({"create", "--dry-run=client", "--validate=strict", "-f", path, "-o", "name"});
    REQUIRE(r.ok());
    INFO(path << ": " << r->err);
    CHECK(r->exit_code == 0);
  }
  CHECK(files >= 5);
}

TEST_CASE("the kit's experiment is a valid tune experiment for the kubernetes backend", "[k8s][validate]") {
  FakeCluster cluster;
  auto out = KitKubectl(cluster).Check({"create", "--dry-run=client", "-f", kKit + "/configmap.yaml", "-o", "json"});
  REQUIRE(out.ok());
  std::string text = json::parse(*out)["data"]["experiment.json"].get<std::string>();
  auto spec = ParseExperimentSpec(text, "k8s/configmap.yaml:experiment.json");
  INFO(spec.status().message());
  REQUIRE(spec.ok());
  CHECK(spec->backend.type == "kubernetes");
  CHECK(spec->backend.kubernetes.namespace_ == "tune");
  CHECK(spec->trial.workers == 2);
}

TEST_CASE("rendered trials validate, client-side and server-side", "[k8s][validate]") {
  FakeCluster cluster;
  Kubectl kubectl = cluster.Cli();
  for (int workers : {1, 2, 4}) {
    for (bool full : {false, true}) {
      KubernetesOptions o = full ? FullOptions(cluster.Options()) : cluster.Options();
      LaunchSpec s = Spec(workers);
      if (!full) s.gpu_per_worker = 0;
      if (full) s.working_dir = "/workspace";
      auto text = RenderTrialManifests(o, s, KubernetesObjectName(s.experiment, s.trial_number, workers));
      REQUIRE(text.ok());
      CHECK(text->find("secretKeyRef") != std::string::npos);
      for (const char* mode : {"--dry-run=client", "--dry-run=server"}) {
        auto r = kubectl.Run({"create", mode, "--validate=strict", "-f", "-", "-o", "name"}, *text);
        REQUIRE(r.ok());
        INFO(mode << " workers=" << workers << " full=" << full << ": " << r->err);
        CHECK(r->exit_code == 0);
        CHECK(r->out.find("job.batch/validation-t2-a") != std::string::npos);
        CHECK(r->out.find("service/validation-t2-a") != std::string::npos);
      }
    }
  }
}

TEST_CASE("kubectl's validation rejects a misspelled field and a wrong type", "[k8s][validate]") {
  FakeCluster cluster;
  Kubectl kubectl = cluster.Cli();
  json list = json::parse(*RenderTrialManifests(cluster.Options(), Spec(2), "bad-t0-a0"));
  json& pod = list["items"][1]["spec"]["template"]["spec"];

  json misspelled = list;
  misspelled["items"][1]["spec"]["template"]["spec"].erase("restartPolicy");
  misspelled["items"][1]["spec"]["template"]["spec"]["restartPolcy"] = "Never";
  auto r = kubectl.Run({"create", "--dry-run=client", "--validate=strict", "-f", "-"}, misspelled.dump());
  REQUIRE(r.ok());
  CHECK(r->exit_code != 0);
  CHECK(r->err.find("unknown field \"restartPolcy\"") != std::string::npos);

  // The env's secretKeyRef is checked as deeply.
  json secret_ref = list;
  for (json& e : secret_ref["items"][1]["spec"]["template"]["spec"]["containers"][0]["env"]) {
    if (e["name"] == "HF_TOKEN") e["valueFrom"]["secretKeyRef"] = {{"secret", "hf-token"}, {"key", "token"}};
  }
  r = kubectl.Run({"create", "--dry-run=client", "--validate=strict", "-f", "-"}, secret_ref.dump());
  REQUIRE(r.ok());
  CHECK(r->exit_code != 0);
  CHECK(r->err.find("unknown field \"secret\"") != std::string::npos);

  json wrong_type = list;
  wrong_type["items"][1]["spec"]["completions"] = "two";
  r = kubectl.Run({"create", "--dry-run=client", "--validate=strict", "-f", "-"}, wrong_type.dump());
  REQUIRE(r.ok());
  CHECK(r->exit_code != 0);
  CHECK(r->err.find("completions") != std::string::npos);

  // Nothing was sent: the objects do not exist.
  (void)pod;
  CHECK(cluster.Names("jobs,services", "tune.io/experiment").empty());
}

TEST_CASE("rendered PyTorchJobs and TrainJobs validate against the Kubeflow CRDs' schemas", "[k8s][validate][kubeflow]") {
  FakeCluster cluster(testing::KubeflowFlags());
  Kubectl kubectl = cluster.Cli();
  for (const char* kind : {"pytorchjob", "trainjob"}) {
    for (int workers : {1, 3}) {
      for (bool full : {false, true}) {
        KubernetesOptions o = full ? FullOptions(cluster.Options()) : cluster.Options();
        o.job_kind = kind;
        LaunchSpec s = Spec(workers);
        if (!full) s.gpu_per_worker = 0;
        if (full) s.working_dir = "/workspace";
        auto text = RenderTrialManifests(o, s, KubernetesObjectName(s.experiment, s.trial_number, workers));
        REQUIRE(text.ok());
        CHECK(text->find("secretKeyRef") != std::string::npos);
        for (const char* mode : {"--dry-run=client", "--dry-run=server"}) {
          auto r = kubectl.Run({"create", mode, "--validate=strict", "-f", "-", "-o", "name"}, *text);
          REQUIRE(r.ok());
          INFO(kind << " " << mode << " workers=" << workers << " full=" << full << ": " << r->err);
          CHECK(r->exit_code == 0);
          CHECK(r->out == std::string(kind == std::string("pytorchjob") ? "pytorchjob.kubeflow.org"
                                                                        : "trainjob.trainer.kubeflow.org") +
                              "/validation-t2-a" + std::to_string(workers) + "\n");
        }
      }
    }
  }
}

TEST_CASE("kubectl rejects a wrong field of a PyTorchJob or TrainJob, as a cluster with the CRDs does",
          "[k8s][validate][kubeflow]") {
  FakeCluster cluster(testing::KubeflowFlags());
  Kubectl kubectl = cluster.Cli();
  KubernetesOptions o = FullOptions(cluster.Options());
  auto rejected = [&](const json& list, const std::string& what) {
    auto r = kubectl.Run({"create", "--dry-run=client", "--validate=strict", "-f", "-"}, list.dump());
    REQUIRE(r.ok());
    INFO(r->err);
    CHECK(r->exit_code != 0);
    CHECK(r->err.find(what) != std::string::npos);
  };
  o.job_kind = "pytorchjob";
  json pj = json::parse(*RenderTrialManifests(o, Spec(2), "bad-t0-a0"));
  json misspelled = pj;
  misspelled["items"][0]["spec"]["runPolicy"]["cleanPodPolcy"] = "All";
  rejected(misspelled, "unknown field \"cleanPodPolcy\"");
  json in_pod = pj;  // the pod template inside the CRD is checked as deeply as a Job's
  in_pod["items"][0]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["imagePulPolicy"] =
      "Always";
  rejected(in_pod, "unknown field \"imagePulPolicy\"");
  json wrong_type = pj;
  wrong_type["items"][0]["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "one";
  rejected(wrong_type, "replicas: got \"string\", expected \"integer\"");

  o.job_kind = "trainjob";
  json tj = json::parse(*RenderTrialManifests(o, Spec(2), "bad-t0-a0"));
  json trainer = tj;
  trainer["items"][0]["spec"]["trainer"]["numNode"] = 2;
  rejected(trainer, "unknown field \"numNode\"");
  json no_ref = tj;
  no_ref["items"][0]["spec"].erase("runtimeRef");
  rejected(no_ref, "missing required field \"runtimeRef\"");

  // Nothing was sent.
  CHECK(cluster.Names("pytorchjobs.kubeflow.org,trainjobs.trainer.kubeflow.org", "tune.io/experiment").empty());
}

TEST_CASE("without the Kubeflow CRDs the cluster serves neither kind", "[k8s][validate][kubeflow]") {
  FakeCluster cluster;
  KubernetesOptions o = cluster.Options();
  o.job_kind = "pytorchjob";
  auto r = cluster.Cli().Run({"create", "--dry-run=server", "-f", "-"}, *RenderTrialManifests(o, Spec(2), "x-t0-a0"));
  REQUIRE(r.ok());
  CHECK(r->exit_code != 0);
  CHECK(r->err.find("no matches for kind \"PyTorchJob\" in version \"kubeflow.org/v1\"") != std::string::npos);
}

}  // namespace
}  // namespace tune
