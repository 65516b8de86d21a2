// The `tune` subcommands as functions: parsed arguments in, exit code out
// (0 ok, 1 experiment failed, 2 usage or invalid input, 130 interrupted).
// main.cc only parses the command line; everything else is here.
#pragma once

#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace tune {

struct RunArgs {
  std::string experiment_path;
  std::optional<std::string> db_path;  // unset: storage.path, else ./tune.db
  std::string backend;   // empty: backend.type
  bool resume = false;
  std::optional<int> max_concurrent;
  bool quiet = false;
  bool terminal = false;  // draw the live table
  bool allow_network_fs = false;  // an SQLite file on NFS & co.: a rollback journal (storage/open_storage.h)
  const std::atomic<bool>* stop = nullptr;
};

struct QueryArgs {
  std::optional<std::string> db_path;  // unset: ./tune.db
  std::string experiment;  // empty: the latest experiment
  std::string format = "table";
  std::string state;       // trials: filter, empty = all
  // trials: "number", "value" (best first) or an objective's metric.
  std::string sort = "number";
  std::string objective;   // importance: which of several objectives
  int limit = 0;           // trials: at most this many rows; 0 = all
  std::optional<int> trial;  // trials: only this trial's details (tune trials --trial N)
};

// `tune replay`: an experiment.json that replays trial `trial`'s schedule
// on one trial (docs/experiment.md, "Replaying a trial's schedule").
struct ReplayArgs {
  std::optional<std::string> db_path;  // unset: ./tune.db
  std::string experiment;  // empty: the latest experiment
  int trial = 0;
  std::string out_path;    // empty: stdout
};

// `tune cleanup`: deletes the Kubernetes objects labelled with experiments
// of the database (docs/kubernetes.md). Exit 0 when nothing is left, 1 when
// something could not be deleted (or an experiment was skipped because a run
// holds it), 2 for bad arguments or when the experiment named is being run.
struct CleanupArgs {
  std::optional<std::string> db_path;  // unset: ./tune.db
  std::string experiment;  // empty: every experiment of the database whose backend.type is kubernetes
  std::string namespace_;  // empty: each experiment's backend.namespace
  bool dry_run = false;    // list what would be deleted, delete nothing
};

// `tune migrate --from A --to B [--experiment NAME]...`: copies experiments
// exactly between results databases, SQLite or PostgreSQL, either way
// (storage/postgres_migrate.h). Exit 0 when copied, 1 when the copy failed,
// 2 for bad arguments, a missing experiment or one already in B.
struct MigrateArgs {
  std::string from, to;
  std::vector<std::string> experiments;  // empty: all
};

int RunCommand(const RunArgs& args, std::ostream& out, std::ostream& err);
int MigrateCommand(const MigrateArgs& args, std::ostream& out, std::ostream& err);
int CleanupCommand(const CleanupArgs& args, std::ostream& out, std::ostream& err);
int ValidateCommand(const std::string& path, std::ostream& out, std::ostream& err);
int BestCommand(const QueryArgs& args, std::ostream& out, std::ostream& err);
int TrialsCommand(const QueryArgs& args, std::ostream& out, std::ostream& err);
// Exit 0 when written, 2 for an unknown experiment or trial, or a stored
// spec that does not parse with this tune.
int ReplayCommand(const ReplayArgs& args, std::ostream& out, std::ostream& err);
int StatusCommand(const QueryArgs& args, std::ostream& out, std::ostream& err);
int ImportanceCommand(const QueryArgs& args, std::ostream& out, std::ostream& err);
// tune export tensorboard --out DIR: event files of a stored experiment.
int ExportTensorBoardCommand(const QueryArgs& args, const std::string& out_dir, std::ostream& out, std::ostream& err);
// `tune export mlflow`: exit 0 when sent (or all there), 1 when the server
// could not be reached or failed, 2 for bad input (no tracking URI, an
// unknown experiment, a refused login).
int ExportMlflowCommand(const QueryArgs& args, const std::string& tracking_uri, std::ostream& out,
                        std::ostream& err);
int RenderCommand(const std::string& path, int trial_number, std::ostream& out, std::ostream& err);
// `tune import katib FILE [-o OUT]`: experiment.json on `out`, or in
// `out_path` when given; each field not carried over as a line on `err`.
int ImportKatibCommand(const std::string& path, const std::string& out_path, std::ostream& out, std::ostream& err);

}  // namespace tune
