#include "tracking/proto_writer.h"

#include <cstring>

namespace tune::tracking {

void ProtoWriter::RawVarint(uint64_t v) {
  while (v >= 0x80) {
    bytes_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  bytes_.push_back(static_cast<char>(v));
}

void ProtoWriter::RawFixed64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void ProtoWriter::RawFixed32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void ProtoWriter::Tag(int field, int wire_type) {
  RawVarint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

ProtoWriter& ProtoWriter::Varint(int field, uint64_t value) {
  Tag(field, 0);
  RawVarint(value);
  return *this;
}

ProtoWriter& ProtoWriter::Double(int field, double value) {
  Tag(field, 1);
  RawFixed64(value);
  return *this;
}

ProtoWriter& ProtoWriter::Bytes(int field, std::string_view value) {
  Tag(field, 2);
  RawVarint(value.size());
  bytes_.append(value);
  return *this;
}

ProtoWriter& ProtoWriter::PackedDouble(int field, double value) {
  Tag(field, 2);
  RawVarint(8);
  RawFixed64(value);
  return *this;
}

ProtoWriter& ProtoWriter::PackedFloat(int field, float value) {
  Tag(field, 2);
  RawVarint(4);
  RawFixed32(value);
  return *this;
}

}  // namespace tune::tracking
