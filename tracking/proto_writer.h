// ProtoWriter: the protocol buffers wire format, for the few messages tune
// writes itself (TensorBoard's Event and its summaries). Fields are appended
// in call order; a nested message is a ProtoWriter's bytes written as a
// length-delimited field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tune::tracking {

class ProtoWriter {
 public:
  // Wire type 0: int32, int64, uint64, bool and enum fields.
  ProtoWriter& Varint(int field, uint64_t value);
  // Wire type 1: a double field.
  ProtoWriter& Double(int field, double value);
  // Wire type 2: string, bytes and nested message fields.
  ProtoWriter& Bytes(int field, std::string_view value);
  ProtoWriter& Message(int field, const ProtoWriter& message) { return Bytes(field, message.bytes()); }
  // A packed repeated double field holding one value.
  ProtoWriter& PackedDouble(int field, double value);
  // A packed repeated float field holding one value.
  ProtoWriter& PackedFloat(int field, float value);

  const std::string& bytes() const { return bytes_; }

 private:
  void Tag(int field, int wire_type);
  void RawVarint(uint64_t v);
  void RawFixed64(double v);
  void RawFixed32(float v);
  std::string bytes_;
};

}  // namespace tune::tracking
