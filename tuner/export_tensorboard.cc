#include "tuner/export_tensorboard.h"

#include <filesystem>

#include "tracking/tensorboard_sink.h"
#include "tuner/export_mlflow.h"
#include "tuner/report.h"

namespace tune {

namespace fs = std::filesystem;

Status ExportTensorBoard(Storage& storage, const std::string& experiment, const std::string& out_dir,
                         std::ostream& out) {
  TUNE_ASSIGN_OR_RETURN(ExperimentRecord e, ResolveExperiment(storage, experiment));
  const fs::path root = fs::path(out_dir) / e.name;
  std::error_code ec;
  if (fs::exists(root, ec)) {
    return Status::FailedPrecondition(root.string() +
                                      " exists already; export into another --out directory, or remove it first");
  }
  TUNE_ASSIGN_OR_RETURN(std::vector<TrialRecord> records, storage.ListTrialRecords(e.id));
  // Several objectives or constraints: the final values, as `tune run` logs them.
  tracking::FinalMetricNames final_metrics;
  if (auto spec = ParseExperimentSpec(e.spec_json, "experiment '" + e.name + "' (as stored)"); spec.ok())
    final_metrics = FinalMetricNamesOf(*spec);
  // Write beside the target, then rename: a failed export leaves nothing.
  // A whole directory of event files, so not WriteFileAtomically
  // (core/atomic_write.h), which puts one file in place.
  fs::create_directories(root.parent_path().empty() ? fs::path(".") : root.parent_path(), ec);
  if (ec) return Status::Internal("cannot create " + root.parent_path().string() + ": " + ec.message());
  const fs::path partial = root.string() + ".partial";
  fs::remove_all(partial, ec);
  int written = 0;
  size_t points = 0;
  Status st = Status::Ok();
  for (const TrialRecord& rec : records) {
    if (!rec.started_at) continue;
    auto reports = storage.ListTrialReports(rec.trial.id);
    if (!reports.ok()) {
      st = reports.status();
      break;
    }
    std::vector<MetricReport> current;
    for (const StoredReport& r : *reports) {
      // Earlier attempts and excluded reports (after max_t, a replaced pod's)
      // no longer count; the live files never got them either.
      if (r.attempt != rec.trial.attempt || !r.excluded.empty()) continue;
      current.push_back(r.report);
      points += r.report.values.size();
    }
    st = tracking::WriteTrialEvents(tracking::TensorBoardSink::RunDir(partial.string(), rec.trial.number),
                                    rec.trial, *rec.started_at, current, rec.ended_at, final_metrics);
    if (!st.ok()) break;
    ++written;
  }
  if (st.ok()) {
    fs::create_directories(partial, ec);  // an experiment with no started trial: an empty directory
    fs::rename(partial, root, ec);
    if (ec) st = Status::Internal("cannot rename " + partial.string() + " to " + root.string() + ": " + ec.message());
  }
  if (!st.ok()) {
    fs::remove_all(partial, ec);
    return st;
  }
  out << "tune: wrote TensorBoard event files of " << written << " trial" << (written == 1 ? "" : "s") << " ("
      << points << " scalar point" << (points == 1 ? "" : "s") << ") of experiment '" << e.name << "' to "
      << root.string() << "  (view: tensorboard --logdir " << root.string() << ")\n";
  return Status::Ok();
}

}  // namespace tune
