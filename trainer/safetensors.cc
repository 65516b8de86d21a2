#include "trainer/safetensors.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trainer/safetensors_header.h"

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

}  // namespace

namespace {

// The header of the safetensors file at `path`, checked against its size.
Result<SafetensorsHeader> ReadHeader(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open safetensors file " + path);
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  char len_bytes[8] = {};
  const size_t got = in.read(len_bytes, 8) ? 8 : 0;
  TUNE_ASSIGN_OR_RETURN(uint64_t header_len,
                        ParseSafetensorsHeaderLength(std::string_view(len_bytes, got), file_size, path));
  std::string header_text(header_len, '\0');
  if (!in.read(header_text.data(), static_cast<std::streamsize>(header_len))) {
    return Status::InvalidArgument(path + ": cannot read the header");
  }
  return ParseSafetensorsHeader(header_text, file_size - 8 - header_len, path);
}

}  // namespace

Result<TensorMap> ReadSafetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  TUNE_ASSIGN_OR_RETURN(SafetensorsHeader header, ReadHeader(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open safetensors file " + path);
  in.seekg(0, std::ios::end);
  const uint64_t data_size = static_cast<uint64_t>(in.tellg()) - header.data_start;
  in.seekg(static_cast<std::streamoff>(header.data_start));
  std::vector<char> data(data_size);
  if (data_size > 0 && !in.read(data.data(), static_cast<std::streamsize>(data_size))) {
    return Status::InvalidArgument(path + ": cannot read tensor data");
  }
  if (metadata != nullptr) {
    for (const auto& [key, value] : header.metadata) (*metadata)[key] = value;
  }
  TensorMap out;
  for (const SafetensorsEntry& e : header.tensors) {
    torch::ScalarType type;
    TUNE_CHECK(DtypeFromName(e.dtype, &type));  // safetensors_header accepts only these names
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(type));
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data.data() + e.begin, e.end - e.begin);
    out.emplace(e.name, std::move(t));
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
  TUNE_ASSIGN_OR_RETURN(ModelWeightsReader reader, ModelWeightsReader::Open(dir));
  TensorMap all;
  for (const std::string& name : reader.names()) {
    TUNE_ASSIGN_OR_RETURN(torch::Tensor t, reader.Read(name));
    all.emplace(name, std::move(t));
  }
  return all;
}

Result<ModelWeightsReader> ModelWeightsReader::Open(const std::string& dir) {
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::vector<std::string> shards;
  json j;
  if (fs::exists(single)) {
    shards.push_back(single.string());
  } else {
    if (!fs::exists(index)) {
      return Status::NotFound(dir + ": neither model.safetensors nor model.safetensors.index.json exists");
    }
    std::ifstream in(index);
    try {
      j = json::parse(in);
    } catch (const json::exception& e) {
      return Status::InvalidArgument(index.string() + ": not valid JSON: " + e.what());
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
      return Status::InvalidArgument(index.string() + ": missing object 'weight_map'");
    }
    std::set<std::string> names;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) {
        return Status::InvalidArgument(index.string() + ": weight_map." + it.key() + " is not a file name");
      }
      names.insert(it.value().get<std::string>());
    }
    for (const auto& shard : names) shards.push_back((fs::path(dir) / shard).string());
  }
  ModelWeightsReader reader;
  for (const std::string& path : shards) {
    TUNE_ASSIGN_OR_RETURN(SafetensorsHeader header, ReadHeader(path));
    for (const SafetensorsEntry& e : header.tensors) {
      Location at;
      at.file = reader.files_.size();
      at.offset = header.data_start + e.begin;
      at.bytes = e.end - e.begin;
      at.shape = e.shape;
      TUNE_CHECK(DtypeFromName(e.dtype, &at.dtype));  // safetensors_header accepts only these names
      reader.index_[e.name] = std::move(at);
    }
    reader.files_.push_back(path);
  }
  if (!j.is_null()) {
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!reader.index_.count(it.key())) {
        return Status::InvalidArgument(index.string() + ": tensor '" + it.key() + "' is listed but not in shard " +
                                       it.value().get<std::string>());
      }
    }
  }
  return reader;
}

std::vector<std::string> ModelWeightsReader::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, at] : index_) out.push_back(name);
  return out;
}

bool ModelWeightsReader::Describe(const std::string& name, std::vector<int64_t>* shape,
                                  torch::ScalarType* dtype) const {
  auto it = index_.find(name);
  if (it == index_.end()) return false;
  if (shape) *shape = it->second.shape;
  if (dtype) *dtype = it->second.dtype;
  return true;
}

Status ModelWeightsReader::ReadBytes(const Location& at, void* out, const std::string& name) const {
  if (at.bytes == 0) return Status::Ok();
  const std::string& path = files_[at.file];
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open safetensors file " + path);
  in.seekg(static_cast<std::streamoff>(at.offset));
  if (!in.read(static_cast<char*>(out), static_cast<std::streamsize>(at.bytes))) {
    return Status::InvalidArgument(path + ": cannot read the data of tensor '" + name + "'");
  }
  return Status::Ok();
}

Result<torch::Tensor> ModelWeightsReader::Read(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return Status::NotFound("no tensor '" + name + "' in the model weights");
  torch::Tensor t = torch::empty(it->second.shape, torch::TensorOptions().dtype(it->second.dtype));
  TUNE_RETURN_IF_ERROR(ReadBytes(it->second, t.data_ptr(), name));
  return t;
}

Status ModelWeightsReader::ReadInto(const std::string& name, torch::Tensor dst) const {
  auto it = index_.find(name);
  if (it == index_.end()) return Status::NotFound("no tensor '" + name + "' in the model weights");
  TUNE_CHECK(dst.device().is_cpu() && dst.sizes() == torch::IntArrayRef(it->second.shape));
  if (dst.scalar_type() == it->second.dtype && dst.is_contiguous()) {
    return ReadBytes(it->second, dst.data_ptr(), name);
  }
  TUNE_ASSIGN_OR_RETURN(torch::Tensor t, Read(name));
  dst.copy_(t);
  return Status::Ok();
}

}  // namespace tune
