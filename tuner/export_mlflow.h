// `tune export mlflow`: sends a stored experiment (finished or interrupted)
// to an MLflow tracking server afterwards, as `"tracking": {"mlflow": ...}`
// would have logged it during `tune run` (tracking/mlflow_runs.h), skipping
// whatever the server has already: runs are found by the ids stored in the
// database or by their tune.run_key tag, params and tags present with the
// same value are not sent again, metric points are compared with each
// metric's history by (step, timestamp). A second export sends nothing.
#pragma once

#include <ostream>
#include <string>

#include "core/status.h"
#include "spec/experiment_spec.h"
#include "storage/storage.h"
#include "tracking/mlflow_runs.h"

namespace tune {

// Where `spec`'s MLflow tracking goes: its tracking.mlflow section (an
// empty one if it has none), `tracking_uri` (if not empty) instead of the
// spec's URI, credentials from the environment (MlflowConnection).
// InvalidArgument when there is no tracking URI at all.
Result<tracking::MlflowTarget> MlflowTargetOf(const ExperimentSpec& spec, const std::string& tracking_uri = "");

// The objective (with several) and constraint metric names whose final
// values MLflow and TensorBoard log (tracking/final_metrics.h).
tracking::FinalMetricNames FinalMetricNamesOf(const ExperimentSpec& spec);

// experiment.json text as the database stores it: `text` with the
// user:password@ of tracking.mlflow.tracking_uri taken out (the run uses
// them; they are never stored). Unchanged when there are none; else the
// URI is replaced where it stands, or (if it is not found once as written)
// the document is written again with an indent of 2.
std::string SpecJsonWithoutCredentials(const std::string& text);

// Sends experiment `experiment` (empty: the newest) of `storage`. Its MLflow
// settings come from the stored experiment.json; `tracking_uri`, if not
// empty, overrides the URI. Unavailable when the server cannot be reached
// (what was sent stays; running it again goes on). Prints one line saying
// what it sent.
Status ExportMlflow(Storage& storage, const std::string& experiment, const std::string& tracking_uri,
                    std::ostream& out);

}  // namespace tune
