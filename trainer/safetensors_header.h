// The safetensors header (https://github.com/huggingface/safetensors), read
// without libtorch: 8-byte little-endian header length, then a JSON object
// mapping each tensor name to {dtype, shape, data_offsets} (and an optional
// "__metadata__" object of strings), then the data section.
//
// Everything a reader needs to trust before it copies bytes is checked here:
// the header fits the file, every dtype is supported, no dimension is
// negative, the byte size of a shape does not overflow 64 bits, and each
// tensor's data_offsets lie inside the data section and match its size.
// Thread-compatible: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tune {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;            // one of the supported names, e.g. "F32"
  size_t element_size = 0;      // bytes per element of dtype
  std::vector<int64_t> shape;   // every dimension >= 0
  uint64_t begin = 0, end = 0;  // byte range in the data section; end - begin = numel * element_size
};

struct SafetensorsHeader {
  uint64_t data_start = 0;  // file offset of the data section: 8 + header length
  std::vector<SafetensorsEntry> tensors;        // in name order
  std::map<std::string, std::string> metadata;  // string members of __metadata__
};

// Bytes per element of a supported dtype name (F32, F16, BF16, F64, I64, I32,
// U8, BOOL), or 0 for any other name.
size_t SafetensorsDtypeSize(std::string_view dtype);

// The header length from the file's first 8 bytes. `file_size` is the whole
// file's size. InvalidArgument (naming `origin`) if fewer than 8 bytes are
// given or the length runs past the end of the file.
Result<uint64_t> ParseSafetensorsHeaderLength(std::string_view first_bytes, uint64_t file_size,
                                              const std::string& origin);

// Parses the header JSON (the `header_length` bytes after the first 8) and
// checks each entry against a data section of `data_size` bytes.
// InvalidArgument naming `origin` and the tensor on the first problem.
Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view header_json, uint64_t data_size,
                                                 const std::string& origin);

// Both steps on a whole file held in memory.
Result<SafetensorsHeader> ParseSafetensorsFile(std::string_view file_bytes, const std::string& origin);

}  // namespace tune
