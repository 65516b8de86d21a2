#include "trainer/safetensors.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tune {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct DtypeName {
  const char* name;
  torch::ScalarType type;
};
constexpr DtypeName kDtypes[] = {
    {"F32", torch::kFloat32}, {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
    {"F64", torch::kFloat64}, {"I64", torch::kInt64},   {"I32", torch::kInt32},
    {"U8", torch::kUInt8},    {"BOOL", torch::kBool},
};

bool DtypeFromName(const std::string& name, torch::ScalarType* out) {
  for (const auto& d : kDtypes) {
    if (name == d.name) {
      *out = d.type;
      return true;
    }
  }
  return false;
}

const char* NameFromDtype(torch::ScalarType t) {
  for (const auto& d : kDtypes) {
    if (d.type == t) return d.name;
  }
  return nullptr;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

Result<TensorMap> ReadSafetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open safetensors file " + path);
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint8_t len_bytes[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(len_bytes), 8)) {
    return Status::InvalidArgument(path + ": truncated safetensors file (no header length)");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8) {
    return Status::InvalidArgument(path + ": header length " + std::to_string(header_len) +
                                   " exceeds the file size");
  }
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  json h;
  try {
    h = json::parse(header);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(path + ": header is not valid JSON: " + e.what());
  }
  if (!h.is_object()) return Status::InvalidArgument(path + ": header is not a JSON object");
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = file_size - data_start;
  std::vector<char> data(data_size);
  if (data_size > 0 && !in.read(data.data(), static_cast<std::streamsize>(data_size))) {
    return Status::InvalidArgument(path + ": cannot read tensor data");
  }
  TensorMap out;
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (metadata != nullptr && v.is_object()) {
        for (auto m = v.begin(); m != v.end(); ++m) {
          if (m.value().is_string()) (*metadata)[m.key()] = m.value().get<std::string>();
        }
      }
      continue;
    }
    std::string dtype_name;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
    try {
      dtype_name = v.at("dtype").get<std::string>();
      shape = v.at("shape").get<std::vector<int64_t>>();
      begin = v.at("data_offsets").at(0).get<uint64_t>();
      end = v.at("data_offsets").at(1).get<uint64_t>();
    } catch (const json::exception& e) {
      return Status::InvalidArgument(path + ": tensor '" + name + "': bad header entry: " + e.what());
    }
    torch::ScalarType type;
    if (!DtypeFromName(dtype_name, &type)) {
      return Status::InvalidArgument(path + ": tensor '" + name + "' has unsupported dtype " + dtype_name +
                                     " (supported: F32, F16, BF16, F64, I64, I32, U8, BOOL)");
    }
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0) return Status::InvalidArgument(path + ": tensor '" + name + "' has a negative dimension");
      numel *= d;
    }
    const uint64_t nbytes = static_cast<uint64_t>(numel) * torch::elementSize(type);
    if (end < begin || end - begin != nbytes || end > data_size) {
      return Status::InvalidArgument(path + ": tensor '" + name + "' " + dtype_name + ShapeString(shape) +
                                     " has data_offsets [" + std::to_string(begin) + "," + std::to_string(end) +
                                     "] inconsistent with its size or the file");
    }
    torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(type));
    if (nbytes > 0) std::memcpy(t.data_ptr(), data.data() + begin, nbytes);
    out.emplace(name, std::move(t));
  }
  return out;
}

Status WriteSafetensors(const std::string& path, const TensorMap& tensors,
                        const std::map<std::string, std::string>& metadata) {
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::vector<torch::Tensor> parts;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const char* dtype = NameFromDtype(tensor.scalar_type());
    if (dtype == nullptr) {
      return Status::InvalidArgument("cannot write tensor '" + name + "': dtype " +
                                     std::string(c10::toString(tensor.scalar_type())) + " has no safetensors name");
    }
    torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    const uint64_t nbytes = t.numel() * t.element_size();
    h[name] = {{"dtype", dtype}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    parts.push_back(t);
  }
  std::string header = h.dump();
  while ((header.size() + 8) % 8 != 0) header.push_back(' ');  // align data to 8 bytes
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::Internal("cannot write " + tmp);
    uint64_t n = header.size();
    char len_bytes[8];
    for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    out.write(len_bytes, 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto& t : parts) {
      out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.numel() * t.element_size()));
    }
    out.flush();
    if (!out) return Status::Internal("write failed for " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::Internal("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

Result<TensorMap> ReadModelWeights(const std::string& dir) {
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(single)) return ReadSafetensors(single.string());
  if (!fs::exists(index)) {
    return Status::NotFound(dir + ": neither model.safetensors nor model.safetensors.index.json exists");
  }
  std::ifstream in(index);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(index.string() + ": not valid JSON: " + e.what());
  }
  if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
    return Status::InvalidArgument(index.string() + ": missing object 'weight_map'");
  }
  std::set<std::string> shards;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string()) return Status::InvalidArgument(index.string() + ": weight_map." + it.key() + " is not a file name");
    shards.insert(it.value().get<std::string>());
  }
  TensorMap all;
  for (const auto& shard : shards) {
    TUNE_ASSIGN_OR_RETURN(TensorMap part, ReadSafetensors((fs::path(dir) / shard).string()));
    for (auto& [name, t] : part) all[name] = std::move(t);
  }
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!all.count(it.key())) {
      return Status::InvalidArgument(index.string() + ": tensor '" + it.key() + "' is listed but not in shard " +
                                     it.value().get<std::string>());
    }
  }
  return all;
}

}  // namespace tune
