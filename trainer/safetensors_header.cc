#include "trainer/safetensors_header.h"

#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/json_integer.h"

namespace tune {
namespace {

using nlohmann::json;

struct DtypeSize {
  const char* name;
  size_t size;
};
constexpr DtypeSize kDtypes[] = {
    {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"I64", 8}, {"I32", 4}, {"U8", 1}, {"BOOL", 1},
};

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

size_t SafetensorsDtypeSize(std::string_view dtype) {
  for (const auto& d : kDtypes) {
    if (dtype == d.name) return d.size;
  }
  return 0;
}

Result<uint64_t> ParseSafetensorsHeaderLength(std::string_view first_bytes, uint64_t file_size,
                                              const std::string& origin) {
  if (first_bytes.size() < 8 || file_size < 8) {
    return Status::InvalidArgument(origin + ": truncated safetensors file (no header length)");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(first_bytes[i]);
  if (header_len > file_size - 8) {
    return Status::InvalidArgument(origin + ": header length " + std::to_string(header_len) +
                                   " exceeds the file size");
  }
  return header_len;
}

Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view header_json, uint64_t data_size,
                                                 const std::string& origin) {
  json h;
  try {
    h = json::parse(header_json);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(origin + ": header is not valid JSON: " + e.what());
  }
  if (!h.is_object()) return Status::InvalidArgument(origin + ": header is not a JSON object");
  SafetensorsHeader out;
  out.data_start = 8 + header_json.size();
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (v.is_object()) {
        for (auto m = v.begin(); m != v.end(); ++m) {
          if (m.value().is_string()) out.metadata[m.key()] = m.value().get<std::string>();
        }
      }
      continue;
    }
    SafetensorsEntry e;
    e.name = name;
    try {
      e.dtype = v.at("dtype").get<std::string>();
    } catch (const json::exception& ex) {
      return Status::InvalidArgument(origin + ": tensor '" + name + "': bad header entry: " + ex.what());
    }
    const auto shape = v.find("shape");
    if (shape == v.end() || !shape->is_array()) {
      return Status::InvalidArgument(origin + ": tensor '" + name + "': \"shape\" must be an array of integers");
    }
    for (const json& d : *shape) {
      std::optional<int64_t> dim = JsonInteger<int64_t>(d);
      if (!dim) {
        return Status::InvalidArgument(origin + ": tensor '" + name + "': \"shape\" must be an array of integers, got " +
                                       d.dump());
      }
      e.shape.push_back(*dim);
    }
    const auto offsets = v.find("data_offsets");
    std::optional<uint64_t> begin, end;
    if (offsets != v.end() && offsets->is_array() && offsets->size() == 2) {
      begin = JsonInteger<uint64_t>((*offsets)[0]);
      end = JsonInteger<uint64_t>((*offsets)[1]);
    }
    if (!begin || !end) {
      return Status::InvalidArgument(origin + ": tensor '" + name +
                                     "': \"data_offsets\" must be two non-negative integers [begin, end]");
    }
    e.begin = *begin;
    e.end = *end;
    e.element_size = SafetensorsDtypeSize(e.dtype);
    if (e.element_size == 0) {
      return Status::InvalidArgument(origin + ": tensor '" + name + "' has unsupported dtype " + e.dtype +
                                     " (supported: F32, F16, BF16, F64, I64, I32, U8, BOOL)");
    }
    bool empty = false;
    for (int64_t d : e.shape) {
      if (d < 0) return Status::InvalidArgument(origin + ": tensor '" + name + "' has a negative dimension");
      empty = empty || d == 0;
    }
    // The byte size; a shape whose size does not fit 64 bits cannot be in a file.
    uint64_t nbytes = empty ? 0 : e.element_size;
    for (int64_t d : e.shape) {
      if (empty) break;
      if (nbytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
        return Status::InvalidArgument(origin + ": tensor '" + name + "' " + e.dtype + ShapeString(e.shape) +
                                       " is too large (its byte size does not fit 64 bits)");
      }
      nbytes *= static_cast<uint64_t>(d);
    }
    if (e.end < e.begin || e.end - e.begin != nbytes || e.end > data_size) {
      return Status::InvalidArgument(origin + ": tensor '" + name + "' " + e.dtype + ShapeString(e.shape) +
                                     " has data_offsets [" + std::to_string(e.begin) + "," +
                                     std::to_string(e.end) + "] inconsistent with its size or the file");
    }
    out.tensors.push_back(std::move(e));
  }
  return out;
}

Result<SafetensorsHeader> ParseSafetensorsFile(std::string_view file_bytes, const std::string& origin) {
  TUNE_ASSIGN_OR_RETURN(uint64_t header_len, ParseSafetensorsHeaderLength(file_bytes, file_bytes.size(), origin));
  return ParseSafetensorsHeader(file_bytes.substr(8, header_len), file_bytes.size() - 8 - header_len, origin);
}

}  // namespace tune
