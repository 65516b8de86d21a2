// The `tracking` section: outside trackers that get every trial.
#include "spec/experiment_spec.h"
#include "spec/experiment_spec_reader.h"
#include "tracking/mlflow_keys.h"
#include "tracking/mlflow_uri.h"

namespace tune {
namespace spec_internal {
namespace {

// `tracking.mlflow`: {"tracking_uri", "experiment_name", "tags"}, every key
// optional (the URI may come from MLFLOW_TRACKING_URI when tune runs).
Status ParseMlflow(const Reader& r, const Json& v, const std::string& path, TrackingSpec::Mlflow* out) {
  TUNE_ASSIGN_OR_RETURN(ObjectReader m, ObjectReader::Make(r, v, path));
  TUNE_RETURN_IF_ERROR(m.AllowOnly({"tracking_uri", "experiment_name", "tags"}));
  TUNE_RETURN_IF_ERROR(m.String("tracking_uri", &out->tracking_uri));
  if (m.Has("tracking_uri")) {
    // What `tune run` connects to, checked whole (scheme, host, port 1 to
    // 65535); quoted with any user:password@ masked.
    Result<tracking::MlflowUri> uri = tracking::ParseMlflowUri(out->tracking_uri);
    if (!uri.ok()) {
      return r.Fail(m.PathOf("tracking_uri"),
                    uri.status().message() +
                        ", e.g. \"http://127.0.0.1:5000\" (leave the key out to use MLFLOW_TRACKING_URI)",
                    Quote(tracking::MaskCredentials(out->tracking_uri)));
    }
  }
  TUNE_RETURN_IF_ERROR(m.String("experiment_name", &out->experiment_name));
  if (m.Has("experiment_name")) {
    TUNE_RETURN_IF_ERROR(m.Expect(!out->experiment_name.empty() && out->experiment_name.size() <= 500,
                                  "experiment_name",
                                  "a non-empty name of at most 500 characters (leave the key out to use the "
                                  "experiment's name)"));
  }
  TUNE_RETURN_IF_ERROR(m.StringMap("tags", &out->tags));
  for (const auto& [key, value] : out->tags) {
    // MLflow's limits on tag keys (250) and values (8000).
    if (key.empty() || key.size() > 250 || value.size() > 8000 || key.rfind("mlflow.", 0) == 0) {
      return r.Fail(JoinPath(m.PathOf("tags"), key),
                    "a tag of 1 to 250 characters not starting with \"mlflow.\" (MLflow's own), with a value of at "
                    "most 8000",
                    Quote(value));
    }
    // The parent run is created with these tags: one MLflow refuses would
    // stop all logging.
    if (std::string why = tracking::MlflowKeyProblem(key); !why.empty()) {
      return r.Fail(JoinPath(m.PathOf("tags"), key),
                    "a tag key MLflow takes (letters, digits, '_', '-', '.', ' ', ':' and '/', a normalised path); "
                    "this one " + why,
                    Quote(value));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ParseTracking(const Reader& r, const Json& v, TrackingSpec* out) {
  TUNE_ASSIGN_OR_RETURN(ObjectReader t, ObjectReader::Make(r, v, "tracking"));
  TUNE_RETURN_IF_ERROR(t.AllowOnly({"tensorboard", "mlflow"}));
  if (const Json* tb = t.Find("tensorboard")) {
    const std::string expected = "true, false or a directory for the event files";
    if (tb->is_boolean()) {
      if (tb->get<bool>()) out->tensorboard_dir = "";
    } else if (tb->is_string() && !tb->get<std::string>().empty()) {
      out->tensorboard_dir = tb->get<std::string>();
    } else {
      return r.FailValue(t.PathOf("tensorboard"), expected, *tb);
    }
  }
  if (const Json* ml = t.Find("mlflow")) {
    if (ml->is_boolean()) {
      if (ml->get<bool>()) out->mlflow.emplace();
    } else if (ml->is_object()) {
      TrackingSpec::Mlflow m;
      TUNE_RETURN_IF_ERROR(ParseMlflow(r, *ml, t.PathOf("mlflow"), &m));
      out->mlflow = std::move(m);
    } else {
      return r.FailValue(t.PathOf("mlflow"),
                         "an object {\"tracking_uri\", \"experiment_name\", \"tags\"}, true or false", *ml);
    }
  }
  return Status::Ok();
}

}  // namespace spec_internal
}  // namespace tune
