// TfRecordWriter: appends records to a TFRecord file, the container of
// TensorBoard's event files. Each record is
//   uint64 length (little endian), uint32 masked CRC32C of the length,
//   the bytes, uint32 masked CRC32C of the bytes.
// Every Append is flushed, so a reader (TensorBoard) sees whole records
// while the file grows, and a killed tuner leaves at most the record being
// written incomplete, which readers skip.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tune::tracking {

class TfRecordWriter {
 public:
  TfRecordWriter() = default;
  ~TfRecordWriter();
  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  // Creates `path` (which must not exist yet); the parent directory must.
  Status Open(const std::string& path);
  // Writes one record and flushes it. Internal error naming the file if the
  // write fails (a full disk); the file then holds whole records only up to
  // the previous one.
  Status Append(std::string_view record);
  void Close();
  bool is_open() const { return file_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace tune::tracking
