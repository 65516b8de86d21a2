// safetensors reader and writer (https://github.com/huggingface/safetensors):
// 8-byte little-endian header length, a JSON header mapping each tensor name
// to {dtype, shape, data_offsets}, then the raw little-endian data.
//
// Tensors come back on the CPU in the file's dtype (F32, F16, BF16, F64, I64,
// I32, U8, BOOL); other dtypes are an InvalidArgument error naming the tensor.
// Thread-compatible: no shared state.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/status.h"

namespace tune {

using TensorMap = std::map<std::string, torch::Tensor>;

// Reads one .safetensors file. Non-OK: NotFound (unreadable file) or
// InvalidArgument (truncated file, bad header, unsupported dtype; the message
// names the file and the tensor). `metadata`, when given, receives
// __metadata__.
Result<TensorMap> ReadSafetensors(const std::string& path,
                                  std::map<std::string, std::string>* metadata = nullptr);

// Writes `tensors` (made contiguous, CPU) in name order, atomically (a
// temporary file renamed over `path`). Non-OK: Internal on I/O failure,
// InvalidArgument on a dtype safetensors cannot name.
Status WriteSafetensors(const std::string& path, const TensorMap& tensors,
                        const std::map<std::string, std::string>& metadata = {});

// The weights of a Hugging Face model folder: model.safetensors, or every
// shard listed in model.safetensors.index.json ("weight_map").
Result<TensorMap> ReadModelWeights(const std::string& dir);

// A model folder's weights read one tensor at a time, as safetensors' own
// safe_open() does: Open() reads only the headers, each Read() only that
// tensor's bytes, so a loader holds the tensors it keeps and one more, never
// the file. Thread-compatible; each Read() opens the file again.
class ModelWeightsReader {
 public:
  // The folder's model.safetensors, or the shards of
  // model.safetensors.index.json (each listed tensor must be in its shard).
  // Non-OK as ReadModelWeights.
  static Result<ModelWeightsReader> Open(const std::string& dir);

  // Every tensor name, sorted.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  // The tensor's shape and dtype, from the header; false when absent.
  bool Describe(const std::string& name, std::vector<int64_t>* shape, torch::ScalarType* dtype) const;
  // The tensor on the CPU in the file's dtype. NotFound when absent;
  // InvalidArgument when the file is shorter than its header says.
  Result<torch::Tensor> Read(const std::string& name) const;
  // Reads the tensor into `dst` (a CPU tensor of the same shape, any float
  // dtype when the tensor is a float one): straight into dst's memory when
  // the dtypes match and dst is contiguous, else through one temporary.
  Status ReadInto(const std::string& name, torch::Tensor dst) const;

 private:
  struct Location {
    size_t file;                // index in files_
    uint64_t offset, bytes;     // absolute file offset and length
    std::vector<int64_t> shape;
    torch::ScalarType dtype;
  };
  Status ReadBytes(const Location& at, void* out, const std::string& name) const;

  std::vector<std::string> files_;
  std::map<std::string, Location> index_;
};

}  // namespace tune
