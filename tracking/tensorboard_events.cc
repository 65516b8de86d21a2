#include "tracking/tensorboard_events.h"

#include <type_traits>
#include <variant>

#include "core/utf8.h"
#include "tracking/proto_writer.h"

namespace tune::tracking {
namespace {

// Field numbers of the messages used, from TensorBoard's .proto files.
namespace event {
constexpr int kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5, kSessionLog = 7;
constexpr int kSessionLogStatus = 1, kSessionLogStart = 1;  // SessionLog
}
namespace summary {
constexpr int kValue = 1;                                        // Summary
constexpr int kTag = 1, kMetadata = 9, kTensor = 8;              // Summary.Value
constexpr int kPluginData = 1, kDataClass = 4;                   // SummaryMetadata
constexpr int kPluginName = 1, kContent = 2;                     // PluginData
constexpr int kDataClassScalar = 1;
}
namespace tensor {
constexpr int kDtype = 1, kShape = 2, kFloatVal = 5;  // TensorProto
constexpr int kShapeDim = 2;                           // TensorShapeProto
constexpr int kDtFloat = 1;
}
namespace hparams {
constexpr int kSessionStartInfo = 3, kSessionEndInfo = 4;  // HParamsPluginData (version 0: omitted)
constexpr int kHparams = 1, kGroupName = 4, kStartTimeSecs = 5;  // SessionStartInfo
constexpr int kMapKey = 1, kMapValue = 2;                        // its map entry
constexpr int kStatus = 1, kEndTimeSecs = 2;                     // SessionEndInfo
}
namespace value {  // google.protobuf.Value
constexpr int kNumber = 2, kString = 3, kBool = 4;
}

std::string WrapSummaryValue(double wall_time, int64_t step, const ProtoWriter& summary_value) {
  ProtoWriter summary;
  summary.Message(summary::kValue, summary_value);
  ProtoWriter e;
  e.Double(event::kWallTime, wall_time);
  if (step != 0) e.Varint(event::kStep, static_cast<uint64_t>(step));
  e.Message(event::kSummary, summary);
  return e.bytes();
}

std::string HParamsSummary(double wall_time, const std::string& tag, const ProtoWriter& plugin_data) {
  ProtoWriter pd;
  pd.Bytes(summary::kPluginName, "hparams").Bytes(summary::kContent, plugin_data.bytes());
  ProtoWriter metadata;
  metadata.Message(summary::kPluginData, pd);
  // The plugin's NULL_TENSOR: a float tensor of shape [0].
  ProtoWriter dim, shape, null_tensor;
  shape.Message(tensor::kShapeDim, dim);
  null_tensor.Varint(tensor::kDtype, tensor::kDtFloat).Message(tensor::kShape, shape);
  ProtoWriter v;
  v.Bytes(summary::kTag, tag).Message(summary::kMetadata, metadata).Message(summary::kTensor, null_tensor);
  return WrapSummaryValue(wall_time, 0, v);
}

ProtoWriter ParamAsValue(const ParamValue& p) {
  ProtoWriter v;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          v.Bytes(value::kString, ValidUtf8(x));
        } else if constexpr (std::is_same_v<T, bool>) {
          v.Varint(value::kBool, x ? 1 : 0);
        } else {
          v.Double(value::kNumber, static_cast<double>(x));
        }
      },
      p);
  return v;
}

}  // namespace

std::string FileVersionEvent(double wall_time) {
  ProtoWriter e;
  e.Double(event::kWallTime, wall_time).Bytes(event::kFileVersion, "brain.Event:2");
  return e.bytes();
}

std::string SessionLogStartEvent(double wall_time) {
  ProtoWriter log;
  log.Varint(event::kSessionLogStatus, event::kSessionLogStart);
  ProtoWriter e;
  e.Double(event::kWallTime, wall_time).Message(event::kSessionLog, log);
  return e.bytes();
}

std::string ScalarEvent(double wall_time, int64_t step, const std::string& tag, double v) {
  ProtoWriter pd;
  pd.Bytes(summary::kPluginName, "scalars");
  ProtoWriter metadata;
  metadata.Message(summary::kPluginData, pd).Varint(summary::kDataClass, summary::kDataClassScalar);
  ProtoWriter t;
  t.Varint(tensor::kDtype, tensor::kDtFloat).Message(tensor::kShape, ProtoWriter()).PackedFloat(tensor::kFloatVal, static_cast<float>(v));
  ProtoWriter sv;
  sv.Bytes(summary::kTag, ValidUtf8(tag)).Message(summary::kMetadata, metadata).Message(summary::kTensor, t);
  return WrapSummaryValue(wall_time, step, sv);
}

std::string SessionStartEvent(double wall_time, const ParamMap& params, const std::string& group_name) {
  ProtoWriter start;
  for (const auto& [name, p] : params) {
    ProtoWriter entry;
    entry.Bytes(hparams::kMapKey, ValidUtf8(name)).Message(hparams::kMapValue, ParamAsValue(p));
    start.Message(hparams::kHparams, entry);
  }
  if (!group_name.empty()) start.Bytes(hparams::kGroupName, ValidUtf8(group_name));
  start.Double(hparams::kStartTimeSecs, wall_time);
  ProtoWriter data;
  data.Message(hparams::kSessionStartInfo, start);
  return HParamsSummary(wall_time, "_hparams_/session_start_info", data);
}

std::string SessionEndEvent(double wall_time, SessionStatus status) {
  ProtoWriter end;
  end.Varint(hparams::kStatus, static_cast<uint64_t>(status)).Double(hparams::kEndTimeSecs, wall_time);
  ProtoWriter data;
  data.Message(hparams::kSessionEndInfo, end);
  return HParamsSummary(wall_time, "_hparams_/session_end_info", data);
}

}  // namespace tune::tracking
