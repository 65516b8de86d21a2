// DashboardData: the results database as the JSON documents that the
// dashboard's /api serves and `tune report` inlines (docs/dashboard.md has
// every field).
//
// Reads only, through `storage` (one snapshot per Storage call, so safe
// while `tune run` writes). Every method returns a JSON text: NotFound for
// an experiment or trial that does not exist; storage errors as they come.
// Strings are the database's as they are (the page renders them as text).
// Thread-safe when `storage` is (SqliteStorage is).
#pragma once

#include <string>

#include "core/status.h"
#include "storage/storage.h"

namespace tune {

class DashboardData {
 public:
  // `runs_dir` is where `tune run` put the trial directories of this
  // database (<db dir>/tune_runs): logs are read from
  // runs_dir/<experiment>/trial_NNNN/rank_R.log only, for trials and ranks
  // the database names.
  DashboardData(Storage& storage, std::string runs_dir);

  // [{"name", "state", "message", "created_at", "ended_at", "run_seconds",
  //   "metric", "mode", "counts": {state: n}, "trials", "best"}], in
  // creation order.
  Result<std::string> Experiments();

  // One experiment: its fields as above plus "objective", "parameters"
  // (the search space), "scheduler" (with the ASHA rung "milestones" of
  // each bracket), "trials" (one row each: params, value, state, rung,
  // attempts, times, message), "curves" (number -> [[step, objective]]:
  // the counted reports of the current attempt; reports past max_t are
  // not part of it), "importance" (PED-ANOVA, or {"error": why not}),
  // "lineage" (every PBT exploit in the order recorded: {"trial",
  // "at_step", "donor", "donor_step", "before", "after", "time"}) and
  // "best_schedule" (the best trial's schedule, ScheduleJson; null without
  // a best trial).
  Result<std::string> Experiment(const std::string& name);

  // One trial: its row, every report of every attempt with all its
  // metrics ("excluded" says why a report does not count), its
  // "schedule" (ScheduleJson, dashboard/results_query.h), "failed_attempts",
  // and the last `log_lines` lines of each rank's log.
  Result<std::string> TrialDetail(const std::string& experiment, int number, int log_lines = 200);

  // Changes whenever another connection commits to the database
  // (Storage::DataVersion): Experiments() and Experiment() read nothing
  // else, so an unchanged version means unchanged answers.
  Result<int64_t> DataVersion() { return storage_.DataVersion(); }

  // {"NUMBER": TrialDetail of that trial} for every trial of `experiment`
  // (what `tune report` inlines), reading the trial list once.
  Result<std::string> AllTrialDetails(const std::string& experiment, int log_lines);

 private:
  Storage& storage_;
  std::string runs_dir_;
};

// <db dir>/tune_runs: where `tune run --db db_path` puts trial directories.
std::string RunsDirFor(const std::string& db_path);

}  // namespace tune
