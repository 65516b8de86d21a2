// Report: what the query commands `tune best`, `tune trials` and
// `tune status` print (docs/architecture.md, section 5; docs/database.md).
//
// Each function reads the database through `storage` (one snapshot per
// Storage call; safe while `tune run` writes), writes to `out` and returns
// Status: NotFound when the named experiment does not exist;
// FailedPrecondition when there is nothing to show yet (no experiment at
// all, or for PrintBest no completed trial); InvalidArgument for an unknown
// format; storage errors as they come. Nothing is written to `out` unless the call succeeds.
// `experiment` names an experiment; empty means the most recently created
// one. The objective (metric and mode) is read from the experiment's stored
// spec_json (`objective.metric`, default "loss"; `objective.mode`, default
// "min").
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/trial.h"
#include "spec/experiment_spec.h"
#include "storage/storage.h"
#include "storage/trial_schedule.h"

namespace tune {

// The experiment named `name`, or the newest one when `name` is empty
// (FailedPrecondition if there is none).
Result<ExperimentRecord> ResolveExperiment(Storage& storage, const std::string& name);

// The best completed trial with a finite value (BestTrial,
// dashboard/results_query.h: pruned, failed and stopped trials are not
// candidates; ties go to the lower number). `format` "table" (for humans) or
// "json": {"experiment", "trial_id", "number", "value", "metric", "mode",
// "params", "schedule"}, where params keep their exact types (integers
// without a point, floats with one) so they can be fed back as a fixed
// config, and "schedule" is the trial's schedule (ScheduleJson,
// dashboard/results_query.h; one entry unless Population Based Training
// changed its parameters). The table lists the schedule under the
// parameters when it has more than one entry (ScheduleText). `mode`
// overrides the stored objective mode. With constraints, only feasible
// trials are candidates. With several objectives it prints the Pareto front
// instead (dashboard/pareto_view.h: every feasible, completed, non-dominated
// trial, sorted by the first objective): a table with each objective and
// parameter, then the hypervolume and its reference point; "json" an array
// of {"number", "values", "params"}, values in objective order.
Status PrintBest(Storage& storage, const std::string& experiment, const std::string& format,
                 std::ostream& out, std::optional<Mode> mode = std::nullopt);

// Which trials `tune trials` lists, in what order, and how many.
struct TrialListing {
  std::optional<TrialState> state;  // only trials in this state; unset: all
  // false: by number. true: best first, as `tune best` ranks: completed
  // trials by value in the objective's direction, then the other trials
  // that have a value (pruned ones: their value when stopped) the same way,
  // then those without one; ties by number.
  bool best_first = false;
  int limit = 0;  // at most this many rows, after ordering; 0: all
  // An objective's metric: best first by that objective (completed trials
  // with its value, in its direction; then the rest by number). A list of
  // objectives only; for the one objective it means best_first.
  std::string sort_objective = "";
};

// One row per trial: number, state, value (with several objectives, one
// column per objective; with constraints, whether it was feasible), last
// step, pruned rung, attempts, duration and every parameter. `format` "table" (aligned), "csv"
// (RFC 4180, a header row, parameters as params_<name> columns) or "json"
// (an array of objects, each with the trial's "schedule" as ScheduleJson
// writes it, and "failed_attempts"; "values", "constraints" and "feasible"
// when the experiment keeps them). InvalidArgument for a negative limit or
// a sort_objective that no objective names.
Status PrintTrials(Storage& storage, const std::string& experiment, const TrialListing& listing,
                   const std::string& format, std::ostream& out);

// One trial (`tune trials --trial N`), by number. "table": its fields one
// per line (state, value, step, attempts, duration, where, message, every
// parameter), then its schedule when it has more than one entry; "json":
// the object `tune trials --format json` has for it. NotFound when the
// experiment has no trial `number`.
Status PrintTrial(Storage& storage, const std::string& experiment, int number, const std::string& format,
                  std::ostream& out);

// A schedule for people, one line per entry, each after `indent`:
// "from step 40: learning_rate=0.0012, lora_r=16 (from trial 3's
// checkpoint-40)"; the first entry has no parenthesis.
std::string ScheduleText(const std::vector<ScheduleEntry>& schedule, const std::string& indent);

// Which parameters set the best trials apart: PED-ANOVA importances
// (search/ped_anova.h, what Optuna 5's get_param_importances computes) of
// the experiment's completed trials, most important first, over the
// parameters of its stored spec. "table": parameter, importance and a bar,
// with a note when the best 10% are fewer than 5 trials; "json":
// {"experiment", "metric", "mode", "method", "trials", "top_trials",
// "importances": [{"parameter", "importance"}]}. FailedPrecondition with
// fewer than 2 completed trials, or when the stored spec does not parse.
// `objective`: with several objectives, the metric of the one to explain
// (default: the one early stopping ranks on, ExperimentSpec::objective);
// InvalidArgument when no objective has that metric.
Status PrintImportance(Storage& storage, const std::string& experiment, const std::string& format,
                       std::ostream& out, const std::string& objective = "");

// A table of every experiment in creation order: name, state, trial counts
// per state, best value so far (completed trials) and elapsed time.
Status PrintStatus(Storage& storage, std::ostream& out);

// "42.0s", "3m05s", "2h07m", "1d03h": for tables.
std::string FormatDuration(double seconds);

// The fields of one CSV record, RFC 4180 quoted, joined by commas, ended by
// CRLF; UTF-8, as the JSON outputs (ValidUtf8, core/utf8.h).
std::string CsvRecord(const std::vector<std::string>& fields);

}  // namespace tune
