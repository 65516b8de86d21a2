// RenderTrialManifests and object names: the shape of what a trial gets.
// (That kubectl accepts it against the real schema: validation_test.cc.)
#include "k8s/render.h"

#include <regex>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace tune {
namespace {

using nlohmann::json;

bool IsDns1035(const std::string& s) {
  return s.size() <= 63 && std::regex_match(s, std::regex("^[a-z]([-a-z0-9]*[a-z0-9])?$"));
}

LaunchSpec TwoWorkerSpec() {
  LaunchSpec s;
  s.trial_id = 42;
  s.trial_number = 3;
  s.attempt = 1;
  s.experiment = "lora-asha";
  s.argv = {"lora_train", "--lr", "0.001"};
  s.env = {{"OMP_NUM_THREADS", "1"}, {"TUNE_TRIAL_ID", "42"}, {"RANK", "7"}};
  s.workers = 2;
  s.cpu_per_worker = 1.5;
  s.gpu_per_worker = 1;
  s.memory_per_worker = "4Gi";
  s.timeout_s = 90.5;
  s.stop_grace_s = 12.5;
  s.working_dir = "/data";
  return s;
}

std::map<std::string, json> EnvOf(const json& container) {
  std::map<std::string, json> out;
  for (const json& e : container["env"]) out[e["name"].get<std::string>()] = e;
  return out;
}

TEST_CASE("object names are DNS-1035 labels, fresh per attempt", "[k8s][render]") {
  std::set<std::string> seen;
  const std::vector<std::string> experiments = {"lora-asha", "LoRA ASHA #2", "9lives", "___",
                                                std::string(200, 'x'), "a.b.c", "lora_asha"};
  for (const std::string& exp : experiments) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::string n = KubernetesObjectName(exp, 12345, attempt);
      INFO(exp << " -> " << n);
      CHECK(IsDns1035(n));
      CHECK(n.size() <= 47);
      CHECK(IsDns1035(n + "-31"));  // pod hostnames stay valid
      CHECK(seen.insert(n).second);
    }
    CHECK(IsDns1035(ExperimentLabelValue(exp)));
  }
  // Names that differ only in characters a label cannot hold stay distinct.
  CHECK(ExperimentLabelValue("lora_asha") != ExperimentLabelValue("lora-asha"));
  CHECK(ExperimentLabelValue("lora-asha") == "lora-asha");
  CHECK(KubernetesObjectName("lora-asha", 3, 1) == "lora-asha-t3-a1");
}

TEST_CASE("a trial renders as a headless Service and an Indexed Job", "[k8s][render]") {
  KubernetesOptions o;
  o.image = "registry.example/tune:1";
  o.image_pull_policy = "IfNotPresent";
  o.service_account = "trainer";
  o.node_selector = {{"pool", "gpu"}};
  o.tolerations_json = R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}])";
  o.volumes_json = R"([{"name":"data","persistentVolumeClaim":{"claimName":"tune-data"}}])";
  o.volume_mounts_json = R"([{"name":"data","mountPath":"/data"}])";
  o.labels = {{"team", "nlp"}};
  o.annotations = {{"owner", "me"}};
  o.ttl_seconds_after_finished = 600;
  o.backoff_limit = 0;
  LaunchSpec s = TwoWorkerSpec();
  auto text = RenderTrialManifests(o, s, "lora-asha-t3-a1");
  REQUIRE(text.ok());
  json list = json::parse(*text);
  REQUIRE(list["kind"] == "List");
  REQUIRE(list["items"].size() == 2);
  const json& svc = list["items"][0];
  const json& job = list["items"][1];

  CHECK(svc["kind"] == "Service");
  CHECK(svc["metadata"]["name"] == "lora-asha-t3-a1");
  CHECK(svc["spec"]["clusterIP"] == "None");
  CHECK(svc["spec"]["selector"]["job-name"] == "lora-asha-t3-a1");

  CHECK(job["apiVersion"] == "batch/v1");
  CHECK(job["kind"] == "Job");
  const json& spec = job["spec"];
  CHECK(spec["completionMode"] == "Indexed");
  CHECK(spec["completions"] == 2);
  CHECK(spec["parallelism"] == 2);
  CHECK(spec["backoffLimit"] == 0);
  CHECK(spec["ttlSecondsAfterFinished"] == 600);
  CHECK(spec["activeDeadlineSeconds"] == 91);
  for (const json* md : {&job["metadata"], &svc["metadata"], &spec["template"]["metadata"]}) {
    CHECK((*md)["labels"]["tune.io/experiment"] == "lora-asha");
    CHECK((*md)["labels"]["tune.io/trial"] == "3");
    CHECK((*md)["labels"]["tune.io/trial-id"] == "42");
    CHECK((*md)["labels"]["tune.io/attempt"] == "1");
    CHECK((*md)["labels"]["team"] == "nlp");
    CHECK((*md)["annotations"]["owner"] == "me");
  }
  const json& pod = spec["template"]["spec"];
  CHECK(pod["restartPolicy"] == "Never");
  CHECK(pod["subdomain"] == "lora-asha-t3-a1");
  CHECK(pod["terminationGracePeriodSeconds"] == 13);  // ceil(trial.stop_grace_s)
  CHECK(pod["serviceAccountName"] == "trainer");
  CHECK(pod["nodeSelector"]["pool"] == "gpu");
  CHECK(pod["tolerations"][0]["key"] == "nvidia.com/gpu");
  CHECK(pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "tune-data");
  REQUIRE(pod["containers"].size() == 1);
  const json& c = pod["containers"][0];
  CHECK(c["image"] == "registry.example/tune:1");
  CHECK(c["imagePullPolicy"] == "IfNotPresent");
  CHECK(c["terminationMessagePolicy"] == "FallbackToLogsOnError");  // the failure's last log line
  CHECK(c["command"] == json({"lora_train", "--lr", "0.001"}));
  CHECK(c["workingDir"] == "/data");
  CHECK(c["volumeMounts"][0]["mountPath"] == "/data");
  CHECK(c["resources"]["requests"]["cpu"] == "1500m");
  CHECK(c["resources"]["requests"]["memory"] == "4Gi");
  CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "1");
  auto env = EnvOf(c);
  CHECK(env["MASTER_ADDR"]["value"] == "lora-asha-t3-a1-0.lora-asha-t3-a1");
  CHECK(env["MASTER_PORT"]["value"] == std::to_string(kMasterPort));
  CHECK(env["WORLD_SIZE"]["value"] == "2");
  CHECK(env["LOCAL_RANK"]["value"] == "0");
  CHECK(env["LOCAL_WORLD_SIZE"]["value"] == "1");
  CHECK(env["RANK"]["valueFrom"]["fieldRef"]["fieldPath"] ==
        "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  CHECK(env["OMP_NUM_THREADS"]["value"] == "1");
  CHECK(env["TUNE_TRIAL_ID"]["value"] == "42");
  int rank_entries = 0;
  for (const json& e : c["env"]) rank_entries += e["name"] == "RANK";
  CHECK(rank_entries == 1);  // the user's RANK does not override the index
}

TEST_CASE("every '$' in command and env values is doubled for Kubernetes' expansion", "[k8s][render]") {
  CHECK(EscapeForKubernetesExpansion("") == "");
  CHECK(EscapeForKubernetesExpansion("plain") == "plain");
  CHECK(EscapeForKubernetesExpansion("$(HOME)") == "$$(HOME)");
  CHECK(EscapeForKubernetesExpansion("$$(HOME)") == "$$$$(HOME)");
  CHECK(EscapeForKubernetesExpansion("a$") == "a$$");
  KubernetesOptions o;
  o.image = "img";
  LaunchSpec s = TwoWorkerSpec();
  s.argv = {"train", "--tag", "$(SECRET)"};
  s.env = {{"TUNE_PARAM_TAG", "$(SECRET)"}};
  json list = json::parse(*RenderTrialManifests(o, s, "e-t0-a0"));
  const json& c = list["items"][1]["spec"]["template"]["spec"]["containers"][0];
  CHECK(c["command"] == json({"train", "--tag", "$$(SECRET)"}));
  CHECK(EnvOf(c)["TUNE_PARAM_TAG"]["value"] == "$$(SECRET)");
}

TEST_CASE("optional fields are left out when not set", "[k8s][render]") {
  KubernetesOptions o;
  o.image = "img";
  LaunchSpec s = TwoWorkerSpec();
  s.gpu_per_worker = 0;
  s.memory_per_worker.clear();
  s.timeout_s = 0;
  s.cpu_per_worker = 2;
  json job = json::parse(*RenderTrialManifests(o, s, "x-t1-a0"))["items"][1];
  CHECK_FALSE(job["spec"].contains("activeDeadlineSeconds"));
  CHECK_FALSE(job["spec"].contains("ttlSecondsAfterFinished"));
  const json& pod = job["spec"]["template"]["spec"];
  CHECK_FALSE(pod.contains("nodeSelector"));
  CHECK_FALSE(pod.contains("serviceAccountName"));
  CHECK_FALSE(pod.contains("volumes"));
  const json& c = pod["containers"][0];
  CHECK_FALSE(c.contains("imagePullPolicy"));
  CHECK(c["resources"]["requests"]["cpu"] == "2");
  CHECK_FALSE(c["resources"].contains("limits"));
}

TEST_CASE("unusable options are InvalidArgument", "[k8s][render]") {
  KubernetesOptions o;
  LaunchSpec s = TwoWorkerSpec();
  auto no_image = RenderTrialManifests(o, s, "x-t1-a0");
  REQUIRE_FALSE(no_image.ok());
  CHECK(no_image.status().IsInvalidArgument());
  CHECK(no_image.status().message().find("backend.image") != std::string::npos);
  o.image = "img";
  o.tolerations_json = R"({"key": "a"})";
  auto bad = RenderTrialManifests(o, s, "x-t1-a0");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("backend.tolerations") != std::string::npos);
  o.tolerations_json = "[]";
  CHECK_FALSE(RenderTrialManifests(o, s, "Bad_Name").ok());
  CHECK_FALSE(RenderTrialManifests(o, s, "1abc").ok());
  s.workers = 0;
  CHECK_FALSE(RenderTrialManifests(o, s, "x-t1-a0").ok());
}

TEST_CASE("a pytorchjob trial is one PyTorchJob: a Master and workers - 1 Workers", "[k8s][render][kubeflow]") {
  KubernetesOptions o;
  o.job_kind = "pytorchjob";
  o.image = "registry.example/tune:1";
  o.service_account = "trainer";
  o.node_selector = {{"pool", "gpu"}};
  o.volumes_json = R"([{"name":"data","persistentVolumeClaim":{"claimName":"tune-data"}}])";
  o.volume_mounts_json = R"([{"name":"data","mountPath":"/data"}])";
  o.labels = {{"team", "nlp"}};
  o.ttl_seconds_after_finished = 600;
  LaunchSpec s = TwoWorkerSpec();
  s.workers = 3;
  s.env["MASTER_PORT"] = "1";
  s.env["PET_NNODES"] = "9";
  s.env["WORLD_SIZE"] = "9";
  json list = json::parse(*RenderTrialManifests(o, s, "lora-asha-t3-a1"));
  REQUIRE(list["items"].size() == 1);  // the operator makes the Services
  const json& job = list["items"][0];
  CHECK(job["apiVersion"] == "kubeflow.org/v1");
  CHECK(job["kind"] == "PyTorchJob");
  CHECK(job["metadata"]["name"] == "lora-asha-t3-a1");
  const json& rp = job["spec"]["runPolicy"];
  CHECK(rp["backoffLimit"] == 0);
  CHECK(rp["activeDeadlineSeconds"] == 91);
  // None: the pods stay until tune has read rank 0's log (All would let
  // the operator delete them as the job ends).
  CHECK(rp["cleanPodPolicy"] == "None");
  CHECK(rp["ttlSecondsAfterFinished"] == 600);
  const json& replicas = job["spec"]["pytorchReplicaSpecs"];
  REQUIRE(replicas.size() == 2);
  CHECK(replicas["Master"]["replicas"] == 1);
  CHECK(replicas["Worker"]["replicas"] == 2);
  for (const char* type : {"Master", "Worker"}) {
    INFO(type);
    const json& r = replicas[type];
    CHECK(r["restartPolicy"] == "Never");
    CHECK(r["template"]["spec"]["terminationGracePeriodSeconds"] == 13);  // ceil(trial.stop_grace_s)
    for (const json* md : {&job["metadata"], &r["template"]["metadata"]}) {
      CHECK((*md)["labels"]["tune.io/experiment"] == "lora-asha");
      CHECK((*md)["labels"]["tune.io/trial-id"] == "42");
      CHECK((*md)["labels"]["tune.io/attempt"] == "1");
      CHECK((*md)["labels"]["team"] == "nlp");
    }
    const json& pod = r["template"]["spec"];
    CHECK(pod["serviceAccountName"] == "trainer");
    CHECK(pod["nodeSelector"]["pool"] == "gpu");
    CHECK(pod["volumes"][0]["name"] == "data");
    CHECK_FALSE(pod.contains("subdomain"));
    REQUIRE(pod["containers"].size() == 1);
    const json& c = pod["containers"][0];
    CHECK(c["name"] == "pytorch");  // the name the operator and Katib look for
    CHECK(c["image"] == "registry.example/tune:1");
    CHECK(c["command"] == json({"lora_train", "--lr", "0.001"}));
    CHECK(c["workingDir"] == "/data");
    CHECK(c["volumeMounts"][0]["mountPath"] == "/data");
    CHECK(c["resources"]["requests"]["cpu"] == "1500m");
    CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "1");
    auto env = EnvOf(c);
    // The operator's variables are the operator's to set.
    for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PET_NNODES"}) {
      CHECK_FALSE(env.count(name));
    }
    CHECK(env["LOCAL_RANK"]["value"] == "0");
    CHECK(env["LOCAL_WORLD_SIZE"]["value"] == "1");
    CHECK(env["TUNE_TRIAL_ID"]["value"] == "42");
    CHECK(env["OMP_NUM_THREADS"]["value"] == "1");
  }
  const json& master = replicas["Master"]["template"]["spec"]["containers"][0];
  CHECK(master["ports"] == json::parse(R"([{"name": "pytorchjob-port", "containerPort": 23456}])"));
  CHECK_FALSE(replicas["Worker"]["template"]["spec"]["containers"][0].contains("ports"));

  s.workers = 1;
  json single = json::parse(*RenderTrialManifests(o, s, "lora-asha-t3-a1"));
  CHECK(single["items"][0]["spec"]["pytorchReplicaSpecs"].size() == 1);  // a Master alone
  s.timeout_s = 0;
  o.ttl_seconds_after_finished.reset();
  json plain = json::parse(*RenderTrialManifests(o, s, "lora-asha-t3-a1"));
  CHECK(plain["items"][0]["spec"]["runPolicy"] == json::parse(R"({"backoffLimit": 0, "cleanPodPolicy": "None"})"));
  // With a backoff limit the operator may make a killed pod again
  // (restartPolicy ExitCode); without one every failure ends the job.
  o.backoff_limit = 2;
  json retried = json::parse(*RenderTrialManifests(o, s, "lora-asha-t3-a1"));
  CHECK(retried["items"][0]["spec"]["runPolicy"]["backoffLimit"] == 2);
  CHECK(retried["items"][0]["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"] == "ExitCode");
}

TEST_CASE("a trainjob trial is one TrainJob naming its runtime", "[k8s][render][kubeflow]") {
  KubernetesOptions o;
  o.job_kind = "trainjob";
  o.image = "registry.example/tune:1";
  o.tolerations_json = R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}])";
  o.volume_mounts_json = R"([{"name":"data","mountPath":"/data"}])";
  o.volumes_json = R"([{"name":"data","persistentVolumeClaim":{"claimName":"tune-data"}}])";
  LaunchSpec s = TwoWorkerSpec();
  s.env["PET_NODE_RANK"] = "3";
  json list = json::parse(*RenderTrialManifests(o, s, "lora-asha-t3-a1"));
  REQUIRE(list["items"].size() == 1);
  const json& job = list["items"][0];
  CHECK(job["apiVersion"] == "trainer.kubeflow.org/v1alpha1");
  CHECK(job["kind"] == "TrainJob");
  CHECK(job["metadata"]["labels"]["tune.io/trial"] == "3");
  const json& spec = job["spec"];
  CHECK(spec["runtimeRef"]["name"] == "torch-distributed");
  CHECK(spec["runtimeRef"]["kind"] == "ClusterTrainingRuntime");
  CHECK(spec["labels"]["tune.io/experiment"] == "lora-asha");
  const json& t = spec["trainer"];
  CHECK(t["image"] == "registry.example/tune:1");
  CHECK(t["command"] == json({"lora_train", "--lr", "0.001"}));
  CHECK(t["numNodes"] == 2);
  CHECK(t["resourcesPerNode"]["requests"]["memory"] == "4Gi");
  auto env = EnvOf(t);
  CHECK(env["TUNE_TRIAL_ID"]["value"] == "42");
  CHECK_FALSE(env.count("RANK"));
  CHECK_FALSE(env.count("PET_NODE_RANK"));
  const json& ov = spec["podSpecOverrides"][0];
  CHECK(ov["targetJobs"] == json::parse(R"([{"name": "trainer-node"}])"));
  // podSpecOverrides has no terminationGracePeriodSeconds: the runtime's.
  CHECK_FALSE(ov.contains("terminationGracePeriodSeconds"));
  CHECK(ov["tolerations"][0]["key"] == "nvidia.com/gpu");
  CHECK(ov["volumes"][0]["name"] == "data");
  CHECK(ov["containers"][0]["name"] == "trainer");
  CHECK(ov["containers"][0]["volumeMounts"][0]["mountPath"] == "/data");

  o.runtime_ref = "my-runtime";
  o.tolerations_json = o.volumes_json = o.volume_mounts_json = "[]";
  json other = json::parse(*RenderTrialManifests(o, s, "lora-asha-t3-a1"));
  CHECK(other["items"][0]["spec"]["runtimeRef"]["name"] == "my-runtime");
  CHECK_FALSE(other["items"][0]["spec"].contains("podSpecOverrides"));
  o.job_kind = "mpijob";
  CHECK(RenderTrialManifests(o, s, "lora-asha-t3-a1").status().message().find("backend.job_kind") !=
        std::string::npos);
}

// The containers of one rendered attempt (Job: one; PyTorchJob: Master,
// Worker; TrainJob: its trainer, which holds the env).
std::vector<json> Containers(const json& list) {
  const json& obj = list["items"].back();
  if (obj["kind"] == "Job") return {obj["spec"]["template"]["spec"]["containers"][0]};
  if (obj["kind"] == "TrainJob") return {obj["spec"]["trainer"]};
  std::vector<json> out;
  for (const auto& [type, r] : obj["spec"]["pytorchReplicaSpecs"].items()) {
    out.push_back(r["template"]["spec"]["containers"][0]);
  }
  return out;
}

TEST_CASE("a trial.env Secret reference becomes valueFrom.secretKeyRef for every job kind", "[k8s][render]") {
  for (const char* kind : {"job", "pytorchjob", "trainjob"}) {
    INFO(kind);
    KubernetesOptions o;
    o.job_kind = kind;
    o.image = "img";
    LaunchSpec s = TwoWorkerSpec();
    s.workers = 3;  // a PyTorchJob: Master and Worker replicas
    s.secret_env = {{"HF_TOKEN", {"hf-token", "token"}}, {"WANDB_API_KEY", {"wandb", "api.key"}}};
    auto text = RenderTrialManifests(o, s, "lora-asha-t3-a1");
    REQUIRE(text.ok());
    const std::vector<json> containers = Containers(json::parse(*text));
    CHECK(containers.size() == (std::string(kind) == "pytorchjob" ? 2u : 1u));
    for (const json& c : containers) {
      auto env = EnvOf(c);
      CHECK(env["HF_TOKEN"] == json::parse(
                                   R"({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}})"));
      CHECK(env["WANDB_API_KEY"]["valueFrom"]["secretKeyRef"]["key"] == "api.key");
      CHECK(env["OMP_NUM_THREADS"]["value"] == "1");  // plain values stay plain
    }
  }
}

TEST_CASE("without a working directory the container starts in its image's WORKDIR", "[k8s][render]") {
  for (const char* kind : {"job", "pytorchjob", "trainjob"}) {
    INFO(kind);
    KubernetesOptions o;
    o.job_kind = kind;
    o.image = "img";
    LaunchSpec s = TwoWorkerSpec();
    s.working_dir.clear();
    const std::string text = *RenderTrialManifests(o, s, "lora-asha-t3-a1");
    CHECK(text.find("workingDir") == std::string::npos);
  }
}

TEST_CASE("text that is not UTF-8 is refused by name, never published replaced", "[k8s][render]") {
  KubernetesOptions o;
  o.image = "img";
  LaunchSpec s = TwoWorkerSpec();
  s.trial_dir = "/data/ren\xe9/tune_runs/lora-asha/trial_0003";  // Latin-1 "rene"
  s.env["TUNE_TRIAL_DIR"] = s.trial_dir;
  for (const char* kind : {"job", "pytorchjob", "trainjob"}) {
    o.job_kind = kind;
    auto r = RenderTrialManifests(o, s, "lora-asha-t3-a1");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().IsInvalidArgument());
    CHECK(r.status().message() ==
          "TUNE_TRIAL_DIR: expected UTF-8 text for a Kubernetes manifest, got "
          "\"/data/ren\\xE9/tune_runs/lora-asha/trial_0003\" (byte \\xE9 is not UTF-8; it holds the trial's "
          "directory, which lies beside the results database: give the database a path that is UTF-8 (--db or "
          "storage.path))");
  }
  s.env.erase("TUNE_TRIAL_DIR");
  s.argv = {"train", "--out=" + s.trial_dir + "/out"};
  CHECK(CheckManifestText(s).message().rfind("trial.command[1]: expected UTF-8 text", 0) == 0);
  s.argv = {"train"};
  s.working_dir = "/data/\xff";
  CHECK(CheckManifestText(s).message().rfind("trial.working_dir: expected UTF-8 text", 0) == 0);
  s.working_dir = "/data";
  // Overlong forms and surrogates are not UTF-8 either; real UTF-8 is kept.
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "caf\xc3", "\x80"}) {
    s.env["LABEL"] = bad;
    CHECK(CheckManifestText(s).message().rfind("trial.env.LABEL: expected UTF-8", 0) == 0);
  }
  // Every bad byte is shown, the UTF-8 between them as it is.
  s.env["LABEL"] = "a\xe9" "b\xc3\xa9\xff";
  CHECK(CheckManifestText(s).message().find("got \"a\\xE9b\xc3\xa9\\xFF\" (byte \\xE9 is not UTF-8)") !=
        std::string::npos);
  s.env["LABEL"] = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80";
  CHECK(CheckManifestText(s).ok());
  CHECK(RenderTrialManifests(o, s, "lora-asha-t3-a1").ok());
}

}  // namespace
}  // namespace tune
