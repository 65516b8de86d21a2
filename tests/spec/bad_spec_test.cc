// Table-driven: every bad experiment.json is rejected with one sentence
// "<file>: <json.path>: expected <what>, got <what was there>".
//
// Each case is a JSON merge patch (RFC 7386: null removes a key) applied to a
// valid base spec, or raw text for syntax errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "spec/experiment_spec.h"

namespace tune {
namespace {

using nlohmann::json;

const char* kBase = R"({
  "name": "bad-spec-test",
  "objective": {"metric": "eval_loss", "mode": "min"},
  "parameters": {
    "lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2},
    "r":  {"type": "choice", "values": [4, 8, 16]}
  },
  "trial": {"command": ["prog", "--lr", "${lr}", "--r", "${r}"]}
})";

struct BadCase {
  const char* patch;     // merge patch on kBase, or raw text if `raw`
  const char* path;      // the JSON path the message must name
  const char* expected;  // a fragment of the "expected ..." part
  const char* got;       // a fragment of the "got ..." part
  bool raw = false;
};

const BadCase kCases[] = {
    // Top level and name.
    {R"({"nmae": "x"})", "nmae", "one of the keys", "(did you mean \"name\"?)"},
    {R"({"name": null})", "name", "a string", "nothing (the key is missing)"},
    {R"({"name": "bad name"})", "name", "1 to 63 letters, digits", "\"bad name\""},
    {R"({"name": "-leading-dash"})", "name", "starting and ending with", "\"-leading-dash\""},
    {R"({"name": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"})", "name",
     "1 to 63", "\"aaaa"},
    {R"({"name": 5})", "name", "a string", "5"},
    {R"(["not", "an", "object"])", "top level", "a JSON object", "[\"not\",\"an\",\"object\"]", true},
    // objective
    {R"({"objective": null})", "objective", "an object such as", "nothing"},
    {R"({"objective": {"mode": "minimize"}})", "objective.mode", "\"min\" or \"max\"", "\"minimize\""},
    {R"({"objective": {"mode": null}})", "objective.mode", "\"min\" or \"max\"", "nothing"},
    {R"({"objective": {"scope": "all"}})", "objective.scope", "\"last\" or \"best\"", "\"all\""},
    {R"({"objective": {"goal": "1.8"}})", "objective.goal", "a number", "\"1.8\""},
    {R"({"objective": {"metric": null}})", "objective.metric", "a string", "nothing"},
    {R"({"objective": {"metric": "eval loss"}})", "objective.metric", "without spaces", "\"eval loss\""},
    {R"({"objective": {"direction": "min"}})", "objective.direction", "one of the keys", "unknown key"},
    // several objectives (a list) and constraints
    {R"({"objective": [{"metric": "a", "mode": "min"}]})", "objective", "a list of 2 to 4 objectives", "[{"},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "b", "mode": "min"}, {"metric": "c", "mode": "min"},
                       {"metric": "d", "mode": "min"}, {"metric": "e", "mode": "min"}]})",
     "objective", "a list of 2 to 4 objectives", "[{"},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "a", "mode": "max"}]})", "objective[1].metric",
     "a metric no other objective names", "\"a\" (also objective[0])"},
    {R"({"objective": [{"metric": "a", "mode": "min", "goal": 1}, {"metric": "b", "mode": "max"}]})",
     "objective[0].goal", "in a list of objectives", "unknown key"},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "b"}]})", "objective[1].mode",
     "\"min\" or \"max\"", "nothing"},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "b", "mode": "max", "ref": "x"}]})",
     "objective[1].ref", "a number", "\"x\""},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "b", "mode": "min"}],
         "scheduler": {"type": "asha"}})", "scheduler.metric", "the objective that asha ranks trials on", "nothing"},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "b", "mode": "min"}],
         "scheduler": {"type": "median", "metric": "c"}})", "scheduler.metric", "(\"a\", \"b\")", "\"c\""},
    {R"({"scheduler": {"type": "asha", "metric": "loss"}})", "scheduler.metric", "the metric of an objective",
     "\"loss\""},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "b", "mode": "min"}],
         "search": {"algorithm": "gp"}})", "search.algorithm", "the Gaussian-process sampler models one objective",
     "\"gp\""},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "b", "mode": "min"}],
         "search": {"algorithm": "nsga2", "population_size": 1}})", "search.population_size", "at least 2", "1"},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "b", "mode": "min"}],
         "search": {"algorithm": "nsga2", "crossover_prob": 1.5}})", "search.crossover_prob", "from 0 to 1", "1.5"},
    {R"({"objective": [{"metric": "a", "mode": "min"}, {"metric": "step", "mode": "min"}]})",
     "scheduler.time_attr", "a metric that no objective names", "\"step\""},
    {R"({"constraints": {"metric": "mem", "max": 2}})", "constraints", "a list of at most 16", "{"},
    {R"({"constraints": [{"metric": "mem"}]})", "constraints[0].max", "a bound", "nothing"},
    {R"({"constraints": [{"metric": "mem", "min": 3, "max": 2}]})", "constraints[0].min", "at most max", "3"},
    {R"({"constraints": [{"metric": "mem", "maximum": 2}]})", "constraints[0].maximum", "one of the keys",
     "unknown key"},
    {R"({"constraints": [{"metric": "step", "max": 2}]})", "constraints[0].metric",
     "a metric other than scheduler.time_attr", "\"step\""},
    // parameters
    {R"({"parameters": null})", "parameters", "at least one parameter", "nothing"},
    {R"({"parameters": {"lr": null, "r": null}})", "parameters", "at least one parameter", "{}"},
    {R"({"parameters": {"lr": {"low": 0.5}}})", "parameters.lr.low", "a number below high (0.01)", "0.5"},
    {R"({"parameters": {"lr": {"low": 0}}})", "parameters.lr.low", "above 0", "0"},
    {R"({"parameters": {"lr": {"low": -1}}})", "parameters.lr.low", "positive bounds", "-1"},
    {R"({"parameters": {"lr": {"high": "big"}}})", "parameters.lr.high", "a number", "\"big\""},
    {R"({"parameters": {"lr": {"type": "uniform", "low": -1e308, "high": 1e308}}})", "parameters.lr.high",
     "distance from low is finite", "1e+308"},
    {R"({"parameters": {"lr": {"hgih": 1}}})", "parameters.lr.hgih", "for type \"loguniform\"",
     "(did you mean \"high\"?)"},
    {R"({"parameters": {"d": {"type": "uniform", "low": 0.2, "high": 0.2}}})", "parameters.d.low",
     "below high (0.2)", "0.2"},
    {R"({"parameters": {"d": {"type": "uniform", "low": 0, "high": 1, "q": 0.1}}})",
     "parameters.d.q", "for type \"uniform\"", "unknown key \"q\""},
    {R"({"parameters": {"d": {"type": "quniform", "low": 0, "high": 1}}})", "parameters.d.q",
     "a number", "nothing"},
    {R"({"parameters": {"d": {"type": "quniform", "low": 0, "high": 1, "q": 0}}})",
     "parameters.d.q", "a number above 0", "0"},
    {R"({"parameters": {"d": {"type": "quniform", "low": 0, "high": 1, "q": 2}}})",
     "parameters.d.q", "no larger than high - low (1)", "2"},
    {R"({"parameters": {"d": {"type": "qloguniform", "low": 1, "high": 100, "q": -1}}})",
     "parameters.d.q", "a number above 0", "-1"},
    {R"({"parameters": {"d": {"type": "qloguniform", "low": 0, "high": 100, "q": 1}}})",
     "parameters.d.low", "above 0", "0"},
    {R"({"parameters": {"w": {"type": "randint", "low": 5, "high": 5}}})", "parameters.w.low",
     "high is exclusive", "5"},
    {R"({"parameters": {"w": {"type": "randint", "low": 0.5, "high": 5}}})", "parameters.w.low",
     "an integer", "0.5"},
    {R"({"parameters": {"w": {"type": "randint", "low": 0, "high": 1e300}}})", "parameters.w.high",
     "an integer", "1e+300"},
    {R"({"parameters": {"w": {"type": "lograndint", "low": 0, "high": 64}}})", "parameters.w.low",
     "an integer above 0", "0"},
    {R"({"parameters": {"w": {"type": "qrandint", "low": 0, "high": 64, "q": 0}}})",
     "parameters.w.q", "an integer above 0", "0"},
    {R"({"parameters": {"w": {"type": "qrandint", "low": 0, "high": 64, "q": 2.5}}})",
     "parameters.w.q", "an integer", "2.5"},
    {R"({"parameters": {"r": {"values": []}}})", "parameters.r.values", "a non-empty array", "[]"},
    {R"({"parameters": {"r": {"values": [1, 2, 1.0]}}})", "parameters.r.values[2]",
     "distinct values (this one repeats values[0])", "1.0"},
    {R"({"parameters": {"r": {"values": ["a", "b", "a"]}}})", "parameters.r.values[2]",
     "distinct values", "\"a\""},
    {R"({"parameters": {"r": {"values": [1, {"a": 1}]}}})", "parameters.r.values[1]",
     "a number, a string or a boolean", "{\"a\":1}"},
    {R"({"parameters": {"r": {"values": [null]}}})", "parameters.r.values[0]",
     "a number, a string or a boolean", "null"},
    {R"({"parameters": {"g": {"type": "grid", "values": "abc"}}})", "parameters.g.values",
     "a non-empty array", "\"abc\""},
    {R"({"parameters": {"g": {"type": "grid"}}})", "parameters.g.values", "a non-empty array", "nothing"},
    {R"({"parameters": {"r": {"type": "normal"}}})", "parameters.r.type", "\"uniform\", ", "\"normal\""},
    {R"({"parameters": {"r": {"type": null}}})", "parameters.r.type", "\"grid\"", "nothing"},
    {R"({"parameters": {"lr-x": {"type": "uniform", "low": 0, "high": 1}}})", "parameters.lr-x",
     "a parameter name", "\"lr-x\""},
    {R"({"parameters": {"2x": {"type": "uniform", "low": 0, "high": 1}}})", "parameters.2x",
     "not starting with a digit", "\"2x\""},
    {R"({"parameters": {"trial_id": {"type": "uniform", "low": 0, "high": 1}}})",
     "parameters.trial_id", "the tuner sets those", "\"trial_id\""},
    {R"({"parameters": {"LR": {"type": "uniform", "low": 0, "high": 1}}})", "parameters.lr",
     "differs from \"LR\" in more than case", "\"lr\""},
    {R"({"parameters": {"r": 0.5}})", "parameters.r", "an object such as", "0.5"},
    // search
    {R"({"search": {"algorithm": "bayes"}})", "search.algorithm", "\"random\", \"tpe\", \"gp\", \"nsga2\", \"grid\" or \"auto\"",
     "\"bayes\""},
    {R"({"search": {"seed": -1}})", "search.seed", "an integer of at least 0", "-1"},
    {R"({"search": {"seed": "7"}})", "search.seed", "an integer of at least 0", "\"7\""},
    {R"({"search": {"seed": 18446744073709551615}})", "search.seed", "at most 2^63-1",
     "18446744073709551615"},
    {R"({"search": {"seed": 7.5}})", "search.seed", "an integer", "7.5"},
    {R"({"search": {"n_startup_trials": 5}})", "search.n_startup_trials",
     "for algorithm \"random\"", "unknown key"},
    {R"({"search": {"algorithm": "tpe", "gamma": 1.5}})", "search.gamma", "above 0 and below 1", "1.5"},
    {R"({"search": {"algorithm": "tpe", "n_ei_candidates": 0}})", "search.n_ei_candidates",
     "at least 1", "0"},
    {R"({"search": {"algorithm": "tpe", "n_ei_candidates_numerical": -1}})", "search.n_ei_candidates_numerical",
     "at least 0", "-1"},
    {R"({"search": {"algorithm": "tpe", "multivariate": "yes"}})", "search.multivariate",
     "true or false", "\"yes\""},
    {R"({"search": {"algorithm": "tpe", "independent_choices": 1}})", "search.independent_choices",
     "true or false", "1"},
    {R"({"search": {"algorithm": "tpe", "parzen_rules": "optuna4"}})", "search.parzen_rules",
     "\"optuna5\" or \"optuna3\"", "\"optuna4\""},
    {R"({"search": "tpe"})", "search", "an object", "\"tpe\""},
    {R"({"search": {"algorithm": "gp", "n_startup_trials": 0}})", "search.n_startup_trials", "at least 1", "0"},
    {R"({"search": {"algorithm": "gp", "deterministic_objective": "no"}})", "search.deterministic_objective",
     "true or false", "\"no\""},
    {R"({"search": {"algorithm": "gp", "gamma": 0.2}})", "search.gamma", "for algorithm \"gp\"", "unknown key"},
    {R"({"search": {"algorithm": "auto", "n_startup_trials": 5}})", "search.n_startup_trials",
     "for algorithm \"auto\"", "unknown key"},
    // search.points_to_evaluate: names and values of the parameters.
    {R"({"search": {"points_to_evaluate": {"lr": 0.001}}})", "search.points_to_evaluate",
     "an array of objects", "{\"lr\":0.001}"},
    {R"({"search": {"points_to_evaluate": [0.001]}})", "search.points_to_evaluate[0]",
     "an object mapping parameter names to values", "0.001"},
    {R"({"search": {"points_to_evaluate": [{"learning_rate": 0.001}]}})", "search.points_to_evaluate[0]",
     "parameter names (\"lr\" or \"r\")", "\"learning_rate\""},
    {R"({"search": {"points_to_evaluate": [{"lr": 0.5}]}})", "search.points_to_evaluate[0].lr",
     "a value of loguniform(1e-05, 0.01)", "0.5"},
    {R"({"search": {"points_to_evaluate": [{"lr": "0.001"}]}})", "search.points_to_evaluate[0].lr",
     "a value of loguniform", "\"0.001\""},
    {R"({"search": {"points_to_evaluate": [{"r": 12}]}})", "search.points_to_evaluate[0].r",
     "a value of choice[4, 8, 16]", "12"},
    {R"({"search": {"points_to_evaluate": [{}, {}], "seed": 1}, "limits": {"max_trials": 1}})",
     "search.points_to_evaluate", "at most limits.max_trials (1) points", "2"},
    {R"({"search": {"algorithm": "grid"}})", "parameters.lr", "a discrete parameter",
     "loguniform(1e-05, 0.01)"},
    // scheduler
    {R"({"scheduler": {"type": "hyperband"}})", "scheduler.type", "\"fifo\", \"asha\", \"median\"",
     "\"hyperband\""},
    {R"({"scheduler": {"type": "asha", "reduction_factor": 1}})", "scheduler.reduction_factor",
     "above 1", "1"},
    {R"({"scheduler": {"type": "asha", "max_t": 10, "grace_period": 20}})", "scheduler.grace_period",
     "at most max_t (10)", "20"},
    {R"({"scheduler": {"type": "asha", "max_t": 0}})", "scheduler.max_t", "at least 1", "0"},
    {R"({"scheduler": {"type": "asha", "brackets": 0}})", "scheduler.brackets", "at least 1", "0"},
    {R"({"scheduler": {"max_t": 100}})", "scheduler.max_t", "for type \"fifo\"", "unknown key"},
    {R"({"scheduler": {"type": "median", "min_samples_required": 0}})",
     "scheduler.min_samples_required", "at least 1", "0"},
    {R"({"scheduler": {"type": "median", "reduction_factor": 3}})", "scheduler.reduction_factor",
     "for type \"median\"", "unknown key"},
    // scheduler of type pbt
    {R"({"scheduler": {"type": "pbt"}})", "scheduler.max_t", "an integer", "nothing (the key is missing)"},
    {R"({"scheduler": {"type": "pbt", "max_t": 0}})", "scheduler.max_t", "at least 1", "0"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "grace_period": 1}})", "scheduler.grace_period",
     "for type \"pbt\"", "unknown key"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "perturbation_interval": 0}})",
     "scheduler.perturbation_interval", "at least 1", "0"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "perturbation_interval": 2.5}})",
     "scheduler.perturbation_interval", "an integer", "2.5"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "burn_in_period": -1}})", "scheduler.burn_in_period",
     "at least 0", "-1"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "quantile_fraction": 0.6}})",
     "scheduler.quantile_fraction", "between 0 and 0.5", "0.6"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "resample_probability": 1.5}})",
     "scheduler.resample_probability", "between 0 and 1", "1.5"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "perturbation_factors": []}})",
     "scheduler.perturbation_factors", "a non-empty array of numbers above 0", "[]"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "perturbation_factors": [1.2, 0]}})",
     "scheduler.perturbation_factors[1]", "a number above 0", "0"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "synch": "yes"}})", "scheduler.synch", "true or false",
     "\"yes\""},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "hyperparam_mutations": {"momentum": true}}})",
     "scheduler.hyperparam_mutations.momentum", "one of the names of parameters (\"lr\" or \"r\")",
     "\"momentum\""},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "hyperparam_mutations": {"lr": false}}})",
     "scheduler.hyperparam_mutations.lr", "true (mutate it within its search distribution)", "false"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "hyperparam_mutations":
        {"lr": {"type": "randint", "low": 1, "high": 5}}}})",
     "scheduler.hyperparam_mutations.lr", "a float distribution", "int[1, 4]"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "hyperparam_mutations":
        {"lr": {"type": "uniform", "low": 1}}}})",
     "scheduler.hyperparam_mutations.lr.high", "a number", "nothing (the key is missing)"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "hyperparam_mutations": []}})",
     "scheduler.hyperparam_mutations", "a non-empty array of names of parameters", "[]"},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "hyperparam_mutations": ["lr", "lr"]}})",
     "scheduler.hyperparam_mutations[1]", "a parameter not listed before", "\"lr\""},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "hyperparam_mutations": 5}})",
     "scheduler.hyperparam_mutations", "an object mapping parameter names", "5"},
    // A new LoRA rank cannot continue from a checkpoint.
    {R"({"scheduler": {"type": "pbt", "max_t": 100}, "trial": {"command": ["lora_train", "--lora-r", "${r}"]}})",
     "scheduler.hyperparam_mutations", "parameters other than \"r\", which trial.command passes as --lora-r",
     "\"r\""},
    {R"({"scheduler": {"type": "pbt", "max_t": 100, "hyperparam_mutations": {"lr": true, "r": true}},
        "trial": {"command": ["lora_train", "--lora-r=${r}"]}})",
     "scheduler.hyperparam_mutations.r", "a trial cannot continue from a checkpoint with another LoRA rank",
     "\"r\""},
    {R"({"scheduler": {"time_attr": "eval_loss"}})", "scheduler.time_attr",
     "other than objective.metric", "\"eval_loss\""},
    {R"({"scheduler": {"time_attr": ""}})", "scheduler.time_attr", "a metric name", "\"\""},
    // limits
    {R"({"limits": {"max_trials": 0}})", "limits.max_trials", "at least 1", "0"},
    {R"({"limits": {"max_trials": "10"}})", "limits.max_trials", "an integer", "\"10\""},
    {R"({"limits": {"max_trials": 1e10}})", "limits.max_trials", "from -2147483648 to 2147483647", "10000000000"},
    {R"({"limits": {"max_trials": 9223372036854775808}})", "limits.max_trials", "from -2147483648 to 2147483647", "9223372036854775808"},
    {R"({"limits": {"time_budget_s": 1e10}})", "limits.time_budget_s", "at most 1e9", "10000000000"},
    {R"({"trial": {"timeout_s": 1e10}})", "trial.timeout_s", "at most 1e9", "10000000000"},
    {R"({"trial": {"resources_per_worker": {"cpu": 1e30}}})", "trial.resources_per_worker.cpu", "from 0.001 to 1000000", "1e+30"},
    {R"({"trial": {"env": {"X": "${nope}"}}})", "trial.env.X", "${...} to name a parameter", "\"${nope}\""},
    {R"({"limits": {"max_concurrent_trials": -1}})", "limits.max_concurrent_trials", "at least 1", "-1"},
    {R"({"limits": {"max_failed_trials": 0}})", "limits.max_failed_trials",
     "leave the key out for no limit", "0"},
    {R"({"limits": {"time_budget_s": 0}})", "limits.time_budget_s", "above 0", "0"},
    {R"({"limits": {"max_trail": 3}})", "limits.max_trail", "one of the keys",
     "(did you mean \"max_trials\"?)"},
    // trial
    {R"({"trial": null})", "trial", "at least a command", "nothing"},
    {R"({"trial": {"command": []}})", "trial.command", "a non-empty array of strings", "[]"},
    {R"({"trial": {"command": "prog --lr 1"}})", "trial.command", "argv, no shell", "\"prog --lr 1\""},
    {R"({"trial": {"command": ["prog", 1]}})", "trial.command[1]", "a string", "1"},
    {R"({"trial": {"command": [""]}})", "trial.command[0]", "a program name", "\"\""},
    {R"({"trial": {"command": ["prog", "--lr=${lrr}"]}})", "trial.command[1]",
     "to name a parameter (lr, r, or trial_id, experiment, trial_dir, resume_from)", "\"${lrr}\""},
    {R"({"trial": {"command": ["prog", "${lr"]}})", "trial.command[1]", "closed by", "\"${lr\""},
    {R"({"trial": {"workers": 0}})", "trial.workers", "at least 1", "0"},
    {R"({"trial": {"max_retries": -1}})", "trial.max_retries", "at least 0", "-1"},
    {R"({"trial": {"timeout_s": 0}})", "trial.timeout_s", "no timeout", "0"},
    {R"({"trial": {"env": {"OMP_NUM_THREADS": 1}}})", "trial.env.OMP_NUM_THREADS", "a string", "1"},
    {R"({"trial": {"env": {"RANK": "3"}}})", "trial.env.RANK", "does not set itself", "\"RANK\""},
    {R"({"trial": {"env": {"TUNE_X": "3"}}})", "trial.env.TUNE_X", "does not set itself", "\"TUNE_X\""},
    {R"({"trial": {"env": {"A B": "3"}}})", "trial.env[\"A B\"]", "a variable name", "\"A B\""},
    {R"({"trial": {"env": ["A=1"]}})", "trial.env", "an object of strings", "[\"A=1\"]"},
    {R"({"trial": {"resources_per_worker": {"gpu": 0.5}}})", "trial.resources_per_worker.gpu",
     "an integer", "0.5"},
    {R"({"trial": {"resources_per_worker": {"cpu": -1}}})", "trial.resources_per_worker.cpu",
     "0 or from 0.001", "-1"},
    {R"({"trial": {"resources_per_worker": {"cpu": 0.0001}}})", "trial.resources_per_worker.cpu",
     "0 or from 0.001", "0.0001"},
    {R"({"trial": {"resources_per_worker": {"memory": "4 GB"}}})",
     "trial.resources_per_worker.memory", "a Kubernetes quantity", "\"4 GB\""},
    {R"({"trial": {"resources_per_worker": {"cpus": 2}}})", "trial.resources_per_worker.cpus",
     "one of the keys", "(did you mean \"cpu\"?)"},
    {R"({"trial": {"working_dir": ""}})", "trial.working_dir", "a directory", "\"\""},
    // A pod's workingDir is a path in its container.
    {R"({"trial": {"working_dir": "src"}, "backend": {"type": "kubernetes", "image": "i"}})", "trial.working_dir",
     "an absolute path in the container for the kubernetes backend", "\"src\""},
    // trial.env values from a Kubernetes Secret: {"secret": NAME, "key": KEY}.
    {R"({"trial": {"env": {"HF_TOKEN": {"secret": "hf-token"}}}})", "trial.env.HF_TOKEN.key", "a string",
     "nothing (the key is missing)"},
    {R"({"trial": {"env": {"HF_TOKEN": {"key": "token"}}}})", "trial.env.HF_TOKEN.secret", "a string",
     "nothing (the key is missing)"},
    {R"({"trial": {"env": {"HF_TOKEN": {"secret": "HF_Token", "key": "token"}}}})", "trial.env.HF_TOKEN.secret",
     "the name of a Kubernetes Secret", "\"HF_Token\""},
    {R"({"trial": {"env": {"HF_TOKEN": {"secret": "-hf", "key": "token"}}}})", "trial.env.HF_TOKEN.secret",
     "starting and ending with a letter or digit", "\"-hf\""},
    {R"({"trial": {"env": {"HF_TOKEN": {"secret": "hf-token", "key": "a b"}}}})", "trial.env.HF_TOKEN.key",
     "a key of the Secret's data", "\"a b\""},
    {R"({"trial": {"env": {"HF_TOKEN": {"secret": "hf-token", "key": ".."}}}})", "trial.env.HF_TOKEN.key",
     "a key of the Secret's data", "\"..\""},
    {R"({"trial": {"env": {"HF_TOKEN": {"secret": "hf-token", "key": 7}}}})", "trial.env.HF_TOKEN.key",
     "a string", "7"},
    {R"({"trial": {"env": {"HF_TOKEN": {"secret": "hf-token", "key": "token", "optional": true}}}})",
     "trial.env.HF_TOKEN.optional", "one of the keys", "unknown key"},
    {R"({"trial": {"env": {"HF_TOKEN": ["hf-token", "token"]}}})", "trial.env.HF_TOKEN",
     "a string, or {\"secret\": NAME, \"key\": KEY}", "[\"hf-token\",\"token\"]"},
    {R"({"trial": {"env": {"RANK": {"secret": "s", "key": "k"}}}})", "trial.env.RANK", "does not set itself",
     "\"RANK\""},
    // backend
    {R"({"backend": {"type": "slurm"}})", "backend.type", "\"local\" or \"kubernetes\"", "\"slurm\""},
    {R"({"backend": {"type": "kubernetes"}})", "backend.image", "a container image", "nothing"},
    {R"({"backend": {"namespace": "My_NS"}})", "backend.namespace", "a namespace name", "\"My_NS\""},
    {R"({"backend": {"image_pull_policy": "always"}})", "backend.image_pull_policy",
     "\"Always\", \"IfNotPresent\" or \"Never\"", "\"always\""},
    {R"({"backend": {"image": "trainer: latest"}})", "backend.image", "without spaces", "\"trainer: latest\""},
    {R"({"backend": {"service_account": "Tuner"}})", "backend.service_account", "ServiceAccount name",
     "\"Tuner\""},
    {R"({"backend": {"labels": {"tune.io/trial": "x"}}})", "backend.labels[\"tune.io/trial\"]",
     "outside tune.io/", "\"tune.io/trial\""},
    {R"({"backend": {"labels": {"team": "a b"}}})", "backend.labels.team", "a label value", "\"a b\""},
    {R"({"backend": {"node_selector": {"gpu": 1}}})", "backend.node_selector.gpu", "a string", "1"},
    {R"({"backend": {"annotations": {"bad key!": "x"}}})", "backend.annotations[\"bad key!\"]",
     "[prefix/]name", "\"bad key!\""},
    {R"({"backend": {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}],
                     "volume_mounts": [{"name": "dta", "mountPath": "/data"}]}})",
     "backend.volume_mounts[0].name", "one of backend.volumes", "\"dta\""},
    {R"({"backend": {"volumes": [{"name": "data"}],
                     "volume_mounts": [{"name": "data", "mountPath": "data"}]}})",
     "backend.volume_mounts[0].mountPath", "an absolute path", "\"data\""},
    {R"({"backend": {"volumes": [{"emptyDir": {}}]}})", "backend.volumes[0].name", "a string", "nothing"},
    {R"({"backend": {"tolerations": {"key": "gpu"}}})", "backend.tolerations", "an array of objects",
     "{\"key\":\"gpu\"}"},
    {R"({"backend": {"tolerations": ["gpu"]}})", "backend.tolerations[0]", "an object", "\"gpu\""},
    {R"({"backend": {"ttl_seconds_after_finished": -1}})", "backend.ttl_seconds_after_finished",
     "at least 0", "-1"},
    {R"({"backend": {"backoff_limit": -2}})", "backend.backoff_limit", "at least 0", "-2"},
    {R"({"backend": {"job_kind": "trainjob", "runtime_ref": "Torch_Distributed"}})", "backend.runtime_ref",
     "the name of a ClusterTrainingRuntime", "\"Torch_Distributed\""},
    {R"({"backend": {"job_kind": "pytorchjob", "runtime_ref": "torch-distributed"}})", "backend.runtime_ref",
     "no runtime_ref unless job_kind is \"trainjob\"", "\"torch-distributed\""},
    {R"({"backend": {"pending_timeout_s": 0}})", "backend.pending_timeout_s", "above 0", "0"},
    {R"({"backend": {"kubeconfig": ""}})", "backend.kubeconfig", "a file path", "\"\""},
    {R"({"backend": {"cpus": 0}})", "backend.cpus", "above 0", "0"},
    {R"({"backend": {"gpus": [0, 1, 0]}})", "backend.gpus[2]", "distinct GPU ids", "0"},
    {R"({"backend": {"gpus": [-1]}})", "backend.gpus[0]", "a GPU index", "-1"},
    {R"({"backend": {"gpus": ["GPU-1a2b"]}})", "backend.gpus[0]", "a GPU index", "\"GPU-1a2b\""},
    // Once accepted here, then thrown out of std::stoi by `tune validate` and
    // `tune run` (the local backend reads each as an int).
    {R"({"backend": {"gpus": ["99999999999999999999"]}})", "backend.gpus[0]",
     "a GPU index (an integer from 0 to 65535)", "\"99999999999999999999\""},
    {R"({"backend": {"gpus": [3000000000]}})", "backend.gpus[0]", "a GPU index", "3000000000"},
    {R"({"backend": {"gpus": ["0", "00"]}})", "backend.gpus[1]", "distinct GPU ids", "\"00\""},
    {R"({"backend": {"cpus": 2}, "trial": {"workers": 2, "resources_per_worker": {"cpu": 2}}})",
     "trial.resources_per_worker.cpu", "at most backend.cpus (2) / trial.workers (2)", "2"},
    {R"({"backend": {"gpus": [0]}, "trial": {"resources_per_worker": {"gpu": 2}}})",
     "trial.resources_per_worker.gpu", "at most the 1 GPUs", "2"},
    {R"({"backend": {"namespce": "x"}})", "backend.namespce", "one of the keys",
     "(did you mean \"namespace\"?)"},
    // storage
    {R"({"storage": {"path": ""}})", "storage.path", "a database file path", "\"\""},
    {R"({"storage": {"file": "tune.db"}})", "storage.file", "one of the keys \"path\" or \"url\"", "unknown key"},
    {R"({"storage": {"path": "a.db", "url": "postgresql://u@h/db"}})", "storage",
     "either path (an SQLite file) or url (a postgresql:// database)", "both"},
    {R"({"storage": {"url": "mysql://u@h/db"}})", "storage.url", "a postgresql:// or postgres:// URL", "\"mysql://u@h/db\""},
    {R"({"storage": "tune.db"})", "storage", "an object", "\"tune.db\""},
    // tracking.mlflow
    {R"({"tracking": {"mlflow": {"tracking_uri": "127.0.0.1:5000"}}})", "tracking.mlflow.tracking_uri",
     "an http:// or https:// URL", "\"127.0.0.1:5000\""},
    {R"({"tracking": {"mlflow": {"tracking_uri": 5000}}})", "tracking.mlflow.tracking_uri", "a string", "5000"},
    {R"({"tracking": {"mlflow": {"experiment_name": ""}}})", "tracking.mlflow.experiment_name",
     "a non-empty name", "\"\""},
    {R"({"tracking": {"mlflow": {"tags": {"team": 7}}}})", "tracking.mlflow.tags.team", "a string", "7"},
    {R"({"tracking": {"mlflow": {"tags": {"mlflow.user": "x"}}}})", "tracking.mlflow.tags[\"mlflow.user\"]",
     "not starting with \"mlflow.\"", "\"x\""},
    {R"({"tracking": {"mlflow": {"uri": "http://x"}}})", "tracking.mlflow.uri", "one of the keys",
     "the unknown key \"uri\""},
    {R"({"tracking": {"mlflow": "http://x"}})", "tracking.mlflow", "an object", "\"http://x\""},
    // JSON syntax: line and column.
    {"{\n  \"name\": \"x\",\n}\n", "line 3, column 1", "valid JSON (string literal)", "'}'", true},
    {"{\n  \"name\": \"x\"\n  \"objective\": {}\n}", "line 3, column 13", "valid JSON ('}')",
     "unexpected string literal", true},
    {"{\"name\": tru}", "line 1, column 13", "valid JSON", "invalid literal near '\"name\": tru}'", true},
    {"{\"a\": [1, 2}", "line 1, column 12", "valid JSON (']')", "unexpected '}'", true},
    {"", "top level", "a JSON object", "an empty file", true},
    {"{\"parameters\": {\"lr\": {\"low\": 1e999}}}", "parameters.lr.low", "a number within", "1e999", true},
    {"{\"a\": [1, -2e400]}", "a[1]", "a number within", "-2e400", true},
    {"{\"name\": \"a\", \"parameters\": {\"x\": {\"low\": 1, \"low\": 2}}}", "parameters.x.low",
     "each key once per object", "\"low\" a second time", true},
    {"{\"trial\": {\"command\": [{\"a\": 1, \"a\": 2}]}}", "trial.command[0].a", "each key once",
     "a second time", true},
};

std::string Apply(const BadCase& c) {
  if (c.raw) return c.patch;
  json doc = json::parse(kBase);
  doc.merge_patch(json::parse(c.patch));
  return doc.dump(2);
}

TEST_CASE("spec: the base spec of the bad-spec table is valid", "[spec]") {
  auto spec = ParseExperimentSpec(kBase, "exp.json");
  INFO(spec.status().message());
  REQUIRE(spec.ok());
}

TEST_CASE("spec: bad specs are rejected with the file, the JSON path and the expectation", "[spec]") {
  size_t n = 0;
  for (const BadCase& c : kCases) {
    ++n;
    std::string text = Apply(c);
    auto spec = ParseExperimentSpec(text, "exp.json");
    INFO("case " << n << ": " << c.patch);
    REQUIRE_FALSE(spec.ok());
    const std::string& msg = spec.status().message();
    INFO("message: " << msg);
    CHECK(spec.status().IsInvalidArgument());
    CHECK(msg.rfind(std::string("exp.json: ") + c.path + ": expected ", 0) == 0);
    auto got = msg.find(", got ");
    REQUIRE(got != std::string::npos);
    CHECK(msg.substr(0, got).find(c.expected) != std::string::npos);
    CHECK(msg.substr(got).find(c.got) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
  CHECK(n >= 30);
}

}  // namespace
}  // namespace tune
