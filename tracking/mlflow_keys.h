// Which metric, param and tag keys an MLflow tracking server takes, by
// MLflow's own rules (mlflow/utils/validation.py, `_validate_metric_name`,
// `_validate_param_name`, `_validate_tag_name`): a key holds only letters,
// digits, '_', '-', '.', ' ', ':' and '/'; it is the same path after
// normalisation (no empty, "." or ".." part: no leading, trailing or double
// '/'), does not start with ".." and is at most 250 characters (the length
// of MLflow's key columns). A server that refuses a key refuses the whole
// runs/log-batch request it is in, so keys are checked before sending.
//
// Letters and digits outside ASCII ("\w" in MLflow's Python regex) are left
// to the server: MlflowClient::LogBatch sends a refused batch again key by
// key and names the keys the server refused.
#pragma once

#include <string>
#include <string_view>

namespace tune::tracking {

// Why MLflow refuses `key`, as a phrase ("has a character other than
// ..."); empty when it may be sent.
std::string MlflowKeyProblem(std::string_view key);

}  // namespace tune::tracking
