// `tune import katib`: Katib's own example experiments (tests/import/katib/)
// and small documents for each rule of the mapping. Every converted
// experiment is checked by the real spec parser, as `tune validate` reads it.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "import/katib_import.h"
#include "spec/experiment_spec.h"

namespace {

using Json = nlohmann::json;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/tests/import/katib/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Converted {
  Json json;
  std::vector<std::string> notes;
};

// Imports `yaml`, requires success, and requires that the spec parser
// accepts the result (unless `must_parse` is false).
Converted Import(const std::string& yaml, const std::string& name = "exp.yaml", bool must_parse = true) {
  auto r = tune::ImportKatibExperiment(yaml, name);
  INFO(r.status().message());
  REQUIRE(r.ok());
  if (must_parse) {
    auto spec = tune::ParseExperimentSpec(r->experiment_json, "experiment.json");
    INFO(r->experiment_json);
    INFO(spec.status().message());
    REQUIRE(spec.ok());
  }
  return {Json::parse(r->experiment_json), r->notes};
}

std::string ImportError(const std::string& yaml, const std::string& name = "exp.yaml") {
  auto r = tune::ImportKatibExperiment(yaml, name);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().IsInvalidArgument());
  CHECK(r.status().message().find('\n') == std::string::npos);
  return r.status().message();
}

bool HasNote(const Converted& c, const std::string& prefix) {
  for (const auto& n : c.notes) {
    if (n.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// A minimal Experiment with a Job trial; `params`, `extra_spec` and
// `container_extra` are spliced in as YAML (indented as their place needs).
std::string Doc(const std::string& params, const std::string& extra_spec = "",
                const std::string& container_extra = "", const std::string& algorithm = "random") {
  return "apiVersion: kubeflow.org/v1beta1\n"
         "kind: Experiment\n"
         "metadata:\n"
         "  name: small\n"
         "spec:\n"
         "  objective:\n"
         "    type: maximize\n"
         "    objectiveMetricName: accuracy\n"
         "  algorithm:\n"
         "    algorithmName: " + algorithm + "\n"
         "  maxTrialCount: 6\n" +
         extra_spec +
         "  parameters:\n" + params +
         "  trialTemplate:\n"
         "    primaryContainerName: main\n"
         "    trialParameters:\n"
         "      - name: x\n"
         "        reference: x\n"
         "    trialSpec:\n"
         "      apiVersion: batch/v1\n"
         "      kind: Job\n"
         "      spec:\n"
         "        template:\n"
         "          spec:\n"
         "            containers:\n"
         "              - name: main\n"
         "                image: example.org/train:1\n"
         "                command: [\"train\", \"--x=${trialParameters.x}\"]\n" +
         container_extra;
}

const std::string kX =
    "    - name: x\n"
    "      parameterType: double\n"
    "      feasibleSpace: {min: \"0.1\", max: \"0.9\"}\n";

}  // namespace

TEST_CASE("import katib: random.yaml maps field by field", "[import][katib]") {
  Converted c = Import(Fixture("random.yaml"), "random.yaml");
  const Json& j = c.json;
  CHECK(j["name"] == "random");
  CHECK(j["objective"] == Json::parse(R"({"metric": "loss", "mode": "min", "goal": 0.001, "scope": "best"})"));
  CHECK(j["parameters"]["lr"] == Json::parse(R"({"type": "uniform", "low": 0.01, "high": 0.05})"));
  CHECK(j["parameters"]["momentum"] == Json::parse(R"({"type": "uniform", "low": 0.5, "high": 0.9})"));
  CHECK(j["search"] == Json::parse(R"({"algorithm": "random"})"));
  // Katib fails on more than maxFailedTrialCount (3) failures, tune on 4.
  CHECK(j["limits"] == Json::parse(R"({"max_trials": 12, "max_concurrent_trials": 3, "max_failed_trials": 4})"));
  CHECK(j["trial"]["command"] == Json::parse(R"(["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1",
      "--batch-size=16", "--lr=${lr}", "--momentum=${momentum}"])"));
  CHECK(j["trial"]["resources_per_worker"] == Json::parse(R"({"cpu": 0.5, "memory": "1Gi"})"));
  CHECK(j["backend"] == Json::parse(R"({"type": "kubernetes", "job_kind": "job", "namespace": "kubeflow",
      "image": "ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest"})"));
  CHECK_FALSE(j.contains("scheduler"));
  // Nothing dropped silently.
  CHECK(HasNote(c, "spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: not carried over"));
  CHECK(HasNote(c, "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].resources.limits.cpu: "
                   "carried over as the CPU request"));
}

TEST_CASE("import katib: tpe, multivariate-tpe and grid examples", "[import][katib]") {
  CHECK(Import(Fixture("tpe.yaml")).json["search"] == Json::parse(R"({"algorithm": "tpe", "multivariate": false})"));
  CHECK(Import(Fixture("multivariate-tpe.yaml")).json["search"] ==
        Json::parse(R"({"algorithm": "tpe", "multivariate": true})"));
  Converted grid = Import(Fixture("grid.yaml"));
  CHECK(grid.json["search"] == Json::parse(R"({"algorithm": "grid"})"));
  CHECK(grid.json["parameters"]["lr"] == Json::parse(R"({"type": "quniform", "low": 0.01, "high": 0.05, "q": 0.005})"));
  CHECK(grid.json["parameters"]["momentum"] == Json::parse(R"({"type": "quniform", "low": 0.5, "high": 0.9, "q": 0.1})"));
}

TEST_CASE("import katib: optuna-distribution.yaml's log and integer forms", "[import][katib]") {
  const Json p = Import(Fixture("optuna-distribution.yaml")).json["parameters"];
  CHECK(p["lr"] == Json::parse(R"({"type": "quniform", "low": 1.0, "high": 5.0, "q": 0.1})"));
  CHECK(p["momentum"] == Json::parse(R"({"type": "loguniform", "low": 0.001, "high": 3.0})"));
  // Katib's max is inclusive, randint's high is not.
  CHECK(p["epochs"] == Json::parse(R"({"type": "randint", "low": 1, "high": 4})"));
  CHECK(p["batch_size"] == Json::parse(R"({"type": "lograndint", "low": 32, "high": 65})"));
}

TEST_CASE("import katib: median-stop.yaml becomes the median stopping rule", "[import][katib]") {
  Converted c = Import(Fixture("median-stop.yaml"));
  CHECK(c.json["scheduler"] == Json::parse(R"({"type": "median", "grace_period": 2, "min_samples_required": 1})"));
  CHECK(c.json["limits"]["max_concurrent_trials"] == 2);
  CHECK(HasNote(c, "spec.trialTemplate.retain: not carried over"));
}

TEST_CASE("import katib: pytorchjob-mnist.yaml becomes a 2-worker pytorchjob experiment", "[import][katib]") {
  Converted c = Import(Fixture("pytorchjob-mnist.yaml"), "pytorchjob-mnist.yaml");
  CHECK(c.json["backend"]["job_kind"] == "pytorchjob");
  CHECK(c.json["trial"]["workers"] == 2);
  CHECK(c.json["trial"]["command"].back() == "--momentum=${momentum}");
  CHECK(HasNote(c, "spec.trialTemplate.trialSpec.spec.pytorchReplicaSpecs.Master.restartPolicy: not carried over"));
  // The Worker's template is the Master's: nothing to say about it.
  CHECK_FALSE(HasNote(c, "spec.trialTemplate.trialSpec.spec.pytorchReplicaSpecs.Worker.template"));
  auto spec = tune::ParseExperimentSpec(c.json.dump(), "mnist.json");
  INFO(spec.status().message());
  REQUIRE(spec.ok());
  CHECK(spec->backend.job_kind == "pytorchjob");
  CHECK(spec->backend.kubernetes.job_kind == "pytorchjob");
  CHECK(spec->trial.workers == 2);
}

TEST_CASE("import katib: algorithms tune does not have are errors naming what it offers", "[import][katib]") {
  struct Case {
    const char* file;
    const char* name;
    const char* instead;
  };
  for (const Case& k : {Case{"cma-es.yaml", "cmaes", "multivariate-tpe"},
                        Case{"hyperband.yaml", "hyperband", "ASHA scheduler"},
                        Case{"sobol.yaml", "sobol", "random"}}) {
    INFO(k.file);
    std::string msg = ImportError(Fixture(k.file), k.file);
    CHECK(msg.rfind(std::string(k.file) + ": line ", 0) == 0);
    CHECK(msg.find("spec.algorithm.algorithmName: expected random, tpe, multivariate-tpe, bayesianoptimization, grid or pbt") != std::string::npos);
    CHECK(msg.find(std::string("got \"") + k.name + "\"") != std::string::npos);
    CHECK(msg.find(k.instead) != std::string::npos);
  }
}

TEST_CASE("import katib: simple-pbt.yaml becomes the pbt scheduler, with warnings where Katib differs", "[import][katib]") {
  Converted c = Import(Fixture("simple-pbt.yaml"), "simple-pbt.yaml");
  CHECK(c.json["search"]["algorithm"] == "random");
  const Json& s = c.json["scheduler"];
  CHECK(s["type"] == "pbt");
  CHECK(s["quantile_fraction"] == 0.2);  // truncation_threshold
  CHECK(s["resample_probability"] == 0.0);  // absent: Katib always perturbs
  CHECK(s["synch"] == true);
  CHECK(s["perturbation_interval"] == 20);
  CHECK(s["max_t"] == 20);  // maxTrialCount 2 of n_population 40: one generation
  CHECK(c.json["limits"]["max_trials"] == 40);  // n_population
  CHECK(c.json["limits"]["max_concurrent_trials"] == 2);
  CHECK(HasNote(c, "spec.algorithm: warning: Katib's pbt is generational"));
  CHECK(HasNote(c, "spec.algorithm.algorithmSettings.truncation_threshold: warning:"));
  CHECK(HasNote(c, "spec.algorithm.algorithmSettings[0].value: not carried over"));  // suggestion_trial_dir
  CHECK(HasNote(c, "spec.maxTrialCount: counts Katib's trials of every generation"));

  // resample_probability, a threshold above Ray's 0.5 and several generations.
  std::string yaml = Fixture("simple-pbt.yaml");
  auto at = yaml.find("maxTrialCount: 2");
  REQUIRE(at != std::string::npos);
  yaml.replace(at, 16, "maxTrialCount: 120");
  at = yaml.find("value: '0.2'");
  REQUIRE(at != std::string::npos);
  yaml.replace(at, 12, "value: '0.8'\n      - name: resample_probability\n        value: '0.3'");
  c = Import(yaml);
  CHECK(c.json["scheduler"]["quantile_fraction"] == 0.5);
  CHECK(c.json["scheduler"]["resample_probability"] == 0.3);
  CHECK(c.json["scheduler"]["max_t"] == 60);  // 3 generations of 40
  CHECK(HasNote(c, "spec.algorithm.algorithmSettings.resample_probability: warning: Katib resamples"));
  bool capped = false;
  for (const auto& n : c.notes) capped |= n.find("quantile_fraction is at most 0.5") != std::string::npos;
  CHECK(capped);

  // Katib's own checks, and no early stopping beside pbt.
  std::string small = Fixture("simple-pbt.yaml");
  small.replace(small.find("value: '40'"), 11, "value: '4'");
  CHECK(ImportError(small).find("an integer of at least 5 (Katib's minimum), got \"4\"") != std::string::npos);
  std::string stopping = Fixture("simple-pbt.yaml");
  stopping.replace(stopping.find("  parameters:"), 0, "  earlyStopping:\n    algorithmName: medianstop\n");
  CHECK(ImportError(stopping).find("spec.earlyStopping: expected no early stopping with pbt") != std::string::npos);
}

TEST_CASE("import katib: bayesianoptimization is the gp sampler", "[import][katib]") {
  // Katib's own example: random_state becomes the seed.
  Converted c = Import(Fixture("bayesian-optimization.yaml"), "bayesian-optimization.yaml");
  CHECK(c.json["search"] == Json::parse(R"({"algorithm": "gp", "seed": 10})"));
  // Its scikit-optimize settings: n_initial_points is n_startup_trials, a GP
  // base estimator is what gp is, the acquisition settings are noted.
  const std::string settings =
      "bayesianoptimization\n"
      "    algorithmSettings:\n"
      "      - {name: n_initial_points, value: \"5\"}\n"
      "      - {name: base_estimator, value: GP}\n"
      "      - {name: acq_func, value: gp_hedge}\n";
  Converted s = Import(Doc(kX, "", "", settings));
  CHECK(s.json["search"] == Json::parse(R"({"algorithm": "gp", "n_startup_trials": 5})"));
  CHECK(HasNote(s, "spec.algorithm.algorithmSettings[2].value: not carried over"));
  // Another estimator, or no initial points, is refused, naming the setting.
  std::string msg = ImportError(Doc(kX, "", "",
                                    "bayesianoptimization\n    algorithmSettings:\n"
                                    "      - {name: base_estimator, value: RF}\n"));
  CHECK(msg.find("spec.algorithm.algorithmSettings[0].value: expected GP") != std::string::npos);
  CHECK(msg.find("got \"RF\"") != std::string::npos);
  msg = ImportError(Doc(kX, "", "",
                        "bayesianoptimization\n    algorithmSettings:\n"
                        "      - {name: n_initial_points, value: \"0\"}\n"));
  CHECK(msg.find("spec.algorithm.algorithmSettings[0].value: expected an integer of at least 1") != std::string::npos);
}

TEST_CASE("import katib: integer ranges, steps and lists", "[import][katib]") {
  const Json p = Import(Doc(kX +
                            "    - name: n\n      parameterType: int\n      feasibleSpace: {min: \"1\", max: \"3\"}\n"
                            "    - name: k\n      parameterType: int\n      feasibleSpace: {min: 2, max: 10, step: 4}\n"
                            "    - name: d\n      parameterType: discrete\n      feasibleSpace: {list: [\"16\", \"32\", \"0.5\"]}\n"
                            "    - name: opt\n      parameterType: categorical\n      feasibleSpace: {list: [sgd, adam]}\n"
                            "    - name: w\n      parameterType: double\n      feasibleSpace: {min: 0.001, max: 1, step: 0.001, distribution: logUniform}\n"))
                     .json["parameters"];
  CHECK(p["n"] == Json::parse(R"({"type": "randint", "low": 1, "high": 4})"));
  // qrandint's high is inclusive, as Katib's max.
  CHECK(p["k"] == Json::parse(R"({"type": "qrandint", "low": 2, "high": 10, "q": 4})"));
  CHECK(p["d"] == Json::parse(R"({"type": "choice", "values": [16, 32, 0.5]})"));
  CHECK(p["opt"] == Json::parse(R"({"type": "choice", "values": ["sgd", "adam"]})"));
  CHECK(p["w"] == Json::parse(R"({"type": "qloguniform", "low": 0.001, "high": 1.0, "q": 0.001})"));
}

TEST_CASE("import katib: normal and logNormal name the parameter", "[import][katib]") {
  std::string msg = ImportError(Doc("    - name: lr\n      parameterType: double\n"
                                    "      feasibleSpace: {min: \"0.1\", max: \"0.9\", distribution: normal}\n"));
  CHECK(msg == "exp.yaml: line 15: spec.parameters[0].feasibleSpace.distribution: expected uniform or logUniform "
               "for parameter \"lr\" (tune has no normal distribution; use logUniform or uniform bounds instead), "
               "got \"normal\"");
  CHECK(ImportError(Doc("    - name: x\n      parameterType: double\n"
                        "      feasibleSpace: {min: 1, max: 2, distribution: logNormal}\n"))
            .find("parameter \"x\" (tune has no logNormal distribution") != std::string::npos);
}

TEST_CASE("import katib: malformed YAML names the line", "[import][katib]") {
  std::string msg = ImportError("apiVersion: kubeflow.org/v1beta1\nkind: Experiment\nmetadata:\n  name: [a, b\n", "bad.yaml");
  CHECK(msg.rfind("bad.yaml: line ", 0) == 0);
  CHECK(msg.find("expected valid YAML") != std::string::npos);
  CHECK(ImportError("- a\n- b\n") == "exp.yaml: line 1: the document: expected a map, got a list");
  CHECK(ImportError("apiVersion: kubeflow.org/v1\nkind: Experiment\n") ==
        "exp.yaml: line 1: apiVersion: expected kubeflow.org/v1beta1, got \"kubeflow.org/v1\"");
}

TEST_CASE("import katib: objective strategies become the scope where they map", "[import][katib]") {
  auto with = [](const std::string& strategies) {
    return "    metricStrategies:\n" + strategies;
  };
  auto doc = [&](const std::string& strategies) {
    std::string d = Doc(kX);
    std::string anchor = "    objectiveMetricName: accuracy\n";
    return d.replace(d.find(anchor), anchor.size(), anchor + with(strategies));
  };
  CHECK(Import(doc("      - {name: accuracy, value: latest}\n")).json["objective"]["scope"] == "last");
  CHECK(Import(doc("      - {name: accuracy, value: max}\n")).json["objective"]["scope"] == "best");
  Converted opposite = Import(doc("      - {name: accuracy, value: min}\n      - {name: loss, value: latest}\n"));
  CHECK(opposite.json["objective"]["scope"] == "best");
  CHECK(HasNote(opposite, "spec.objective.metricStrategies[0]: not carried over"));
  CHECK(HasNote(opposite, "spec.objective.metricStrategies[1]: not carried over"));
}

TEST_CASE("import katib: settings, limits and trial parameters", "[import][katib]") {
  std::string settings =
      "  maxFailedTrialCount: 0\n"
      "  parallelTrialCount: 2\n";
  std::string d = Doc(kX + "    - name: num-epochs\n      parameterType: int\n      feasibleSpace: {min: 1, max: 5}\n",
                      settings, "", "multivariate-tpe\n    algorithmSettings:\n      - {name: random_state, value: \"10\"}\n"
                                    "      - {name: n_startup_trials, value: \"5\"}");
  // num-epochs: a parameter named by a trial parameter under another name.
  d.replace(d.find("      - name: x\n        reference: x\n"), 0,
            "      - name: epochs\n        reference: num-epochs\n      - name: trial\n        reference: ${trialSpec.Name}\n");
  d.replace(d.find("\"--x=${trialParameters.x}\"]"), std::string("\"--x=${trialParameters.x}\"]").size(),
            "\"--x=${trialParameters.x}\", \"--epochs=${trialParameters.epochs}\", \"--run=${trialParameters.trial}\"]");
  Converted c = Import(d);
  CHECK(c.json["search"] == Json::parse(R"({"algorithm": "tpe", "seed": 10, "n_startup_trials": 5, "multivariate": true})"));
  CHECK(c.json["limits"] == Json::parse(R"({"max_trials": 6, "max_concurrent_trials": 2, "max_failed_trials": 1})"));
  CHECK(c.json["parameters"].contains("num_epochs"));
  CHECK(HasNote(c, "spec.parameters[1].name: \"num-epochs\" is parameter \"num_epochs\""));
  CHECK(c.json["trial"]["command"] ==
        Json::parse(R"(["train", "--x=${x}", "--epochs=${num_epochs}", "--run=${experiment}-${trial_id}"])"));

  std::string unknown = Doc(kX);
  unknown.replace(unknown.find("${trialParameters.x}"), 20, "${trialParameters.y}");
  CHECK(ImportError(unknown).find("spec.trialTemplate.trialSpec.spec.template.spec.containers[0].command[1]: expected "
                                  "${trialParameters.<name>} to name one of trialTemplate.trialParameters (x), got "
                                  "\"--x=${trialParameters.y}\"") != std::string::npos);
  CHECK(ImportError(Doc(kX, "", "", "tpe\n    algorithmSettings:\n      - {name: gamma, value: \"0.1\"}"))
            .find("expected a setting of tpe (random_state, n_startup_trials or n_ei_candidates), got \"gamma\"") !=
        std::string::npos);
}

TEST_CASE("import katib: container env, resources and every field left behind", "[import][katib]") {
  std::string container =
      "                args: [\"--fast\"]\n"
      "                workingDir: /src\n"
      "                env:\n"
      "                  - {name: LR_COPY, value: \"${trialParameters.x}\"}\n"
      "                  - name: TOKEN\n"
      "                    valueFrom: {secretKeyRef: {name: s, key: k}}\n"
      "                  - {name: RANK, value: \"3\"}\n"
      "                resources:\n"
      "                  requests: {cpu: 500m, memory: 2Gi, nvidia.com/gpu: 1, ephemeral-storage: 1Gi}\n"
      "                  limits: {memory: 4Gi}\n"
      "            tolerations:\n"
      "              - {key: gpu, operator: Exists, effect: NoSchedule, tolerationSeconds: 30}\n"
      "            serviceAccountName: trainer\n";
  std::string extra =
      "  resumePolicy: LongRunning\n"
      "  metricsCollectorSpec:\n"
      "    collector:\n"
      "      kind: File\n"
      "    source:\n"
      "      fileSystemPath: {path: /var/log/m.log, kind: File}\n";
  Converted c = Import(Doc(kX, extra, container));
  const Json& t = c.json["trial"];
  CHECK(t["command"] == Json::parse(R"(["train", "--x=${x}", "--fast"])"));
  CHECK(t["env"] == Json::parse(R"({"LR_COPY": "${x}"})"));
  CHECK(t["resources_per_worker"] == Json::parse(R"({"cpu": 0.5, "gpu": 1, "memory": "2Gi"})"));
  CHECK(c.json["backend"]["tolerations"] ==
        Json::parse(R"([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}])"));
  CHECK(c.json["backend"]["service_account"] == "trainer");
  const std::string container_path = "spec.trialTemplate.trialSpec.spec.template.spec.containers[0]";
  CHECK(HasNote(c, container_path + ".env[1]: TOKEN not carried over"));
  CHECK(HasNote(c, container_path + ".env[2]: RANK not carried over"));
  CHECK(HasNote(c, container_path + ".resources.requests.ephemeral-storage: not carried over"));
  CHECK(HasNote(c, container_path + ".resources.limits.memory: not carried over"));
  CHECK(HasNote(c, container_path + ".workingDir: not carried over"));
  CHECK(HasNote(c, "spec.metricsCollectorSpec.collector.kind: warning: the File collector is not carried over"));
  CHECK(HasNote(c, "spec.metricsCollectorSpec.source: not carried over"));
  CHECK(HasNote(c, "spec.resumePolicy: not carried over"));
}

TEST_CASE("spec: backend.job_kind takes job, pytorchjob and trainjob, and refuses any other kind", "[import][spec]") {
  auto parse = [](const std::string& kind) {
    return tune::ParseExperimentSpec(
        R"({"name": "k", "objective": {"metric": "loss", "mode": "min"},
            "parameters": {"x": {"type": "uniform", "low": 0, "high": 1}},
            "trial": {"command": ["train"]},
            "backend": {"type": "kubernetes", "image": "img:1", "job_kind": ")" + kind + R"("}})",
        "k.json");
  };
  auto job = parse("job");
  REQUIRE(job.ok());
  CHECK(job->backend.job_kind == "job");
  for (const char* kind : {"pytorchjob", "trainjob"}) {
    auto k = parse(kind);
    REQUIRE(k.ok());
    CHECK(k->backend.kubernetes.job_kind == kind);
  }
  CHECK(parse("mpijob").status().message().find("backend.job_kind: expected") != std::string::npos);
}

TEST_CASE("import katib: bad values name the line and the path", "[import][katib]") {
  CHECK(ImportError(Doc("    - name: x\n      parameterType: double\n      feasibleSpace: {min: \"0.1\", max: abc}\n")) ==
        "exp.yaml: line 15: spec.parameters[0].feasibleSpace.max: expected a number, got \"abc\"");
  CHECK(ImportError(Doc("    - name: x\n      parameterType: int\n      feasibleSpace: {min: 1, max: 4, step: 0}\n")) ==
        "exp.yaml: line 15: spec.parameters[0].feasibleSpace.step: expected a step of at least 1, got \"0\"");
  CHECK(ImportError(Doc(kX + "    - name: x\n      parameterType: int\n      feasibleSpace: {min: 1, max: 4}\n"))
            .find("spec.parameters[1].name: expected a name no other parameter has") != std::string::npos);
  CHECK(ImportError(Doc(kX, "", "", "random\n    algorithmSettings:\n      - {name: random_state, value: seven}")) ==
        "exp.yaml: line 12: spec.algorithm.algorithmSettings[0].value: expected an integer, got \"seven\"");
  std::string image = Doc(kX);
  image.replace(image.find("example.org/train:1"), 19, "example.org/train:${trialParameters.x}");
  CHECK(ImportError(image).find("containers[0].image: expected one image for every trial") != std::string::npos);
  std::string no_command = Doc(kX);
  no_command.erase(no_command.find("                command:"));
  CHECK(ImportError(no_command).find("containers[0].command: expected the training command") != std::string::npos);
  std::string tfjob = Doc(kX);
  tfjob.replace(tfjob.find("apiVersion: batch/v1\n      kind: Job"), 36, "apiVersion: kubeflow.org/v1\n      kind: TFJob");
  CHECK(ImportError(tfjob).find("trialSpec.kind: expected Job (batch/v1) or PyTorchJob (kubeflow.org/v1), got TFJob "
                                "(kubeflow.org/v1)") != std::string::npos);
}

TEST_CASE("import katib: messages stay one line whatever the names hold", "[import][katib]") {
  std::string d = Doc(kX);
  d.replace(d.find("kind: Job\n"), 10, "kind: \"Job\\nX\"\n");
  std::string msg = ImportError(d);
  CHECK(msg.find("got \"Job\\nX\" (batch/v1)") != std::string::npos);
  std::string bad_utf8 = Doc("    - name: x\n      parameterType: categorical\n      feasibleSpace: {list: [\"a\xff\"]}\n");
  CHECK(ImportError(bad_utf8) == "exp.yaml: line 15, column 32: expected YAML text (printable UTF-8), got the byte 0xff");
  CHECK(ImportError("a: \"\x01\"\n") ==
        "exp.yaml: line 1, column 5: expected YAML text (printable UTF-8), got the control character 0x01");
}

TEST_CASE("import katib: control characters are refused before the YAML parser", "[import][katib]") {
  // Found by katib_import_fuzz: a control character in a quoted scalar made
  // yaml-cpp's message quote a line break.
  CHECK(ImportError("a: 1\nb: \"\\\x15\"\n") ==
        "exp.yaml: line 2, column 6: expected YAML text (printable UTF-8), got the control character 0x15");
}

TEST_CASE("import katib: one document, read without yaml-cpp's LoadAll loop", "[import][katib]") {
  // yaml-cpp 0.7's LoadAll never returns on this input (upstream PR 1319);
  // the importer reads one document and finds others by their marker.
  CHECK(ImportError("\n,\n    ") == "exp.yaml: expected a Katib Experiment, got an empty document");
  std::string two = Doc(kX) + "---\napiVersion: v1\nkind: ConfigMap\n";
  CHECK(ImportError(two) == "exp.yaml: line 31: expected one YAML document (a Katib Experiment), got a second one");
  // A leading marker, comments and a document end are not a second document.
  Import("# an experiment\n---\n" + Doc(kX) + "...\n");
}

// ---- Anchors, aliases and merge keys; the limits on what they expand to
// (kKatibMaxNodes, kKatibMaxTextBytes, kKatibMaxDepth, kKatibMaxYamlBytes).

namespace {

// Doc(kX) with `volumes: <value>` in the pod spec (where the importer
// copies a subtree whole) and `extra_top` spliced in before `spec:`.
std::string WithVolumes(const std::string& value, const std::string& extra_top = "") {
  std::string d = Doc(kX, "", "            volumes: " + value + "\n");
  d.insert(d.find("spec:\n"), extra_top);
  return d;
}

// A "billion laughs": 9 levels of 9 aliases each, 9^9 (387 million) nodes
// from about 1 KB.
std::string AliasBomb() {
  std::string top = "x-lol:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    top += "  a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 9; ++k) top += ", " + prev;
    top += "]\n";
  }
  return WithVolumes("*a9", top);
}

}  // namespace

TEST_CASE("import katib: an aliased node reads as a copy of what it names", "[import][katib]") {
  Converted c = Import(Doc(
      "    - &x {name: x, parameterType: double, feasibleSpace: &range {min: \"0.1\", max: \"0.9\"}}\n"
      "    - {name: y, parameterType: double, feasibleSpace: *range}\n"));
  CHECK(c.json["parameters"]["y"] == c.json["parameters"]["x"]);
  // One subtree named twice in a copied subtree (volumes) is two copies.
  Converted v = Import(WithVolumes("[{name: a, emptyDir: &empty {medium: Memory}}, {name: b, emptyDir: *empty}]"));
  CHECK(v.json["backend"]["volumes"] == Json::parse(R"([{"name": "a", "emptyDir": {"medium": "Memory"}},
      {"name": "b", "emptyDir": {"medium": "Memory"}}])"));
}

TEST_CASE("import katib: merge keys are applied as kubectl reads them", "[import][katib]") {
  // The map's own keys win over merged ones; of merged maps the first.
  Converted c = Import(Doc(
      "    - &x {name: x, parameterType: double, feasibleSpace: {min: \"0.1\", max: \"0.9\"}}\n"
      "    - <<: *x\n"
      "      name: y\n"
      "    - <<: [{feasibleSpace: {min: 1, max: 3}}, *x]\n"
      "      name: z\n"
      "      parameterType: int\n"));
  CHECK(c.json["parameters"]["y"] == c.json["parameters"]["x"]);
  CHECK(c.json["parameters"]["z"] == Json::parse(R"({"type": "randint", "low": 1, "high": 4})"));
  CHECK_FALSE(HasNote(c, "spec.parameters[1].<<"));
  // Merged maps may merge in turn; the merged map is the same wherever it
  // is aliased.
  // (Not a valid experiment: two volumes named a.)
  Converted nested =
      Import(WithVolumes("[&base {name: a, <<: {emptyDir: {}}}, {<<: *base, name: b}, *base]"), "exp.yaml", false);
  CHECK(nested.json["backend"]["volumes"] == Json::parse(R"([{"name": "a", "emptyDir": {}},
      {"name": "b", "emptyDir": {}}, {"name": "a", "emptyDir": {}}])"));
  // A quoted "<<" is an ordinary key.
  Converted quoted = Import(Doc("    - {name: x, parameterType: double, feasibleSpace: {min: 0, max: 1}, \"<<\": 1}\n"));
  CHECK(HasNote(quoted, "spec.parameters[0][\"<<\"]: not carried over"));
  CHECK(ImportError(Doc("    - {name: x, <<: 3}\n")) ==
        "exp.yaml: line 13: spec.parameters[0][\"<<\"]: expected a map or a list of maps to merge, got \"3\"");
  CHECK(ImportError(Doc("    - {name: x, <<: [{a: 1}, [b]]}\n")) ==
        "exp.yaml: line 13: spec.parameters[0][\"<<\"][1]: expected a map to merge, got a list");
}

TEST_CASE("import katib: an alias inside the node it names is refused, not followed", "[import][katib]") {
  // It used to recurse until the stack overflowed (SIGSEGV).
  const std::string pod = "spec.trialTemplate.trialSpec.spec.template.spec.volumes";
  CHECK(ImportError(WithVolumes("&v [*v]")) ==
        "exp.yaml: line 31: " + pod + "[0]: expected a value, got an alias to " + pod + ", which holds it");
  CHECK(ImportError(WithVolumes("[{name: a, emptyDir: &m {x: [*m]}}]")) ==
        "exp.yaml: line 31: " + pod + "[0].emptyDir.x[0]: expected a value, got an alias to " + pod +
            "[0].emptyDir, which holds it");
  // Anywhere in the document, also where nothing is converted, and as a key.
  CHECK(ImportError(WithVolumes("[]", "x-loop: &l {a: {b: *l}}\n")) ==
        "exp.yaml: line 5: x-loop.a.b: expected a value, got an alias to x-loop, which holds it");
  CHECK(ImportError(WithVolumes("[]", "x-key: &k {? *k : 1}\n")).find("got an alias to x-key, which holds it") !=
        std::string::npos);
  CHECK(ImportError("&doc {a: *doc}\n") ==
        "exp.yaml: line 1: a: expected a value, got an alias to the document, which holds it");
}

TEST_CASE("import katib: an alias bomb is refused before it is expanded", "[import][katib]") {
  // It used to grow to 4 GB, then end in bad_alloc.
  std::string bomb = AliasBomb();
  CHECK(bomb.size() < 1500);
  std::string msg = ImportError(bomb, "bomb.yaml");
  CHECK(msg.rfind("bomb.yaml: line ", 0) == 0);
  CHECK(msg.find(": x-lol.a5[") != std::string::npos);
  CHECK(msg.find(": expected at most 100000 nodes with aliases expanded, got more") != std::string::npos);
  // Few nodes, but a long scalar many times: 40 copies of 200 KB.
  std::string many = "[*s";
  for (int i = 1; i < 40; ++i) many += ", *s";
  std::string text = WithVolumes(many + "]", "x-text: &s " + std::string(200000, 'x') + "\n");
  CHECK(ImportError(text).find("expected at most 4 MiB (4194304 bytes) of scalar text with aliases expanded, got "
                               "more") != std::string::npos);
}

TEST_CASE("import katib: nesting is limited to 100 levels, also through aliases", "[import][katib]") {
  std::string deep = WithVolumes(std::string(150, '[') + std::string(150, ']'));
  CHECK(ImportError(deep).find(": expected at most 100 levels of nesting with aliases expanded, got more") !=
        std::string::npos);
  Import(WithVolumes("[{name: a, emptyDir: {}}]", "x-deep: " + std::string(90, '[') + std::string(90, ']') + "\n"));
  // Each anchor 50 levels deeper than the last: 200 anchors, 10,000 levels.
  std::string chain = "x-chain:\n  c0: &c0 " + std::string(50, '[') + std::string(50, ']') + "\n";
  for (int i = 1; i < 200; ++i) {
    chain += "  c" + std::to_string(i) + ": &c" + std::to_string(i) + " " + std::string(50, '[') + "*c" +
             std::to_string(i - 1) + std::string(50, ']') + "\n";
  }
  CHECK(ImportError(WithVolumes("*c199", chain)).find("x-chain.c1") != std::string::npos);
  // yaml-cpp stops at about 1000 levels itself (as "bad file").
  CHECK(ImportError("a: " + std::string(100000, '[')) ==
        "exp.yaml: line 1: expected at most 100 levels of nesting, got more");
}

TEST_CASE("import katib: text over 1 MiB is refused before it is parsed", "[import][katib]") {
  std::string big = Doc(kX) + "# " + std::string(1 << 20, 'x') + "\n";
  CHECK(ImportError(big) == "exp.yaml: expected at most 1 MiB (1048576 bytes) of YAML, got " +
                                std::to_string(big.size()) + " bytes");
  Import(Doc(kX) + "# " + std::string((1 << 20) - Doc(kX).size() - 3, 'x') + "\n");
}
