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

}  // namespace
}  // namespace tune
