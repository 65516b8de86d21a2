// Good experiment.json files parse into the right values; defaults apply.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "search/tpe_sampler.h"
#include "spec/experiment_spec.h"
#include "tests/common/temp_dir.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

ExperimentSpec MustParse(const std::string& text, const std::string& path = "exp.json") {
  auto spec = ParseExperimentSpec(text, path);
  INFO(spec.status().message());
  REQUIRE(spec.ok());
  return std::move(spec).value();
}

void WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

const char* kMinimal = R"({
  "name": "minimal",
  "objective": {"metric": "loss", "mode": "max"},
  "parameters": {"x": {"type": "uniform", "low": -1, "high": 1}},
  "trial": {"command": ["prog", "--x", "${x}"]}
})";

TEST_CASE("spec: every parameter type maps onto its distribution", "[spec]") {
  auto spec = MustParse(R"({
    "name": "all-types",
    "objective": {"metric": "eval_loss", "mode": "min"},
    "parameters": {
      "u":   {"type": "uniform", "low": 0, "high": 0.2},
      "lu":  {"type": "loguniform", "low": 1e-5, "high": 1e-2},
      "qu":  {"type": "quniform", "low": 0, "high": 1, "q": 0.25},
      "qlu": {"type": "qloguniform", "low": 1, "high": 1000, "q": 5},
      "ri":  {"type": "randint", "low": 0, "high": 50},
      "qri": {"type": "qrandint", "low": 0, "high": 100, "q": 5},
      "qr1": {"type": "qrandint", "low": -3, "high": 3},
      "lri": {"type": "lograndint", "low": 1, "high": 1024},
      "big": {"type": "randint", "low": 0, "high": 1e3},
      "ch":  {"type": "choice", "values": [4, 8.5, "adamw", true, false, -2]},
      "gr":  {"type": "grid", "values": ["sgd", "adam"]}
    },
    "trial": {"command": ["prog"]}
  })");
  const SearchSpace& p = spec.parameters;
  REQUIRE(p.size() == 11);

  auto u = std::get<FloatDistribution>(p.at("u"));
  CHECK(u.low == 0.0);
  CHECK(u.high == 0.2);
  CHECK_FALSE(u.log);
  CHECK_FALSE(u.step.has_value());

  auto lu = std::get<FloatDistribution>(p.at("lu"));
  CHECK(lu.low == 1e-5);
  CHECK(lu.high == 1e-2);
  CHECK(lu.log);
  CHECK_FALSE(lu.step.has_value());

  auto qu = std::get<FloatDistribution>(p.at("qu"));
  CHECK_FALSE(qu.log);
  REQUIRE(qu.step.has_value());
  CHECK(*qu.step == 0.25);
  CHECK(Cardinality(p.at("qu")) == 5);

  auto qlu = std::get<FloatDistribution>(p.at("qlu"));
  CHECK(qlu.log);
  CHECK(qlu.step == 5.0);

  // Ray's randint: high exclusive.
  auto ri = std::get<IntDistribution>(p.at("ri"));
  CHECK(ri.low == 0);
  CHECK(ri.high == 49);
  CHECK(ri.step == 1);
  CHECK_FALSE(ri.log);

  // Ray's qrandint: high inclusive, q the step (default 1).
  auto qri = std::get<IntDistribution>(p.at("qri"));
  CHECK(qri.low == 0);
  CHECK(qri.high == 100);
  CHECK(qri.step == 5);
  CHECK(Cardinality(p.at("qri")) == 21);
  auto qr1 = std::get<IntDistribution>(p.at("qr1"));
  CHECK(qr1.low == -3);
  CHECK(qr1.high == 3);
  CHECK(qr1.step == 1);

  // Ray's lograndint: high exclusive, log scale.
  auto lri = std::get<IntDistribution>(p.at("lri"));
  CHECK(lri.low == 1);
  CHECK(lri.high == 1023);
  CHECK(lri.log);

  // An integral float is an integer bound.
  CHECK(std::get<IntDistribution>(p.at("big")).high == 999);

  auto ch = std::get<CategoricalDistribution>(p.at("ch"));
  CHECK_FALSE(ch.grid);
  REQUIRE(ch.choices.size() == 6);
  CHECK(std::get<int64_t>(ch.choices[0]) == 4);
  CHECK(std::get<double>(ch.choices[1]) == 8.5);
  CHECK(std::get<std::string>(ch.choices[2]) == "adamw");
  CHECK(std::get<bool>(ch.choices[3]) == true);
  CHECK(std::get<bool>(ch.choices[4]) == false);
  CHECK(std::get<int64_t>(ch.choices[5]) == -2);

  auto gr = std::get<CategoricalDistribution>(p.at("gr"));
  CHECK(gr.grid);
  REQUIRE(gr.choices.size() == 2);
  CHECK(std::get<std::string>(gr.choices[1]) == "adam");
}

TEST_CASE("spec: a float written with a fraction stays a double choice", "[spec]") {
  auto spec = MustParse(R"({"name": "f", "objective": {"metric": "m", "mode": "min"},
    "parameters": {"c": {"type": "choice", "values": [1.0, 2]}}, "trial": {"command": ["p"]}})");
  auto c = std::get<CategoricalDistribution>(spec.parameters.at("c"));
  CHECK(std::holds_alternative<double>(c.choices[0]));
  CHECK(std::holds_alternative<int64_t>(c.choices[1]));
}

TEST_CASE("spec: absent keys get their documented defaults", "[spec]") {
  auto spec = MustParse(kMinimal);
  CHECK(spec.name == "minimal");
  CHECK(spec.json == kMinimal);
  CHECK(spec.source_path == "exp.json");
  CHECK(spec.base_dir == fs::current_path().lexically_normal().string());

  CHECK(spec.objective.metric == "loss");
  CHECK(spec.objective.mode == Mode::kMax);
  CHECK_FALSE(spec.objective.goal.has_value());
  CHECK(spec.objective.scope == Scope::kLast);

  CHECK(spec.search.algorithm == "random");
  CHECK_FALSE(spec.search.seed_given);
  CHECK(spec.search.tpe.n_startup_trials == 10);
  CHECK(spec.search.tpe.n_ei_candidates == 24);
  CHECK(spec.search.tpe.n_ei_candidates_numerical == TpeSamplerOptions{}.n_ei_candidates_numerical);
  CHECK_FALSE(spec.search.tpe.gamma.has_value());
  CHECK(spec.search.tpe.prior_weight == 1.0);
  CHECK(spec.search.tpe.multivariate);  // Optuna 5.0's default
  CHECK(spec.search.tpe.independent_choices == TpeSamplerOptions{}.independent_choices);
  CHECK(spec.search.tpe.constant_liar);
  CHECK(spec.search.tpe.parzen_rules == "optuna5");

  CHECK(spec.scheduler.type == "fifo");
  CHECK(spec.scheduler.time_attr == "step");

  CHECK(spec.limits.max_trials == 10);
  CHECK(spec.limits.max_concurrent_trials == 1);
  CHECK(spec.limits.max_failed_trials == 0);
  CHECK(spec.limits.time_budget_s == 0);

  CHECK(spec.trial.command == std::vector<std::string>{"prog", "--x", "${x}"});
  CHECK(spec.trial.workers == 1);
  CHECK(spec.trial.max_retries == 0);
  CHECK(spec.trial.timeout_s == 0);
  CHECK(spec.trial.env.empty());
  CHECK(spec.trial.resources_per_worker.cpu == 1);
  CHECK(spec.trial.resources_per_worker.gpu == 0);
  CHECK(spec.trial.working_dir == spec.base_dir);

  CHECK(spec.backend.type == "local");
  CHECK(spec.backend.total_cpus == 0);
  CHECK(spec.backend.gpus.empty());
  CHECK(spec.backend.kubernetes.namespace_ == "default");
  CHECK(spec.backend.kubernetes.tolerations_json == "[]");
  CHECK(spec.backend.kubernetes.backoff_limit == 0);
  CHECK_FALSE(spec.backend.kubernetes.ttl_seconds_after_finished.has_value());

  CHECK(spec.storage_path.empty());
}

TEST_CASE("spec: the documented example with every key set parses with every value", "[spec]") {
  auto spec = MustParse(R"({
    "name": "lora-asha",
    "objective": {"metric": "eval_loss", "mode": "min", "goal": 1.8, "scope": "best"},
    "parameters": {
      "learning_rate": {"type": "loguniform", "low": 1e-5, "high": 1e-2},
      "lora_r":        {"type": "choice", "values": [4, 8, 16, 32]},
      "warmup_steps":  {"type": "randint", "low": 0, "high": 50}
    },
    "search":    {"algorithm": "tpe", "seed": 7, "n_startup_trials": 8, "gamma": 0.2,
                  "constant_liar": false, "multivariate": true, "parzen_rules": "optuna3"},
    "scheduler": {"type": "asha", "time_attr": "step", "max_t": 200, "grace_period": 20,
                  "reduction_factor": 3, "brackets": 1},
    "limits":    {"max_trials": 24, "max_concurrent_trials": 2, "max_failed_trials": 3,
                  "time_budget_s": 3600},
    "trial": {
      "command": ["lora_train", "--lr", "${learning_rate}", "--lora-r", "${lora_r}",
                  "--warmup-steps", "${warmup_steps}", "--out", "${trial_dir}/out",
                  "--run", "${experiment}-${trial_id}"],
      "workers": 2,
      "resources_per_worker": {"cpu": 1.5, "gpu": 1, "memory": "4Gi"},
      "env": {"OMP_NUM_THREADS": "1"},
      "max_retries": 1,
      "timeout_s": 1800,
      "working_dir": "runs/../work"
    },
    "backend": {"type": "local", "cpus": 8, "gpus": [0, "1"]},
    "storage": {"path": "results/tune.db"}
  })", "dir/exp.json");
  CHECK(spec.objective.goal == 1.8);
  CHECK(spec.objective.scope == Scope::kBest);
  CHECK(spec.search.algorithm == "tpe");
  CHECK(spec.search.seed == 7);
  CHECK(spec.search.seed_given);
  CHECK(spec.search.tpe.n_startup_trials == 8);
  CHECK(spec.search.tpe.gamma == 0.2);
  CHECK_FALSE(spec.search.tpe.constant_liar);
  CHECK(spec.search.tpe.multivariate);
  CHECK(spec.search.tpe.parzen_rules == "optuna3");
  CHECK(spec.scheduler.type == "asha");
  CHECK(spec.scheduler.max_t == 200);
  CHECK(spec.scheduler.grace_period == 20);
  CHECK(spec.scheduler.reduction_factor == 3.0);
  CHECK(spec.scheduler.brackets == 1);
  CHECK(spec.limits.max_trials == 24);
  CHECK(spec.limits.max_concurrent_trials == 2);
  CHECK(spec.limits.max_failed_trials == 3);
  CHECK(spec.limits.time_budget_s == 3600);
  CHECK(spec.trial.workers == 2);
  CHECK(spec.trial.resources_per_worker.cpu == 1.5);
  CHECK(spec.trial.resources_per_worker.gpu == 1);
  CHECK(spec.trial.resources_per_worker.memory == "4Gi");
  CHECK(spec.trial.env.at("OMP_NUM_THREADS") == "1");
  CHECK(spec.trial.max_retries == 1);
  CHECK(spec.trial.timeout_s == 1800);
  // Relative paths of the trial are relative to the experiment file.
  fs::path base = fs::current_path() / "dir";
  CHECK(spec.base_dir == base.lexically_normal().string());
  CHECK(spec.trial.working_dir == (base / "work").lexically_normal().string());
  CHECK(spec.backend.total_cpus == 8);
  CHECK(spec.backend.gpus == std::vector<std::string>{"0", "1"});
  // The database path is kept as written (relative to the current directory).
  CHECK(spec.storage_path == "results/tune.db");
}

TEST_CASE("spec: search.multivariate false keeps one TPE model per parameter", "[spec]") {
  auto spec = MustParse(R"({"name": "u", "objective": {"metric": "m", "mode": "min"},
    "parameters": {"x": {"type": "uniform", "low": 0, "high": 1}},
    "search": {"algorithm": "tpe", "multivariate": false}, "trial": {"command": ["p", "${x}"]}})");
  CHECK_FALSE(spec.search.tpe.multivariate);
}

TEST_CASE("spec: scheduler defaults follow Ray per type", "[spec]") {
  std::string head = R"({"name": "s", "objective": {"metric": "m", "mode": "min"},
    "parameters": {"x": {"type": "uniform", "low": 0, "high": 1}}, "trial": {"command": ["p"]},
    "scheduler": )";
  auto asha = MustParse(head + R"({"type": "asha"}})");
  CHECK(asha.scheduler.max_t == 100);
  CHECK(asha.scheduler.grace_period == 1);
  CHECK(asha.scheduler.reduction_factor == 4.0);
  CHECK(asha.scheduler.brackets == 1);
  CHECK(asha.scheduler.time_attr == "step");

  auto median = MustParse(head + R"({"type": "median", "time_attr": "epoch"}})");
  CHECK(median.scheduler.grace_period == 60);
  CHECK(median.scheduler.min_samples_required == 3);
  CHECK(median.scheduler.hard_stop);
  CHECK(median.scheduler.time_attr == "epoch");

  auto median2 = MustParse(head + R"({"type": "median", "grace_period": 0,
                                      "min_samples_required": 5, "hard_stop": false}})");
  CHECK(median2.scheduler.grace_period == 0);
  CHECK(median2.scheduler.min_samples_required == 5);
  CHECK_FALSE(median2.scheduler.hard_stop);
}

TEST_CASE("spec: grid search defaults max_trials to the grid size", "[spec]") {
  std::string head = R"({"name": "g", "objective": {"metric": "m", "mode": "min"},
    "parameters": {
      "opt": {"type": "choice", "values": ["sgd", "adam", "adamw"]},
      "r":   {"type": "qrandint", "low": 4, "high": 16, "q": 4},
      "d":   {"type": "quniform", "low": 0, "high": 0.2, "q": 0.1}
    },
    "trial": {"command": ["p"]}, )";
  auto grid = MustParse(head + R"("search": {"algorithm": "grid"}})");
  CHECK(grid.limits.max_trials == 3 * 4 * 3);
  auto explicit_max = MustParse(head + R"("search": {"algorithm": "grid"}, "limits": {"max_trials": 5}})");
  CHECK(explicit_max.limits.max_trials == 5);
  // Without algorithm grid there are no grid parameters here: the usual 10.
  auto random = MustParse(head + R"("search": {"algorithm": "random", "seed": 0}})");
  CHECK(random.limits.max_trials == 10);
  CHECK(random.search.seed_given);
  CHECK(random.search.seed == 0);
}

TEST_CASE("spec: points_to_evaluate take each parameter's own value type", "[spec]") {
  auto spec = MustParse(R"({"name": "p", "objective": {"metric": "m", "mode": "min"},
    "parameters": {
      "lr":  {"type": "loguniform", "low": 1e-5, "high": 1e-2},
      "d":   {"type": "uniform", "low": 0, "high": 0.5},
      "r":   {"type": "choice", "values": [4, 8, 16]},
      "w":   {"type": "randint", "low": 0, "high": 50},
      "opt": {"type": "choice", "values": ["adamw", "sgd"]},
      "g":   {"type": "grid", "values": [true, false]}
    },
    "search": {"algorithm": "tpe", "points_to_evaluate": [
      {"lr": 0.001, "d": 0, "r": 16.0, "w": 1e1, "opt": "sgd", "g": false},
      {"lr": 3e-4},
      {}
    ]},
    "trial": {"command": ["p"]}})");
  const auto& points = spec.search.points_to_evaluate;
  REQUIRE(points.size() == 3);
  // A float parameter takes 0 as 0.0; a choice takes the value it equals
  // (16.0 is the integer choice 16); an int parameter takes 1e1 as 10.
  CHECK(std::get<double>(points[0].at("lr")) == 0.001);
  CHECK(std::get<double>(points[0].at("d")) == 0.0);
  CHECK(std::get<int64_t>(points[0].at("r")) == 16);
  CHECK(std::get<int64_t>(points[0].at("w")) == 10);
  CHECK(std::get<std::string>(points[0].at("opt")) == "sgd");
  CHECK(std::get<bool>(points[0].at("g")) == false);
  CHECK(points[1].size() == 1);
  CHECK(points[2].empty());
  // randint's high is exclusive (Ray): 50 is outside.
  auto bad = ParseExperimentSpec(R"({"name": "p", "objective": {"metric": "m", "mode": "min"},
    "parameters": {"w": {"type": "randint", "low": 0, "high": 50}},
    "search": {"points_to_evaluate": [{"w": 50}]}, "trial": {"command": ["p"]}})", "p.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "p.json: search.points_to_evaluate[0].w: expected a value of int[0, 49], got 50");
}

TEST_CASE("spec: grid parameters under random search are each tried at least once", "[spec]") {
  std::string head = R"({"name": "g", "objective": {"metric": "m", "mode": "min"},
    "trial": {"command": ["p"]}, "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}, )";
  auto small = MustParse(head + R"("a": {"type": "grid", "values": [1, 2, 3]}}})");
  CHECK(small.limits.max_trials == 10);
  auto large = MustParse(head + R"("a": {"type": "grid", "values": [1, 2, 3, 4]},
                                   "b": {"type": "grid", "values": [1, 2, 3]}}})");
  CHECK(large.limits.max_trials == 12);
}

TEST_CASE("spec: kubernetes options are parsed and JSON-valued ones kept as JSON text", "[spec]") {
  auto spec = MustParse(R"({
    "name": "k8s",
    "objective": {"metric": "eval_loss", "mode": "min"},
    "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2}},
    "trial": {"command": ["lora_train", "--lr", "${lr}"], "workers": 2,
              "resources_per_worker": {"cpu": 2, "gpu": 1, "memory": "8Gi"}},
    "backend": {
      "type": "kubernetes",
      "namespace": "tune-system",
      "image": "registry.local/lora-train:0.1",
      "image_pull_policy": "IfNotPresent",
      "service_account": "tune-runner",
      "node_selector": {"kubernetes.io/arch": "amd64"},
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
      "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "tune-data"}}],
      "volume_mounts": [{"name": "data", "mountPath": "/data"}],
      "labels": {"team": "ml", "app.kubernetes.io/part-of": "tune"},
      "annotations": {"example.com/note": "anything goes here: spaces, too"},
      "ttl_seconds_after_finished": 300,
      "backoff_limit": 2,
      "pending_timeout_s": 120,
      "kubeconfig": "/etc/kube/config",
      "context": "kind-tune",
      "kubectl": "/usr/local/bin/kubectl"
    }
  })");
  const KubernetesOptions& k = spec.backend.kubernetes;
  CHECK(spec.backend.type == "kubernetes");
  CHECK(k.namespace_ == "tune-system");
  CHECK(k.image == "registry.local/lora-train:0.1");
  CHECK(k.image_pull_policy == "IfNotPresent");
  CHECK(k.service_account == "tune-runner");
  CHECK(k.node_selector.at("kubernetes.io/arch") == "amd64");
  CHECK(k.tolerations_json ==
        R"([{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}])");
  CHECK(k.volumes_json == R"([{"name":"data","persistentVolumeClaim":{"claimName":"tune-data"}}])");
  CHECK(k.volume_mounts_json == R"([{"mountPath":"/data","name":"data"}])");
  CHECK(k.labels.size() == 2);
  CHECK(k.labels.at("app.kubernetes.io/part-of") == "tune");
  CHECK(k.annotations.at("example.com/note") == "anything goes here: spaces, too");
  CHECK(k.ttl_seconds_after_finished == 300);
  CHECK(k.backoff_limit == 2);
  CHECK(k.pending_timeout_s == 120);
  CHECK(k.kubeconfig == "/etc/kube/config");
  CHECK(k.context == "kind-tune");
  CHECK(k.kubectl == "/usr/local/bin/kubectl");
  CHECK(spec.trial.resources_per_worker.memory == "8Gi");
}

TEST_CASE("spec: the tune run --backend override switches the backend and checks what it needs", "[spec]") {
  auto spec = MustParse(kMinimal);
  Status s = OverrideBackend(&spec, "kubernetes");
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == "exp.json: backend.image: expected a container image for the kubernetes "
                       "backend, got nothing (the key is missing)");
  CHECK(spec.backend.type == "local");
  CHECK_FALSE(OverrideBackend(&spec, "slurm").ok());

  std::string text = kMinimal;
  text.insert(text.rfind('}'), R"(, "backend": {"type": "local", "image": "trainer:1"})");
  auto k8s = MustParse(text);
  REQUIRE(OverrideBackend(&k8s, "kubernetes").ok());
  CHECK(k8s.backend.type == "kubernetes");
  REQUIRE(OverrideBackend(&k8s, "local").ok());
  CHECK(k8s.backend.type == "local");
}

TEST_CASE("spec: a trial.env value may name a key of a Kubernetes Secret instead of a value", "[spec]") {
  std::string text = kMinimal;
  text.replace(text.find(R"("trial": {)"), 10, R"("trial": {"env": {
      "HF_TOKEN": {"secret": "hf-token", "key": "token"},
      "WANDB_API_KEY": {"secret": "team.wandb", "key": "api_key.v2"},
      "OMP_NUM_THREADS": "1"},)");
  auto spec = MustParse(text);
  CHECK(spec.trial.env == std::map<std::string, std::string>{{"OMP_NUM_THREADS", "1"}});
  CHECK(spec.trial.env_secrets == std::map<std::string, SecretKeyRef>{
                                      {"HF_TOKEN", {"hf-token", "token"}},
                                      {"WANDB_API_KEY", {"team.wandb", "api_key.v2"}}});
  // Both backends accept it (the local one reads the tuner's own HF_TOKEN).
  CHECK(OverrideBackend(&spec, "local").ok());
}

TEST_CASE("spec: trial.working_dir is kept as written for a pod, resolved for local processes", "[spec]") {
  auto none = MustParse(kMinimal);
  CHECK(none.trial.working_dir_written.empty());  // a pod starts in its image's WORKDIR
  CHECK(none.trial.working_dir == none.base_dir);
  std::string text = kMinimal;
  text.replace(text.find(R"("trial": {)"), 10, R"("trial": {"working_dir": "/workspace/",)");
  text.insert(text.rfind('}'), R"(, "backend": {"type": "kubernetes", "image": "trainer:1"})");
  auto pod = MustParse(text);
  CHECK(pod.trial.working_dir_written == "/workspace/");
  CHECK(pod.trial.working_dir == "/workspace");
  // A relative one is the local backend's: refused when switching to kubernetes.
  std::string relative = kMinimal;
  relative.replace(relative.find(R"("trial": {)"), 10, R"("trial": {"working_dir": "src",)");
  relative.insert(relative.rfind('}'), R"(, "backend": {"image": "trainer:1"})");
  auto local = MustParse(relative);
  CHECK(local.trial.working_dir == (fs::path(local.base_dir) / "src").string());
  Status s = OverrideBackend(&local, "kubernetes");
  CHECK(s.message() ==
        "exp.json: trial.working_dir: expected an absolute path in the container for the kubernetes backend "
        "(leave the key out for the image's WORKDIR; relative paths are the local backend's), got \"src\"");
}

TEST_CASE("spec: a missing file names the file and the OS reason", "[spec]") {
  auto spec = LoadExperimentSpec("no/such/dir/exp.json");
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.status().IsInvalidArgument());
  CHECK(spec.status().message() == "no/such/dir/exp.json: cannot read: No such file or directory");

  const TempDir scratch("isdir");
  const fs::path& dir = scratch.path;
  auto is_dir = LoadExperimentSpec(dir.string());
  REQUIRE_FALSE(is_dir.ok());
  CHECK(is_dir.status().message() == dir.string() + ": cannot read: Is a directory");
  fs::remove_all(dir);
}

TEST_CASE("spec: a spec loaded from a file knows its path and directory", "[spec]") {
  const TempDir scratch("load");
  const fs::path& dir = scratch.path;
  fs::path file = dir / "exp.json";
  std::string text = kMinimal;
  text.insert(text.rfind('}'), R"(, "storage": {"path": "tune.db"})");
  WriteFile(file, text);
  auto spec = LoadExperimentSpec(file.string());
  INFO(spec.status().message());
  REQUIRE(spec.ok());
  CHECK(spec->source_path == file.string());
  CHECK(spec->base_dir == dir.lexically_normal().string());
  CHECK(spec->trial.working_dir == spec->base_dir);
  CHECK(spec->json == text);
  CHECK(spec->storage_path == "tune.db");

  // Errors from a loaded file name it.
  WriteFile(file, "{\"name\": \"x\",}");
  auto bad = LoadExperimentSpec(file.string());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind(file.string() + ": line 1, column 14: expected valid JSON", 0) == 0);
  fs::remove_all(dir);
}

TEST_CASE("spec: built-in placeholders and several per argument are accepted", "[spec]") {
  auto spec = MustParse(R"({"name": "p", "objective": {"metric": "m", "mode": "min"},
    "parameters": {"a": {"type": "randint", "low": 0, "high": 3},
                   "b": {"type": "choice", "values": ["x", "y"]}},
    "trial": {"command": ["p", "--ab=${a}${b}", "${trial_dir}/ckpt", "${experiment}", "${trial_id}",
                          "$HOME", "cost: $5"]}})");
  CHECK(spec.trial.command.size() == 7);
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

TEST_CASE("spec: a resume may change limits, trial, backend and storage, not the search", "[spec]") {
  const std::string stored = R"({"name": "r", "objective": {"metric": "loss", "mode": "min"},
    "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2}},
    "search": {"algorithm": "tpe", "seed": 3}, "limits": {"max_trials": 4},
    "trial": {"command": ["prog", "${lr}"]}})";
  // Layout and key order do not matter.
  ExperimentSpec same = MustParse(R"({"trial": {"command": ["prog", "${lr}"]}, "limits": {"max_trials": 4},
    "search": {"seed": 3, "algorithm": "tpe"}, "name": "r",
    "parameters": {"lr": {"high": 1e-2, "low": 1e-5, "type": "loguniform"}},
    "objective": {"mode": "min", "metric": "loss"}})");
  auto unchanged = CheckResumable(same, stored, "t.db");
  REQUIRE(unchanged.ok());
  CHECK(unchanged->empty());

  ExperimentSpec more = MustParse(R"({"name": "r", "objective": {"metric": "loss", "mode": "min"},
    "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2}},
    "search": {"algorithm": "tpe", "seed": 3}, "limits": {"max_trials": 9},
    "trial": {"command": ["prog", "${lr}"], "timeout_s": 60}, "storage": {"path": "x.db"}})");
  auto changed = CheckResumable(more, stored, "t.db");
  REQUIRE(changed.ok());
  CHECK(*changed == std::vector<std::string>{"limits", "trial", "storage"});

  ExperimentSpec other_search = MustParse(R"({"name": "r", "objective": {"metric": "loss", "mode": "min"},
    "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2}},
    "search": {"algorithm": "tpe", "seed": 3, "multivariate": true}, "limits": {"max_trials": 4},
    "trial": {"command": ["prog", "${lr}"]}})");
  auto refused = CheckResumable(other_search, stored, "t.db");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK(refused.status().message() ==
        "exp.json: search.multivariate: expected nothing as when experiment 'r' in t.db started (--resume keeps its "
        "parameters, objective, search and scheduler; give the experiment another name to start a new one), got true");

  ExperimentSpec no_scheduler_key = MustParse(R"({"name": "r", "objective": {"metric": "loss", "mode": "min"},
    "parameters": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2}},
    "search": {"algorithm": "tpe", "seed": 3}, "scheduler": {"type": "fifo"}, "limits": {"max_trials": 4},
    "trial": {"command": ["prog", "${lr}"]}})");
  auto added = CheckResumable(no_scheduler_key, stored, "t.db");
  REQUIRE_FALSE(added.ok());
  CHECK(added.status().message().find("exp.json: scheduler: expected nothing") == 0);
}

TEST_CASE("spec: tracking.mlflow is parsed and every key is optional", "[spec]") {
  const std::string base = R"({"name": "ml", "objective": {"metric": "loss", "mode": "min"}, "parameters": {"lr": {"type": "uniform", "low": 0, "high": 1}},
    "trial": {"command": ["prog", "${lr}"]}, )";
  ExperimentSpec full = MustParse(base + R"("tracking": {"mlflow": {"tracking_uri": "http://127.0.0.1:5000/prefix",
      "experiment_name": "lora sweep", "tags": {"team": "nlp"}}}})");
  REQUIRE(full.tracking.mlflow);
  CHECK(full.tracking.mlflow->tracking_uri == "http://127.0.0.1:5000/prefix");
  CHECK(full.tracking.mlflow->experiment_name == "lora sweep");
  CHECK(full.tracking.mlflow->tags == std::map<std::string, std::string>{{"team", "nlp"}});
  CHECK(!full.tracking.tensorboard_dir);

  ExperimentSpec bare = MustParse(base + R"("tracking": {"mlflow": true, "tensorboard": true}})");
  REQUIRE(bare.tracking.mlflow);
  CHECK(bare.tracking.mlflow->tracking_uri.empty());
  CHECK(bare.tracking.mlflow->experiment_name.empty());
  CHECK(bare.tracking.tensorboard_dir == std::optional<std::string>(""));

  CHECK(!MustParse(base + R"("tracking": {"mlflow": false}})").tracking.mlflow);
  CHECK(!MustParse(base + R"("tracking": {}})").tracking.mlflow);
}

}  // namespace
}  // namespace tune
