// TensorBoard's Event messages (tensorboard/compat/proto/event.proto,
// summary.proto and the HParams plugin's plugin_data.proto), serialized for
// a TfRecordWriter. Only what tune writes:
// - the file version record every event file starts with;
// - one scalar: a float32 tensor summary with the "scalars" plugin, as
//   TensorFlow 2's tf.summary.scalar writes a float32 value. float32, not
//   float64: TensorBoard's default reader (its Rust data server) shows no
//   float64 scalar at all, in the Scalars tab or as an HParams metric;
//   the exact values stay in the database;
// - the HParams plugin's session start (the trial's parameters) and session
//   end (its final status), which make the HParams tab list trials as rows.
// Their strings (tags, parameter names and values) are proto3 strings,
// which TensorBoard's reader refuses whole files over unless they are
// UTF-8: a byte sequence that is not is written as U+FFFD (ValidUtf8).
#pragma once

#include <cstdint>
#include <string>

#include "core/param.h"

namespace tune::tracking {

// The HParams plugin's session status (api.proto Status).
enum class SessionStatus { kUnknown = 0, kSuccess = 1, kFailure = 2, kRunning = 3 };

std::string FileVersionEvent(double wall_time);
// SessionLog START at step 0. The first one of a run starts it; on a later
// one TensorBoard drops the run's points loaded so far (a restart).
std::string SessionLogStartEvent(double wall_time);
std::string ScalarEvent(double wall_time, int64_t step, const std::string& tag, double value);
// `group_name` may be empty (TensorBoard then groups by run).
std::string SessionStartEvent(double wall_time, const ParamMap& hparams, const std::string& group_name);
std::string SessionEndEvent(double wall_time, SessionStatus status);

}  // namespace tune::tracking
