// tune: the command line (docs/architecture.md, section 5).
//
// Exit codes: 0 success; 1 the experiment failed, or an unexpected error
// (one `tune: internal error: ...` sentence; an experiment it stopped is
// left for --resume); 2 usage or invalid input (one sentence on stderr
// naming the file, the JSON path and what was expected); 130 interrupted by
// Ctrl-C (resume with --resume).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/exception_text.h"
#include "dashboard/dashboard_command.h"
#include "tuner/cli_commands.h"

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int sig) {
  if (g_stop.exchange(true)) {
    // Second Ctrl-C: give up at once (children die with us via PDEATHSIG).
    signal(sig, SIG_DFL);
    raise(sig);
  }
  const char msg[] = "\ntune: stopping trials (Ctrl-C again to quit at once)...\n";
  ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)n;
}

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // A file size limit (RLIMIT_FSIZE) reached: a write error (EFBIG) that
  // SQLite reports as a full disk, one sentence, instead of a core dump.
  signal(SIGXFSZ, SIG_IGN);
}

// The last resort for an exception that escaped a thread without a
// catch-all of its own: one sentence and exit 1 instead of abort() and a
// core dump. Trials die with the tuner (PDEATHSIG); the database is as
// after a kill, which --resume continues.
[[noreturn]] void OnTerminate() {
  std::string text = "std::terminate was called without an exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (...) {
      text = tune::CurrentExceptionText();
    }
  }
  const std::string line = "tune: internal error: " + text + "\n";
  ssize_t n = write(STDERR_FILENO, line.data(), line.size());
  (void)n;
  _exit(1);
}

int Main(int argc, char** argv) {
  CLI::App app{"tune: hyperparameter tuning for LoRA fine-tuning (random search, TPE, ASHA; local or Kubernetes)"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");

  tune::RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "Run (or with --resume continue) an experiment");
  run_cmd->add_option("experiment", run.experiment_path, "experiment.json")->required();
  run_cmd->add_option("--db", run.db_path, "results database: an SQLite file or a postgresql:// URL (default: storage.path or storage.url, else ./tune.db)");
  run_cmd->add_option("--backend", run.backend, "Where trials run (default: backend.type)")
      ->check(CLI::IsMember({"local", "kubernetes"}));
  run_cmd->add_flag("--resume", run.resume, "Continue the experiment of the same name in the database");
  run_cmd->add_flag("--allow-network-fs", run.allow_network_fs,
                    "Keep an SQLite database on a network filesystem anyway (a rollback journal, one writer)");
  run_cmd->add_option("--max-concurrent", run.max_concurrent, "Override limits.max_concurrent_trials");
  run_cmd->add_flag("--quiet,-q", run.quiet, "Plain log lines only, no live table");

  std::string validate_path;
  auto* validate_cmd = app.add_subcommand("validate", "Check an experiment.json and print what it means");
  validate_cmd->add_option("experiment", validate_path, "experiment.json")->required();

  tune::QueryArgs query;
  auto add_query = [&](CLI::App* cmd, bool with_experiment) {
    cmd->add_option("--db", query.db_path, "results database: an SQLite file or a postgresql:// URL (default: ./tune.db)");
    if (with_experiment)
      cmd->add_option("--experiment,-e", query.experiment, "Experiment name (default: the latest one)");
  };
  auto* best_cmd = app.add_subcommand("best", "Print the best trial (id, value, params)");
  add_query(best_cmd, true);
  best_cmd->add_option("--format", query.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->default_val("table");
  auto* trials_cmd = app.add_subcommand("trials", "List the trials of an experiment");
  add_query(trials_cmd, true);
  trials_cmd->add_option("--state", query.state, "Only trials in this state")
      ->check(CLI::IsMember({"pending", "running", "paused", "completed", "pruned", "failed", "stopped"}));
  trials_cmd->add_option("--format", query.format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->default_val("table");
  trials_cmd->add_option("--sort", query.sort,
                         "number, value: best first (completed trials, as tune best ranks them, then the rest), "
                         "or an objective's metric: best first by that objective")
      ->default_val("number");
  trials_cmd->add_option("--limit", query.limit, "At most this many trials, after sorting (0: all)")
      ->default_val(0);
  trials_cmd->add_option("--trial", query.trial,
                         "Only this trial (its number): every detail, and its schedule when PBT changed its parameters");
  auto* importance_cmd =
      app.add_subcommand("importance", "Which parameters set the best trials apart (PED-ANOVA, as Optuna's default)");
  add_query(importance_cmd, true);
  importance_cmd->add_option("--format", query.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->default_val("table");
  importance_cmd->add_option("--objective", query.objective,
                             "With several objectives: the metric of the one to explain (default: the one early "
                             "stopping ranks on, else the first)");
  auto* status_cmd = app.add_subcommand("status", "Experiments, trial counts per state, best so far");
  add_query(status_cmd, false);

  std::string export_out;
  auto* export_cmd = app.add_subcommand("export", "Send a stored experiment to an outside tracker");
  export_cmd->require_subcommand(1);
  auto* export_tb_cmd =
      export_cmd->add_subcommand("tensorboard", "Write TensorBoard event files (scalars and HParams) of an experiment");
  add_query(export_tb_cmd, true);
  export_tb_cmd->add_option("--out", export_out, "Directory; the files go to OUT/<experiment>/trial_NNNN")->required();
  std::string export_uri;
  auto* export_ml_cmd = export_cmd->add_subcommand(
      "mlflow", "Send an experiment's runs to an MLflow tracking server, skipping what is there already");
  add_query(export_ml_cmd, true);
  export_ml_cmd->add_option("--tracking-uri", export_uri,
                            "MLflow server (default: the experiment's tracking.mlflow.tracking_uri, else "
                            "MLFLOW_TRACKING_URI)");

  std::string render_path;
  int render_trial = 0;
  auto* render_cmd = app.add_subcommand("render", "Print the Kubernetes manifests a trial would get, without a cluster");
  render_cmd->add_option("experiment", render_path, "experiment.json")->required();
  render_cmd->add_option("--trial", render_trial, "Trial number (its parameters are sampled as tune run would)");

  std::string import_path, import_out;
  auto* import_cmd = app.add_subcommand("import", "Convert another tuner's experiment into an experiment.json");
  import_cmd->require_subcommand(1);
  auto* katib_cmd = import_cmd->add_subcommand("katib", "A Katib Experiment (kubeflow.org/v1beta1 YAML)");
  katib_cmd->add_option("experiment", import_path, "EXPERIMENT.yaml")->required();
  katib_cmd->add_option("-o,--output", import_out, "Write experiment.json here (default: stdout)");

  tune::ReplayArgs replay;
  auto* replay_cmd = app.add_subcommand(
      "replay", "Write an experiment.json that replays one trial's parameter schedule on one trial (PBT)");
  replay_cmd->add_option("--db", replay.db_path, "results database: an SQLite file or a postgresql:// URL (default: ./tune.db)");
  replay_cmd->add_option("--experiment,-e", replay.experiment, "Experiment name (default: the latest one)");
  replay_cmd->add_option("--trial", replay.trial, "Trial number whose schedule to replay")->required();
  replay_cmd->add_option("-o,--output", replay.out_path, "Write experiment.json here (default: stdout)");

  tune::DashboardArgs dashboard;
  auto* dashboard_cmd = app.add_subcommand("dashboard", "Serve the results as a live web page (read-only)");
  dashboard_cmd->add_option("--db", dashboard.db_path, "results database: an SQLite file or a postgresql:// URL (default: ./tune.db)");
  dashboard_cmd->add_option("--host", dashboard.host, "Address to listen on")->default_val("127.0.0.1");
  dashboard_cmd->add_option("--port", dashboard.port, "Port (0: any free one)")->default_val(8080);
  tune::ReportArgs report;
  auto* report_cmd = app.add_subcommand("report", "Write one experiment's views as one self-contained HTML file");
  report_cmd->add_option("--db", report.db_path, "results database: an SQLite file or a postgresql:// URL (default: ./tune.db)");
  report_cmd->add_option("--experiment,-e", report.experiment, "Experiment name (default: the latest one)");
  report_cmd->add_option("--out,-o", report.out_path, "The HTML file to write")->required();
  tune::MigrateArgs migrate;
  auto* migrate_cmd = app.add_subcommand(
      "migrate", "Copy experiments exactly between results databases (SQLite file or postgresql:// URL, either way)");
  migrate_cmd->add_option("--from", migrate.from, "The database to copy from")->required();
  migrate_cmd->add_option("--to", migrate.to, "The database to copy into (created if missing)")->required();
  migrate_cmd->add_option("--experiment,-e", migrate.experiments, "An experiment to copy (repeatable; default: all)");
  tune::CleanupArgs cleanup;
  auto* cleanup_cmd =
      app.add_subcommand("cleanup", "Delete the Kubernetes Jobs, Services and pods labelled with an experiment");
  cleanup_cmd->add_option("--db", cleanup.db_path, "results database: an SQLite file or a postgresql:// URL (default: ./tune.db)");
  cleanup_cmd->add_option("--experiment,-e", cleanup.experiment,
                          "Experiment name (default: every experiment of the database that runs on Kubernetes)");
  cleanup_cmd->add_option("--namespace,-n", cleanup.namespace_, "Namespace (default: the experiment's backend.namespace)");
  cleanup_cmd->add_flag("--dry-run", cleanup.dry_run, "List what would be deleted, delete nothing");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    // CLI11 reports an unknown command as a missing one.
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      what = std::string("unknown command '") + argv[1] +
             "' (expected run, validate, best, trials, importance, status, dashboard, report, export, render, import, replay, migrate or cleanup)";
    }
    std::cerr << "tune: " << what << "\n";
    std::cerr << "Run 'tune --help' for usage.\n";
    return 2;
  }

  if (*run_cmd) {
    // Trial programs shipped with tune (lora_train, synthetic_trial) live
    // beside it: find them there when they are not elsewhere on PATH.
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      const char* path = std::getenv("PATH");
      std::string p = path && *path ? std::string(path) + ":" : std::string();
      setenv("PATH", (p + self.parent_path().string()).c_str(), 1);
    }
    InstallSignalHandlers();
    run.stop = &g_stop;
    run.terminal = !run.quiet && isatty(STDOUT_FILENO);
    return tune::RunCommand(run, std::cout, std::cerr);
  }
  if (*dashboard_cmd) {
    // Read-only: Ctrl-C may end it at once; a client gone mid-answer is no signal.
    signal(SIGPIPE, SIG_IGN);
    return tune::DashboardCommand(dashboard, std::cout, std::cerr);
  }
  if (*report_cmd) return tune::ReportCommand(report, std::cout, std::cerr);
  if (*validate_cmd) return tune::ValidateCommand(validate_path, std::cout, std::cerr);
  if (*best_cmd) return tune::BestCommand(query, std::cout, std::cerr);
  if (*trials_cmd) return tune::TrialsCommand(query, std::cout, std::cerr);
  if (*status_cmd) return tune::StatusCommand(query, std::cout, std::cerr);
  if (*importance_cmd) return tune::ImportanceCommand(query, std::cout, std::cerr);
  if (*export_tb_cmd) return tune::ExportTensorBoardCommand(query, export_out, std::cout, std::cerr);
  if (*export_ml_cmd) return tune::ExportMlflowCommand(query, export_uri, std::cout, std::cerr);
  if (*render_cmd) return tune::RenderCommand(render_path, render_trial, std::cout, std::cerr);
  if (*katib_cmd) return tune::ImportKatibCommand(import_path, import_out, std::cout, std::cerr);
  if (*replay_cmd) return tune::ReplayCommand(replay, std::cout, std::cerr);
  if (*migrate_cmd) return tune::MigrateCommand(migrate, std::cout, std::cerr);
  if (*cleanup_cmd) return tune::CleanupCommand(cleanup, std::cout, std::cerr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(OnTerminate);
  try {
    return Main(argc, argv);
  } catch (...) {
    // A command's own errors are sentences with their exit codes; this is
    // only what nobody expected (std::bad_alloc, a library's exception).
    std::cout.flush();
    std::cerr << "tune: internal error: " << tune::CurrentExceptionText() << "\n";
    return 1;
  }
}
