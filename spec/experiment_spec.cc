// experiment.json: reading the file, the JSON syntax (with line and column),
// and the top-level sections objective, search, scheduler, limits, storage.
// `parameters` is in experiment_spec_params.cc, `trial` and `backend` in
// experiment_spec_trial.cc.
#include "spec/experiment_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/read_file.h"
#include "spec/experiment_spec_reader.h"
#include "storage/database_url.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
using spec_internal::IndexPath;
using spec_internal::JoinPath;
using spec_internal::Json;
using spec_internal::Need;
using spec_internal::ObjectReader;
using spec_internal::Quote;
using spec_internal::Reader;

// GridPoints' own limit (search/grid.h).
constexpr int64_t kMaxGridPoints = 10'000'000;

// The largest experiment.json read (docs/experiment.md); the examples are
// 1-3 KB. A device or FIFO given as the file is refused without reading.
constexpr size_t kMaxExperimentJsonBytes = size_t{4} << 20;

const std::vector<std::string> kTpeKeys = {
    "n_startup_trials", "n_ei_candidates",    "gamma",         "prior_weight",      "multivariate",
    "constant_liar",    "consider_endpoints", "consider_magic_clip", "consider_prior",
    "parzen_rules",     "n_ei_candidates_numerical", "independent_choices"};

const std::vector<std::string> kGpKeys = {"n_startup_trials", "deterministic_objective"};
const std::vector<std::string> kNsga2Keys = {"population_size", "mutation_prob", "crossover_prob", "swapping_prob"};

bool NoSpace(const std::string& s) {
  return !s.empty() && spec_internal::Matches(s, "[^\\s=,]+");
}

// --- JSON syntax -------------------------------------------------------------

// Turns nlohmann's parse_error into "line L, column C: expected valid JSON
// (<what it wanted>), got <what it found>". The position is where the parser
// gave up (the end of the offending token).
Status SyntaxError(const Reader& r, const std::string& text, const Json::parse_error& e) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return r.Fail("", "a JSON object", "an empty file");
  }
  const std::string what = e.what();
  int line = 1, column = 1;
  auto at = what.find(" at line ");
  if (at == std::string::npos ||
      std::sscanf(what.c_str() + at, " at line %d, column %d", &line, &column) != 2) {
    line = 1;
    column = static_cast<int>(e.byte);
  }
  column = std::max(column, 1);
  std::string expected = "valid JSON";
  auto exp_pos = what.find("; expected ");
  if (exp_pos != std::string::npos) expected += " (" + what.substr(exp_pos + 11) + ")";
  std::string got = "something else";
  auto dash = what.find(" - ");
  if (dash != std::string::npos) {
    got = what.substr(dash + 3);
    auto semi = got.find(';');
    if (semi != std::string::npos) got = got.substr(0, semi);
  }
  auto last = what.find("; last read: '");
  if (last != std::string::npos) {
    std::string read = what.substr(last + 14);
    auto close = read.rfind('\'');
    if (close != std::string::npos) read = read.substr(0, close);
    if (read.size() > 16) read = "..." + read.substr(read.size() - 16);
    got += " near '" + read + "'";
  }
  return Status::InvalidArgument(r.file() + ": line " + std::to_string(line) + ", column " +
                                 std::to_string(column) + ": expected " + expected + ", got " + got);
}

// Parses JSON text, rejecting a key repeated in one object (nlohmann would
// silently keep the last one, hiding a typo-like mistake).
Result<Json> ParseJson(const Reader& r, const std::string& text) {
  struct Frame {
    bool array = false;
    size_t index = 0;
    std::string key;
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  std::string duplicate_path, duplicate_key;
  // The path of the value being read: every open container's key or index.
  auto current_path = [&stack](size_t frames) {
    std::string path;
    for (size_t i = 0; i < frames; ++i) {
      path = stack[i].array ? IndexPath(path, stack[i].index) : JoinPath(path, stack[i].key);
    }
    return path;
  };
  auto done_element = [&stack] {
    if (!stack.empty() && stack.back().array) ++stack.back().index;
  };
  auto callback = [&](int, Json::parse_event_t event, Json& parsed) -> bool {
    switch (event) {
      case Json::parse_event_t::object_start: stack.push_back(Frame{}); break;
      case Json::parse_event_t::array_start:
        stack.push_back(Frame{});
        stack.back().array = true;
        break;
      case Json::parse_event_t::key: {
        Frame& f = stack.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second && duplicate_key.empty()) {
          duplicate_path = current_path(stack.size() - 1);
          duplicate_key = f.key;
        }
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        stack.pop_back();
        done_element();
        break;
      case Json::parse_event_t::value: done_element(); break;
    }
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(text, callback);
  } catch (const Json::parse_error& e) {
    return SyntaxError(r, text, e);
  } catch (const Json::out_of_range& e) {
    // A number beyond double's range (1e999): nlohmann says only that.
    std::string what = e.what();
    auto quote = what.find('\'');
    std::string number = quote == std::string::npos ? what : what.substr(quote + 1);
    if (!number.empty() && number.back() == '\'') number.pop_back();
    return r.Fail(current_path(stack.size()), "a number within about 1.8e308", number);
  } catch (const Json::exception& e) {
    return r.Fail(current_path(stack.size()), "valid JSON", e.what());
  }
  if (!duplicate_key.empty()) {
    return r.Fail(JoinPath(duplicate_path, duplicate_key), "each key once per object",
                  "the key " + Quote(duplicate_key) + " a second time");
  }
  return doc;
}

// --- Sections ----------------------------------------------------------------

Status ParseName(const ObjectReader& top, std::string* out) {
  TUNE_RETURN_IF_ERROR(top.String("name", out, Need::kRequired));
  // It becomes a Kubernetes label value: at most 63 characters, starting and
  // ending with a letter or digit.
  return top.Expect(out->size() <= 63 &&
                        spec_internal::Matches(*out, "[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?"),
                    "name",
                    "a name of 1 to 63 letters, digits, '-', '_' or '.', starting and ending with "
                    "a letter or digit");
}

Status ParseOneObjective(const Reader& r, const Json& v, const std::string& path, bool in_list,
                         ObjectiveSpec* out) {
  TUNE_ASSIGN_OR_RETURN(ObjectReader o, ObjectReader::Make(r, v, path));
  // A goal stops the experiment once one trial reaches it: with several
  // objectives no one trial is "the best", so the list form has none.
  if (in_list) {
    TUNE_RETURN_IF_ERROR(o.AllowOnly({"metric", "mode", "scope", "ref"}, "in a list of objectives"));
  } else {
    TUNE_RETURN_IF_ERROR(o.AllowOnly({"metric", "mode", "goal", "scope"}));
  }
  TUNE_RETURN_IF_ERROR(o.String("metric", &out->metric, Need::kRequired));
  TUNE_RETURN_IF_ERROR(o.Expect(NoSpace(out->metric), "metric",
                                "a metric name without spaces, '=' or ','"));
  std::string mode, scope = "last";
  TUNE_RETURN_IF_ERROR(o.Enum("mode", {"min", "max"}, &mode, Need::kRequired));
  out->mode = mode == "min" ? Mode::kMin : Mode::kMax;
  if (o.Has("goal")) {
    double goal = 0;
    TUNE_RETURN_IF_ERROR(o.Double("goal", &goal));
    out->goal = goal;
  }
  if (o.Has("ref")) {
    double ref = 0;
    TUNE_RETURN_IF_ERROR(o.Double("ref", &ref));
    out->ref = ref;
  }
  TUNE_RETURN_IF_ERROR(o.Enum("scope", {"last", "best"}, &scope));
  out->scope = scope == "last" ? Scope::kLast : Scope::kBest;
  return Status::Ok();
}

// `objective`: one object, or a list of 2 to 4 with distinct metrics.
Status ParseObjectives(const Reader& r, const Json* v, std::vector<ObjectiveSpec>* out) {
  if (!v) {
    return r.Missing("objective", "an object such as {\"metric\": \"eval_loss\", \"mode\": \"min\"}, or a "
                                  "list of 2 to 4 of them");
  }
  if (!v->is_array()) {
    out->assign(1, ObjectiveSpec{});
    return ParseOneObjective(r, *v, "objective", false, &out->front());
  }
  if (v->size() < 2 || v->size() > 4) {
    return r.FailValue("objective",
                       "an object, or a list of 2 to 4 objectives (one objective is written as an object)", *v);
  }
  out->assign(v->size(), ObjectiveSpec{});
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string path = "objective[" + std::to_string(i) + "]";
    TUNE_RETURN_IF_ERROR(ParseOneObjective(r, (*v)[i], path, true, &(*out)[i]));
    for (size_t j = 0; j < i; ++j) {
      if ((*out)[j].metric == (*out)[i].metric) {
        return r.Fail(path + ".metric", "a metric no other objective names",
                      Quote((*out)[i].metric) + " (also objective[" + std::to_string(j) + "])");
      }
    }
  }
  return Status::Ok();
}

// `constraints`: a list of {"metric", "min"?, "max"?}, each with a bound.
Status ParseConstraints(const Reader& r, const Json* v, std::vector<ConstraintSpec>* out) {
  if (!v) return Status::Ok();
  if (!v->is_array() || v->size() > 16) {
    return r.FailValue("constraints", "a list of at most 16 {\"metric\", \"min\", \"max\"} objects", *v);
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string path = "constraints[" + std::to_string(i) + "]";
    TUNE_ASSIGN_OR_RETURN(ObjectReader c, ObjectReader::Make(r, (*v)[i], path));
    TUNE_RETURN_IF_ERROR(c.AllowOnly({"metric", "min", "max"}));
    ConstraintSpec spec;
    TUNE_RETURN_IF_ERROR(c.String("metric", &spec.metric, Need::kRequired));
    TUNE_RETURN_IF_ERROR(c.Expect(NoSpace(spec.metric), "metric", "a metric name without spaces, '=' or ','"));
    for (const char* bound : {"min", "max"}) {
      if (!c.Has(bound)) continue;
      double x = 0;
      TUNE_RETURN_IF_ERROR(c.Double(bound, &x));
      (std::string(bound) == "min" ? spec.min : spec.max) = x;
    }
    if (!spec.min && !spec.max) return r.Missing(path + ".max", "a bound: \"max\", \"min\" or both");
    if (spec.min && spec.max) {
      TUNE_RETURN_IF_ERROR(c.Expect(*spec.min <= *spec.max, "min", "a number at most max"));
    }
    out->push_back(spec);
  }
  return Status::Ok();
}

// The objective early stopping ranks on, and what a multi-objective
// experiment refuses (docs/experiment.md, "Several objectives").
Status CheckObjectives(const Reader& r, ExperimentSpec* spec) {
  const SchedulerSpec& s = spec->scheduler;
  const bool ranks = s.type == "asha" || s.type == "median" || s.type == "pbt";
  auto named = std::find_if(spec->objectives.begin(), spec->objectives.end(),
                            [&](const ObjectiveSpec& o) { return o.metric == s.metric; });
  if (!s.metric.empty() && named == spec->objectives.end()) {
    std::string names;
    for (const ObjectiveSpec& o : spec->objectives) names += (names.empty() ? "" : ", ") + Quote(o.metric);
    return r.Fail("scheduler.metric", "the metric of an objective (" + names + ")", Quote(s.metric));
  }
  if (IsMultiObjective(*spec)) {
    if (ranks && s.metric.empty()) {
      return r.Missing("scheduler.metric", "the objective that " + s.type +
                                               " ranks trials on: early stopping compares trials on one "
                                               "objective, so with several objectives name one of them");
    }
    if (spec->search.algorithm == "gp") {
      return r.Fail("search.algorithm", "\"random\", \"tpe\", \"nsga2\", \"grid\" or \"auto\" with several objectives "
                                        "(the Gaussian-process sampler models one objective)",
                    "\"gp\"");
    }
  }
  spec->objective = named != spec->objectives.end() ? *named : spec->objectives.front();
  for (const ObjectiveSpec& o : spec->objectives) {
    if (o.metric == s.time_attr) {
      return r.Fail("scheduler.time_attr",
                    IsMultiObjective(*spec) ? "a metric that no objective names" : "a metric other than objective.metric",
                    Quote(s.time_attr));
    }
  }
  for (size_t i = 0; i < spec->constraints.size(); ++i) {
    if (spec->constraints[i].metric == s.time_attr) {
      return r.Fail("constraints[" + std::to_string(i) + "].metric", "a metric other than scheduler.time_attr",
                    Quote(s.time_attr));
    }
  }
  return Status::Ok();
}

Status ParseTpe(const ObjectReader& s, TpeOptions* tpe) {
  TUNE_RETURN_IF_ERROR(s.Int("n_startup_trials", &tpe->n_startup_trials));
  TUNE_RETURN_IF_ERROR(s.Expect(tpe->n_startup_trials >= 0, "n_startup_trials",
                                "an integer of at least 0"));
  TUNE_RETURN_IF_ERROR(s.Int("n_ei_candidates", &tpe->n_ei_candidates));
  TUNE_RETURN_IF_ERROR(s.Expect(tpe->n_ei_candidates >= 1, "n_ei_candidates",
                                "an integer of at least 1"));
  TUNE_RETURN_IF_ERROR(s.Int("n_ei_candidates_numerical", &tpe->n_ei_candidates_numerical));
  TUNE_RETURN_IF_ERROR(s.Expect(tpe->n_ei_candidates_numerical >= 0, "n_ei_candidates_numerical",
                                "an integer of at least 0 (0: n_ei_candidates)"));
  if (s.Has("gamma")) {
    double gamma = 0;
    TUNE_RETURN_IF_ERROR(s.Double("gamma", &gamma));
    TUNE_RETURN_IF_ERROR(s.Expect(gamma > 0 && gamma < 1, "gamma",
                                  "a fraction of trials above 0 and below 1"));
    tpe->gamma = gamma;
  }
  TUNE_RETURN_IF_ERROR(s.Double("prior_weight", &tpe->prior_weight));
  TUNE_RETURN_IF_ERROR(s.Expect(tpe->prior_weight > 0, "prior_weight", "a number above 0"));
  TUNE_RETURN_IF_ERROR(s.Bool("multivariate", &tpe->multivariate));
  TUNE_RETURN_IF_ERROR(s.Bool("independent_choices", &tpe->independent_choices));
  TUNE_RETURN_IF_ERROR(s.Bool("constant_liar", &tpe->constant_liar));
  TUNE_RETURN_IF_ERROR(s.Bool("consider_endpoints", &tpe->consider_endpoints));
  TUNE_RETURN_IF_ERROR(s.Bool("consider_magic_clip", &tpe->consider_magic_clip));
  TUNE_RETURN_IF_ERROR(s.Enum("parzen_rules", {"optuna5", "optuna3"}, &tpe->parzen_rules));
  return s.Bool("consider_prior", &tpe->consider_prior);
}

Status ParseGp(const ObjectReader& s, GpOptions* gp) {
  TUNE_RETURN_IF_ERROR(s.Int("n_startup_trials", &gp->n_startup_trials));
  // The Gaussian process needs two observations to fit a lengthscale.
  TUNE_RETURN_IF_ERROR(s.Expect(gp->n_startup_trials >= 1, "n_startup_trials",
                                "an integer of at least 1"));
  return s.Bool("deterministic_objective", &gp->deterministic_objective);
}

Status ParseNsga2(const ObjectReader& s, Nsga2Options* o) {
  TUNE_RETURN_IF_ERROR(s.Int("population_size", &o->population_size));
  // Optuna's NSGAIISampler needs two parents per child.
  TUNE_RETURN_IF_ERROR(s.Expect(o->population_size >= 2, "population_size", "an integer of at least 2"));
  for (const char* key : {"crossover_prob", "swapping_prob"}) {
    double* p = std::string(key) == "crossover_prob" ? &o->crossover_prob : &o->swapping_prob;
    TUNE_RETURN_IF_ERROR(s.Double(key, p));
    TUNE_RETURN_IF_ERROR(s.Expect(*p >= 0 && *p <= 1, key, "a probability from 0 to 1"));
  }
  if (s.Has("mutation_prob")) {
    double p = 0;
    TUNE_RETURN_IF_ERROR(s.Double("mutation_prob", &p));
    TUNE_RETURN_IF_ERROR(s.Expect(p >= 0 && p <= 1, "mutation_prob", "a probability from 0 to 1"));
    o->mutation_prob = p;
  }
  return Status::Ok();
}

Status ParseSearch(const Reader& r, const Json* v, const SearchSpace& params, SearchOptions* out) {
  if (!v) return Status::Ok();
  TUNE_ASSIGN_OR_RETURN(ObjectReader s, ObjectReader::Make(r, *v, "search"));
  TUNE_RETURN_IF_ERROR(s.Enum("algorithm", {"random", "tpe", "gp", "nsga2", "grid", "auto"}, &out->algorithm));
  // "auto" (search/auto_sampler.h) takes no options of its own: its delegates
  // run with their defaults, as Optuna's AutoSampler takes only a seed.
  std::vector<std::string> keys = {"algorithm", "seed"};
  // Grid search tries every point of the grid once; nothing to put first.
  if (out->algorithm != "grid") keys.push_back("points_to_evaluate");
  if (out->algorithm == "tpe") keys.insert(keys.end(), kTpeKeys.begin(), kTpeKeys.end());
  if (out->algorithm == "gp") keys.insert(keys.end(), kGpKeys.begin(), kGpKeys.end());
  if (out->algorithm == "nsga2") keys.insert(keys.end(), kNsga2Keys.begin(), kNsga2Keys.end());
  TUNE_RETURN_IF_ERROR(s.AllowOnly(keys, "for algorithm " + Quote(out->algorithm)));
  if (const Json* seed = s.Find("seed")) {
    // Within int64, so that the seed fits the database's INTEGER.
    std::optional<int64_t> value;
    if (!seed->is_number_float()) value = spec_internal::AsInt64(*seed);
    const bool valid = value.has_value() && value.value() >= 0;
    TUNE_RETURN_IF_ERROR(s.Expect(valid, "seed", "an integer of at least 0 and at most 2^63-1"));
    out->seed = static_cast<uint64_t>(value.value());
    out->seed_given = true;
  }
  if (const Json* points = s.Find("points_to_evaluate")) {
    TUNE_RETURN_IF_ERROR(
        spec_internal::ParsePoints(r, *points, s.PathOf("points_to_evaluate"), params, &out->points_to_evaluate));
  }
  if (out->algorithm == "tpe") return ParseTpe(s, &out->tpe);
  if (out->algorithm == "gp") return ParseGp(s, &out->gp);
  if (out->algorithm == "nsga2") return ParseNsga2(s, &out->nsga2);
  return Status::Ok();
}

Status ParseScheduler(const Reader& r, const Json* v, SchedulerSpec* out) {
  if (!v) return Status::Ok();
  TUNE_ASSIGN_OR_RETURN(ObjectReader s, ObjectReader::Make(r, *v, "scheduler"));
  TUNE_RETURN_IF_ERROR(s.Enum("type", {"fifo", "asha", "median", "replay", "pbt"}, &out->type));
  const std::string context = "for type " + Quote(out->type);
  TUNE_RETURN_IF_ERROR(s.String("time_attr", &out->time_attr));
  TUNE_RETURN_IF_ERROR(s.String("metric", &out->metric));
  if (out->type == "fifo") {
    TUNE_RETURN_IF_ERROR(s.AllowOnly({"type", "time_attr"}, context));
  } else if (out->type == "pbt") {  // hyperparam_mutations: ParsePbtMutations
    TUNE_RETURN_IF_ERROR(spec_internal::ParsePbtKeys(s, out));
  } else if (out->type == "asha") {
    TUNE_RETURN_IF_ERROR(s.AllowOnly(
        {"type", "time_attr", "metric", "max_t", "grace_period", "reduction_factor", "brackets"}, context));
    TUNE_RETURN_IF_ERROR(s.Int("max_t", &out->max_t));
    TUNE_RETURN_IF_ERROR(s.Expect(out->max_t >= 1, "max_t", "an integer of at least 1"));
    TUNE_RETURN_IF_ERROR(s.Int("grace_period", &out->grace_period));
    TUNE_RETURN_IF_ERROR(s.Expect(out->grace_period >= 1, "grace_period", "an integer of at least 1"));
    TUNE_RETURN_IF_ERROR(s.Expect(out->grace_period <= out->max_t, "grace_period",
                                  "an integer of at most max_t (" + std::to_string(out->max_t) + ")"));
    TUNE_RETURN_IF_ERROR(s.Double("reduction_factor", &out->reduction_factor));
    TUNE_RETURN_IF_ERROR(
        s.Expect(out->reduction_factor > 1, "reduction_factor", "a number above 1"));
    TUNE_RETURN_IF_ERROR(s.Int("brackets", &out->brackets));
    TUNE_RETURN_IF_ERROR(s.Expect(out->brackets >= 1, "brackets", "an integer of at least 1"));
  } else if (out->type == "replay") {  // its schedule: ParseReplaySchedule
    TUNE_RETURN_IF_ERROR(s.AllowOnly({"type", "time_attr", "max_t", "schedule"}, context));
    TUNE_RETURN_IF_ERROR(s.Int("max_t", &out->max_t));
    TUNE_RETURN_IF_ERROR(s.Expect(out->max_t >= 1, "max_t", "an integer of at least 1"));
  } else {
    TUNE_RETURN_IF_ERROR(s.AllowOnly(
        {"type", "time_attr", "metric", "grace_period", "min_samples_required", "hard_stop"}, context));
    out->grace_period = 60;  // Ray's MedianStoppingRule default
    TUNE_RETURN_IF_ERROR(s.Int("grace_period", &out->grace_period));
    TUNE_RETURN_IF_ERROR(s.Expect(out->grace_period >= 0, "grace_period", "an integer of at least 0"));
    TUNE_RETURN_IF_ERROR(s.Int("min_samples_required", &out->min_samples_required));
    TUNE_RETURN_IF_ERROR(s.Expect(out->min_samples_required >= 1, "min_samples_required",
                                  "an integer of at least 1"));
    TUNE_RETURN_IF_ERROR(s.Bool("hard_stop", &out->hard_stop));
  }
  return s.Expect(NoSpace(out->time_attr), "time_attr", "a metric name without spaces, '=' or ','");
}

// scheduler.schedule of type "replay" (`tune replay`): a non-empty array of
// {"step": S, "params": {...}}, steps increasing, each params object naming
// parameters of `params` with values in their domains.
Status ParseReplaySchedule(const Reader& r, const Json* v, const SearchSpace& params, SchedulerSpec* out) {
  if (!v || out->type != "replay") return Status::Ok();
  const Json* schedule = v->is_object() && v->contains("schedule") ? &(*v)["schedule"] : nullptr;
  if (!schedule) return r.Missing("scheduler.schedule", "an array of {\"step\", \"params\"}");
  if (!schedule->is_array() || schedule->empty()) {
    return r.FailValue("scheduler.schedule", "a non-empty array of {\"step\", \"params\"}", *schedule);
  }
  Json points = Json::array();
  for (size_t i = 0; i < schedule->size(); ++i) {
    const std::string path = "scheduler.schedule[" + std::to_string(i) + "]";
    TUNE_ASSIGN_OR_RETURN(ObjectReader e, ObjectReader::Make(r, (*schedule)[i], path));
    TUNE_RETURN_IF_ERROR(e.AllowOnly({"step", "params"}));
    int64_t step = 0;
    TUNE_RETURN_IF_ERROR(e.Int("step", &step, Need::kRequired));
    const int64_t after = out->replay_schedule.empty() ? 0 : out->replay_schedule.back().first;
    TUNE_RETURN_IF_ERROR(e.Expect(step > after, "step", "an integer above " + std::to_string(after) +
                                                            " (the steps increase)"));
    const Json* p = e.Find("params");
    if (!p) return r.Missing(e.PathOf("params"), "an object of parameter values");
    out->replay_schedule.emplace_back(step, ParamMap{});
    points.push_back(*p);
  }
  std::vector<ParamMap> maps;
  TUNE_RETURN_IF_ERROR(spec_internal::ParsePoints(r, points, "scheduler.schedule[].params", params, &maps));
  for (size_t i = 0; i < maps.size(); ++i) out->replay_schedule[i].second = std::move(maps[i]);
  return Status::Ok();
}

Status ParseLimits(const Reader& r, const Json* v, LimitsSpec* out, bool* max_trials_given) {
  *max_trials_given = false;
  if (!v) return Status::Ok();
  TUNE_ASSIGN_OR_RETURN(ObjectReader l, ObjectReader::Make(r, *v, "limits"));
  TUNE_RETURN_IF_ERROR(
      l.AllowOnly({"max_trials", "max_concurrent_trials", "max_failed_trials", "time_budget_s"}));
  *max_trials_given = l.Has("max_trials");
  TUNE_RETURN_IF_ERROR(l.Int("max_trials", &out->max_trials));
  TUNE_RETURN_IF_ERROR(l.Expect(out->max_trials >= 1, "max_trials", "an integer of at least 1"));
  TUNE_RETURN_IF_ERROR(l.Int("max_concurrent_trials", &out->max_concurrent_trials));
  TUNE_RETURN_IF_ERROR(l.Expect(out->max_concurrent_trials >= 1, "max_concurrent_trials",
                                "an integer of at least 1"));
  TUNE_RETURN_IF_ERROR(l.Int("max_failed_trials", &out->max_failed_trials));
  TUNE_RETURN_IF_ERROR(l.Expect(!l.Has("max_failed_trials") || out->max_failed_trials >= 1,
                                "max_failed_trials",
                                "an integer of at least 1 (leave the key out for no limit)"));
  return l.Seconds("time_budget_s", &out->time_budget_s, "leave the key out for no limit");
}

// storage.path (an SQLite file) or storage.url (a PostgreSQL database,
// storage/database_url.h), one of the two.
Status ParseStorage(const Reader& r, const Json* v, std::string* path, std::string* url) {
  if (!v) return Status::Ok();
  TUNE_ASSIGN_OR_RETURN(ObjectReader s, ObjectReader::Make(r, *v, "storage"));
  TUNE_RETURN_IF_ERROR(s.AllowOnly({"path", "url"}));
  if (s.Has("path") && s.Has("url")) {
    return r.Fail("storage", "either path (an SQLite file) or url (a postgresql:// database)", "both");
  }
  if (s.Has("url")) {
    TUNE_RETURN_IF_ERROR(s.String("url", url, Need::kRequired));
    TUNE_RETURN_IF_ERROR(s.Expect(IsPostgresUrl(*url), "url", "a postgresql:// or postgres:// URL"));
    // The password comes from PGPASSWORD or ~/.pgpass, never from the
    // experiment (which the database keeps); the message does not show it.
    if (Status st = CheckPostgresUrl(*url, r.file() + ": storage.url"); st.IsInvalidArgument()) return st;
    return Status::Ok();
  }
  TUNE_RETURN_IF_ERROR(s.String("path", path, Need::kRequired));
  return s.Expect(!path->empty(), "path", "a database file path");
}

// The grid's size: of every parameter for algorithm "grid", else of the
// `grid` parameters (1 when there are none).
Result<int64_t> GridSize(const Reader& r, const ExperimentSpec& spec) {
  bool all = spec.search.algorithm == "grid";
  int64_t total = 1;
  for (const auto& [name, dist] : spec.parameters) {
    auto* c = std::get_if<CategoricalDistribution>(&dist);
    if (!all && !(c && c->grid)) continue;
    auto* f = std::get_if<FloatDistribution>(&dist);
    if (f && f->step && (f->high - f->low) / *f->step >= static_cast<double>(kMaxGridPoints)) {
      return r.Fail("parameters", "a grid of at most " + std::to_string(kMaxGridPoints) + " points",
                    "more (" + name + " alone has " + ParamToString((f->high - f->low) / *f->step) + ")");
    }
    auto n = Cardinality(dist);
    if (!n) {
      return r.Fail(JoinPath("parameters", name),
                    "a discrete parameter (choice, grid, randint, qrandint, lograndint, quniform "
                    "or qloguniform) for search.algorithm \"grid\"",
                    Describe(dist));
    }
    if (total > kMaxGridPoints / std::max<int64_t>(*n, 1)) {
      return r.Fail("parameters", "a grid of at most " + std::to_string(kMaxGridPoints) + " points",
                    "more");
    }
    total *= *n;
  }
  return total;
}

std::string BaseDir(const std::string& path) {
  std::error_code ec;
  fs::path dir = fs::path(path).parent_path();
  fs::path abs = dir.empty() ? fs::current_path(ec) : fs::absolute(dir, ec);
  if (ec) return dir.string();
  std::string out = abs.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

Result<ExperimentSpec> ParseExperimentSpec(const std::string& text, const std::string& path) {
  Reader r(path.empty() ? "experiment.json" : path);
  TUNE_ASSIGN_OR_RETURN(Json doc, ParseJson(r, text));
  TUNE_ASSIGN_OR_RETURN(ObjectReader top, ObjectReader::Make(r, doc, "", "a JSON object"));
  TUNE_RETURN_IF_ERROR(top.AllowOnly({"name", "objective", "constraints", "parameters", "search", "scheduler",
                                      "limits", "trial", "backend", "tracking", "storage"}));
  ExperimentSpec spec;
  spec.source_path = path;
  spec.base_dir = BaseDir(path);
  spec.json = text;
  TUNE_RETURN_IF_ERROR(ParseName(top, &spec.name));
  TUNE_RETURN_IF_ERROR(ParseObjectives(r, top.Find("objective"), &spec.objectives));
  TUNE_RETURN_IF_ERROR(ParseConstraints(r, top.Find("constraints"), &spec.constraints));
  const Json* params = top.Find("parameters");
  if (!params) return r.Missing("parameters", "an object with at least one parameter");
  TUNE_RETURN_IF_ERROR(spec_internal::ParseParameters(r, *params, &spec.parameters));
  TUNE_RETURN_IF_ERROR(ParseSearch(r, top.Find("search"), spec.parameters, &spec.search));
  if (IsMultiObjective(spec)) {
    // Several objectives: TPE as Optuna 5.0 runs it (univariate, n_ei_candidates
    // draws) unless the keys say otherwise; measured in bench/RESULTS.md
    // ("Multi-objective"): the multivariate default falls short on DTLZ2.
    const Json* search = top.Find("search");
    auto given = [&](const char* key) { return search && search->is_object() && search->contains(key); };
    if (!given("multivariate")) spec.search.tpe.multivariate = false;
    if (!given("n_ei_candidates_numerical")) spec.search.tpe.n_ei_candidates_numerical = 0;
  }
  TUNE_RETURN_IF_ERROR(ParseScheduler(r, top.Find("scheduler"), &spec.scheduler));
  TUNE_RETURN_IF_ERROR(ParseReplaySchedule(r, top.Find("scheduler"), spec.parameters, &spec.scheduler));
  TUNE_RETURN_IF_ERROR(spec_internal::ParsePbtMutations(r, top.Find("scheduler"), spec.parameters, &spec.scheduler));
  TUNE_RETURN_IF_ERROR(CheckObjectives(r, &spec));
  bool max_trials_given = false;
  TUNE_RETURN_IF_ERROR(ParseLimits(r, top.Find("limits"), &spec.limits, &max_trials_given));
  TUNE_ASSIGN_OR_RETURN(int64_t grid_size, GridSize(r, spec));
  if (!max_trials_given) {
    // Grid search tries every point once; with `grid` parameters under
    // random or TPE search every grid point is tried at least once.
    spec.limits.max_trials = static_cast<int>(
        spec.search.algorithm == "grid" ? grid_size : std::max<int64_t>(spec.limits.max_trials, grid_size));
  }
  if (spec.search.points_to_evaluate.size() > static_cast<size_t>(spec.limits.max_trials)) {
    return r.Fail("search.points_to_evaluate",
                  "at most limits.max_trials (" + std::to_string(spec.limits.max_trials) + ") points",
                  std::to_string(spec.search.points_to_evaluate.size()));
  }
  const Json* trial = top.Find("trial");
  if (!trial) return r.Missing("trial", "an object with at least a command");
  TUNE_RETURN_IF_ERROR(spec_internal::ParseTrial(r, *trial, spec.parameters, spec.base_dir, &spec.trial));
  if (const Json* backend = top.Find("backend")) {
    TUNE_RETURN_IF_ERROR(spec_internal::ParseBackend(r, *backend, spec.base_dir, &spec.backend));
  }
  TUNE_RETURN_IF_ERROR(spec_internal::CheckBackendNeeds(r, spec));
  TUNE_RETURN_IF_ERROR(spec_internal::CheckPbtLoraRank(r, spec));
  if (const Json* tracking = top.Find("tracking")) {
    TUNE_RETURN_IF_ERROR(spec_internal::ParseTracking(r, *tracking, &spec.tracking));
  }
  TUNE_RETURN_IF_ERROR(ParseStorage(r, top.Find("storage"), &spec.storage_path, &spec.storage_url));
  return spec;
}

double ConstraintValue(const ConstraintSpec& c, double value) {
  if (std::isnan(value)) return value;
  double violation = -std::numeric_limits<double>::infinity();
  if (c.max) violation = std::max(violation, value - *c.max);
  if (c.min) violation = std::max(violation, *c.min - value);
  return violation;
}

Result<ExperimentSpec> LoadExperimentSpec(const std::string& path) {
  TUNE_ASSIGN_OR_RETURN(std::string text, ReadFileCapped(path, kMaxExperimentJsonBytes));
  return ParseExperimentSpec(text, path);
}

Result<std::vector<std::string>> CheckResumable(const ExperimentSpec& spec, const std::string& stored_json,
                                                const std::string& db_path) {
  const std::string file = spec.source_path.empty() ? "experiment.json" : spec.source_path;
  Json stored, given;
  try {
    stored = Json::parse(stored_json);
    given = Json::parse(spec.json);
  } catch (const Json::exception& e) {
    return Status::Internal(db_path + ": experiment '" + spec.name + "': the stored experiment.json does not parse: " +
                            e.what());
  }
  std::vector<std::string> changed;
  for (const char* key :
       {"objective", "constraints", "parameters", "search", "scheduler", "limits", "trial", "backend", "tracking",
        "storage"}) {
    const Json none;
    const Json& a = stored.contains(key) ? stored[key] : none;
    const Json& b = given.contains(key) ? given[key] : none;
    if (a == b) continue;
    const std::string section = key;
    if (section == "limits" || section == "trial" || section == "backend" || section == "tracking" ||
        section == "storage") {
      changed.push_back(section);
      continue;
    }
    // The first difference, as a JSON path with both sides.
    Json patch = Json::diff(a, b);
    std::string pointer = patch.empty() ? "" : patch[0].value("path", "");
    std::string path = section;
    Json::json_pointer ptr(pointer);
    // "/parameters/lr/low" -> parameters.lr.low; "/values/2" -> values[2].
    for (size_t pos = 1; pos <= pointer.size() && !pointer.empty();) {
      size_t next = std::min(pointer.find('/', pos), pointer.size());
      std::string token = pointer.substr(pos, next - pos);
      pos = next + 1;
      for (size_t at; (at = token.find("~1")) != std::string::npos;) token.replace(at, 2, "/");
      for (size_t at; (at = token.find("~0")) != std::string::npos;) token.replace(at, 2, "~");
      bool index = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
      path = index ? IndexPath(path, std::stoul(token)) : JoinPath(path, token);
    }
    auto show = [&](const Json& doc) {
      if (!doc.contains(ptr) || (pointer.empty() && doc.is_null())) return std::string("nothing");
      return spec_internal::Show(doc.at(ptr));
    };
    return Status::FailedPrecondition(
        file + ": " + path + ": expected " + show(a) + " as when experiment '" + spec.name + "' in " + db_path +
        " started (--resume keeps its parameters, objective, search and scheduler; give the experiment another "
        "name to start a new one), got " + show(b));
  }
  return changed;
}

Status OverrideBackend(ExperimentSpec* spec, const std::string& type) {
  Reader r(spec->source_path.empty() ? "experiment.json" : spec->source_path);
  if (type != "local" && type != "kubernetes") {
    return r.Fail("backend.type (--backend)", "\"local\" or \"kubernetes\"", Quote(type));
  }
  BackendSpec saved = spec->backend;
  spec->backend.type = type;
  Status s = spec_internal::CheckBackendNeeds(r, *spec);
  if (!s.ok()) spec->backend = saved;
  return s;
}

}  // namespace tune
