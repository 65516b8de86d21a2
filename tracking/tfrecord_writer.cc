#include "tracking/tfrecord_writer.h"

#include <cerrno>
#include <cstring>

#include "tracking/crc32c.h"

namespace tune::tracking {
namespace {

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

TfRecordWriter::~TfRecordWriter() { Close(); }

Status TfRecordWriter::Open(const std::string& path) {
  Close();
  file_ = std::fopen(path.c_str(), "wbx");  // x: never overwrite another writer's file
  if (!file_) return Status::Internal("cannot create " + path + ": " + std::strerror(errno));
  path_ = path;
  return Status::Ok();
}

Status TfRecordWriter::Append(std::string_view record) {
  if (!file_) return Status::FailedPrecondition("TfRecordWriter: not open");
  std::string buf;
  buf.reserve(record.size() + 16);
  std::string len;
  PutLe(&len, record.size(), 8);
  buf += len;
  PutLe(&buf, MaskCrc32c(Crc32c(len)), 4);
  buf.append(record);
  PutLe(&buf, MaskCrc32c(Crc32c(record)), 4);
  if (std::fwrite(buf.data(), 1, buf.size(), file_) != buf.size() || std::fflush(file_) != 0) {
    return Status::Internal("cannot write " + path_ + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

void TfRecordWriter::Close() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
}

}  // namespace tune::tracking
