// The pieces of TensorBoard's file format that tune writes itself: CRC32C,
// the protobuf wire format and TFRecord framing, checked against published
// values and by reading the records back.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/e2e_util.h"
#include "tracking/crc32c.h"
#include "tracking/proto_writer.h"
#include "tracking/tensorboard_sink.h"
#include "tracking/tfrecord_writer.h"

namespace {

using namespace tune::tracking;
namespace fs = std::filesystem;

uint64_t Le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

TEST_CASE("Crc32c gives the Castagnoli check values", "[tracking]") {
  CHECK(Crc32c("") == 0u);
  CHECK(Crc32c("123456789") == 0xE3069283u);  // the CRC catalogue's check value
  CHECK(Crc32c(std::string(32, '\0')) == 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeros
  CHECK(Crc32c(std::string(32, '\xff')) == 0x62A8AB43u);  // RFC 3720 B.4: 32 bytes of 0xff
  // The mask is a rotation plus a constant: different CRCs stay different.
  CHECK(MaskCrc32c(0) == 0xA282EAD8u);
  CHECK(MaskCrc32c(1) == ((1u << 17) + 0xA282EAD8u));
}

TEST_CASE("ProtoWriter writes the protobuf wire format", "[tracking]") {
  // The protobuf documentation's example: field 1 = 150 is 08 96 01.
  CHECK(ProtoWriter().Varint(1, 150).bytes() == std::string("\x08\x96\x01", 3));
  // Field 2, string "testing": 12 07 74 65 73 74 69 6e 67.
  CHECK(ProtoWriter().Bytes(2, "testing").bytes() == std::string("\x12\x07testing", 9));
  // Field 1, double 1.0: tag 09, then the IEEE bits little endian.
  CHECK(ProtoWriter().Double(1, 1.0).bytes() == std::string("\x09\0\0\0\0\0\0\xf0\x3f", 9));
  // A packed repeated double holding one value: tag (6<<3)|2, length 8.
  CHECK(ProtoWriter().PackedDouble(6, 1.0).bytes() == std::string("\x32\x08\0\0\0\0\0\0\xf0\x3f", 10));
  CHECK(ProtoWriter().PackedFloat(5, 1.0f).bytes() == std::string("\x2a\x04\0\0\x80\x3f", 6));
  // A nested message is its bytes, length-delimited; negative int64 as ten bytes.
  ProtoWriter inner;
  inner.Varint(1, static_cast<uint64_t>(int64_t{-1}));
  CHECK(inner.bytes().size() == 11);
  CHECK(ProtoWriter().Message(3, inner).bytes() == std::string("\x1a\x0b", 2) + inner.bytes());
}

TEST_CASE("TfRecordWriter frames each record with its length and masked CRCs", "[tracking]") {
  tune::e2e::TempDir dir;
  const std::string path = (dir.path / "events.out.tfevents.test").string();
  TfRecordWriter w;
  REQUIRE(w.Open(path).ok());
  const std::vector<std::string> records = {"first", std::string(300, 'x'), ""};
  for (const auto& r : records) REQUIRE(w.Append(r).ok());
  w.Close();

  std::ifstream f(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t at = 0;
  for (const auto& r : records) {
    REQUIRE(at + 12 <= file.size());
    uint64_t len = Le(file, at, 8);
    CHECK(len == r.size());
    CHECK(Le(file, at + 8, 4) == MaskCrc32c(Crc32c(file.substr(at, 8))));
    CHECK(file.substr(at + 12, len) == r);
    CHECK(Le(file, at + 12 + len, 4) == MaskCrc32c(Crc32c(r)));
    at += 16 + len;
  }
  CHECK(at == file.size());

  // Never overwrites a file, not even its own.
  TfRecordWriter again;
  tune::Status st = again.Open(path);
  CHECK_FALSE(st.ok());
  CHECK(st.message().find(path) != std::string::npos);
  // A directory that does not exist is named.
  CHECK_FALSE(again.Open((dir.path / "no" / "file").string()).ok());
}

// The records of a TFRecord file, framing checked.
std::vector<std::string> ReadRecords(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  for (size_t at = 0; at < file.size();) {
    REQUIRE(at + 12 <= file.size());
    uint64_t len = Le(file, at, 8);
    REQUIRE(at + 16 + len <= file.size());
    out.push_back(file.substr(at + 12, len));
    at += 16 + len;
  }
  return out;
}

TEST_CASE("TensorBoardSink starts a trial's file again when its rank 0 restarts", "[tracking]") {
  tune::e2e::TempDir dir;
  TensorBoardSink sink(dir.path.string());
  tune::Trial t;
  t.id = 7;
  t.number = 3;
  t.state = tune::TrialState::kRunning;
  sink.OnAttemptStarted(t, "");
  auto report = [&](int64_t step, double loss) {
    tune::MetricReport r;
    r.step = step;
    r.time = 1700000000.0 + static_cast<double>(step);
    r.values["loss"] = loss;
    sink.OnReport(t, r);
  };
  for (int64_t step = 1; step <= 3; ++step) report(step, 90.0 + static_cast<double>(step));
  sink.OnAttemptRestarted(t);  // the replaced pod's three reports no longer count
  report(1, 0.5);
  report(2, 0.25);
  t.state = tune::TrialState::kCompleted;
  sink.OnTrialFinished(t, 1700000100.0);
  CHECK(sink.Finish().empty());

  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(TensorBoardSink::RunDir(dir.path.string(), 3))) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  // File version, SessionLog START, session start, the new pod's two
  // scalars, session end: none of the replaced pod's scalars.
  CHECK(ReadRecords(files[0]).size() == 6);
}

}  // namespace
