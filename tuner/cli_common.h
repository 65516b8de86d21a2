// What the `tune` subcommands share (tuner/cli_commands.cc,
// tuner/run_command.cc, tuner/render_command.cc): the exit codes of
// docs/architecture.md (section 5), the one-line error, the database a query
// opens, and the check that a spec can run.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "core/status.h"
#include "spec/experiment_spec.h"
#include "storage/storage.h"
#include "trial_runner/trial_backend.h"

namespace tune::cli {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitInterrupted = 130;

// Writes "tune: <message>" as one line, whatever the message quotes (a
// path, a server's answer), and returns `code`.
int Fail(std::ostream& err, const Status& st, int code = kExitUsage);

// A query command's database: it must exist (queries never create one).
Result<std::unique_ptr<Storage>> OpenExisting(const std::optional<std::string>& db_path);

// The parts tune run builds must be buildable (an unknown sampler option, a
// trial bigger than this machine, a missing working directory). Returns the
// backend, which needs no seed; the sampler and scheduler are rebuilt once
// the experiment's seed is known.
Result<std::unique_ptr<TrialBackend>> CheckRunnable(const ExperimentSpec& spec);

// A number for people: %.6g.
std::string Fmt(double v);

}  // namespace tune::cli
